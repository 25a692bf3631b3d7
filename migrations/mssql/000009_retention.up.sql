-- migration: additive
-- Retention (DESIGN.md section 5): purging a run chain keeps a tombstone of each purged
-- idempotency key, so an event still never runs twice. One CREATE TABLE: a single
-- statement needs no explicit transaction. Row-level security for this table is added to
-- the policy in 000010 (ALTER SECURITY POLICY must be first in its batch).
CREATE TABLE [dbo].[IdempotencyTombstones] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [IdempotencyKey] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [RunId] uniqueidentifier NOT NULL,
    [PurgedAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_IdempotencyTombstones] PRIMARY KEY CLUSTERED ([TenantId], [IdempotencyKey]),
    CONSTRAINT [FK_IdempotencyTombstones_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);
