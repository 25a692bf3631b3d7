-- migration: breaking
-- ReleaseOwners is filled from LoadedReleases once; a binary before it registering releases would leave owners unrecorded.
-- The ledger's records (issues 8 and 11, DESIGN.md section 5):
--   - DecisionRequests.PriorPhase: the phase a decision request found its attempt in, so
--     the answer (or the expiry) puts it back (a declared addition, listed with its reason
--     in internal/schema/declared_additions.go). NULL on rows written before this version:
--     closing such a decision leaves the phase alone.
--   - ReleaseOwners: release ids are one global namespace, owned by the tenant that
--     registered the first version under an id. Keyed by ReleaseId alone (the exception to
--     "TenantId leads every key": the key is the global id). Existing releases are backfilled:
--     an id registered by several tenants before this version (the bug this fixes) goes to
--     the earliest VerifiedAt, then the smallest TenantId; the others keep their rows and can
--     still change them, but register no new version under that id.
--   - PurgeBacklog: runs retention has deleted whose attempts (and their checkpoints, calls,
--     decisions, delegations) are still being deleted in bounded chunks; a purge interrupted
--     between the two resumes from it.
-- Row-level security (EXEC'd: ALTER SECURITY POLICY must open its batch): PurgeBacklog is
-- filtered and blocked like every tenant table. ReleaseOwners gets BLOCK predicates only
-- (AFTER INSERT, BEFORE/AFTER UPDATE, BEFORE DELETE): a tenant writes only its own rows, but
-- the ownership check must see another tenant's row to refuse its id, so no FILTER; the
-- service reads the table only through releases' ownership statement, which returns whether
-- the caller owns the id, never another tenant's TenantId.
-- The backfill reads every tenant's LoadedReleases, so it sets the documented maintenance
-- bypass (migrations run without session context) and clears it at the end, so the
-- migration's connection does not keep it.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = 1;

ALTER TABLE [dbo].[DecisionRequests] ADD [PriorPhase] int NULL;

CREATE TABLE [dbo].[ReleaseOwners] (
    [ReleaseId] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_ReleaseOwners] PRIMARY KEY CLUSTERED ([ReleaseId]),
    CONSTRAINT [FK_ReleaseOwners_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);

INSERT INTO [dbo].[ReleaseOwners] ([ReleaseId], [TenantId], [CreatedAt])
SELECT o.[ReleaseId], o.[TenantId], CAST(o.[VerifiedAt] AS datetimeoffset(3))
FROM (
    SELECT r.[ReleaseId], r.[TenantId], r.[VerifiedAt],
        ROW_NUMBER() OVER (PARTITION BY r.[ReleaseId] ORDER BY r.[VerifiedAt], r.[TenantId]) AS [n]
    FROM [dbo].[LoadedReleases] AS r
) AS o
WHERE o.[n] = 1
OPTION (MAXDOP 1);

CREATE TABLE [dbo].[PurgeBacklog] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [RunId] uniqueidentifier NOT NULL,
    [PurgedAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_PurgeBacklog] PRIMARY KEY CLUSTERED ([TenantId], [RunId]),
    CONSTRAINT [FK_PurgeBacklog_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);

EXEC(N'ALTER SECURITY POLICY [dbo].[TenantPolicy]
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ReleaseOwners] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ReleaseOwners] BEFORE UPDATE,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ReleaseOwners] AFTER UPDATE,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[ReleaseOwners] BEFORE DELETE,
    ADD FILTER PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[PurgeBacklog],
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[PurgeBacklog] AFTER INSERT,
    ADD BLOCK PREDICATE [dbo].[fn_TenantAccess]([TenantId]) ON [dbo].[PurgeBacklog] AFTER UPDATE;');

EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = NULL;

COMMIT TRANSACTION;
