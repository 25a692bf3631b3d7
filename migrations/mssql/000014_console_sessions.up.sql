-- migration: additive
-- Console sessions (DESIGN.md section 6): the admin console signs in with an admin key and
-- keeps a server-side session here, so every replica sees it and signing out ends it
-- everywhere. The cookie holds the tenant and a random secret; only the secret's SHA-256 is
-- stored. The key leads with TenantId like every tenant table; a session is read in its
-- tenant's scope. One CREATE TABLE and one CREATE INDEX in a transaction; row-level security
-- for this table is added to the policy in 000015 (ALTER SECURITY POLICY first in its batch).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE [dbo].[ConsoleSessions] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [SessionHash] binary(32) NOT NULL,
    [KeyId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    [ExpiresAt] datetimeoffset(3) NOT NULL,
    CONSTRAINT [PK_ConsoleSessions] PRIMARY KEY CLUSTERED ([TenantId], [SessionHash]),
    CONSTRAINT [FK_ConsoleSessions_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);
-- Sign-in deletes a few expired sessions of its tenant each time: a seek, never a scan.
CREATE INDEX [IX_ConsoleSessions_Expires] ON [dbo].[ConsoleSessions] ([TenantId], [ExpiresAt]);

COMMIT TRANSACTION;
