-- migration: additive
-- Tenancy: tenants with their leased-run budget, and API keys.
--
-- SQL Server 2016 SP1 or later, or Azure SQL Database (THROW needs 2012; SESSION_CONTEXT
-- and row-level security 2016; CREATE OR ALTER 2016 SP1).
-- Types mirror migrations/sqlite (see its 000001 for the mapping). There is no
-- RowVersionCounter here: SQL Server stamps rowversion columns itself.
-- Every nvarchar identifier column compares case-sensitively, as SQLite's BINARY collation
-- does (DESIGN.md section 3): COLLATE Latin1_General_100_BIN2. Columns that take part in one
-- foreign key must share a collation (Msg 1757), so every TenantId and ProjectId is BIN2.
-- SQL Server still ignores trailing spaces when it compares strings and in unique keys,
-- whatever the collation: the service validates identifiers before they get here.
-- Times are datetimeoffset(3): the service truncates to milliseconds in UTC anyway.
--
-- golang-migrate sends the file as one batch without a transaction; XACT_ABORT plus an
-- explicit transaction make it all-or-nothing.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE [dbo].[Tenants] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [MaxLeasedRuns] int NOT NULL CONSTRAINT [DF_Tenants_MaxLeasedRuns] DEFAULT (1000),
    [CreatedAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_Tenants] PRIMARY KEY CLUSTERED ([TenantId]),
    CONSTRAINT [CK_Tenants_MaxLeasedRuns] CHECK ([MaxLeasedRuns] >= 0)
);

-- SecretHash is the SHA-256 of the key's secret; the key itself is never stored.
-- Role is BIN2 too, so the CHECK is as case-sensitive as SQLite's.
CREATE TABLE [dbo].[ApiKeys] (
    [KeyId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Role] nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [SecretHash] varbinary(32) NOT NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    [RevokedAt] datetimeoffset(3) NULL,
    CONSTRAINT [PK_ApiKeys] PRIMARY KEY CLUSTERED ([KeyId]),
    CONSTRAINT [FK_ApiKeys_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId]),
    CONSTRAINT [CK_ApiKeys_Role] CHECK ([Role] IN (N'runtime', N'admin'))
);
CREATE INDEX [IX_ApiKeys_Tenant] ON [dbo].[ApiKeys] ([TenantId], [CreatedAt]);

COMMIT TRANSACTION;
