-- migration: additive
-- Tenancy: tenants with their leased-run budget, API keys, and the emulated rowversion.
-- Type mapping (SQL Server -> SQLite) for every migration in this folder:
--   uniqueidentifier  -> TEXT, lowercase canonical UUID
--   nvarchar(n), max  -> TEXT (SQLite compares with BINARY collation: case-sensitive, like BIN2)
--   datetimeoffset    -> DATETIME holding fixed-width UTC text 2006-01-02T15:04:05.000Z, which sorts as time
--   int, bigint, bit  -> INTEGER
--   rowversion        -> INTEGER stamped from RowVersionCounter (see below)

-- One database-wide counter emulates SQL Server's rowversion. Every insert and update of a
-- versioned table sets Version = (SELECT Value + 1 FROM RowVersionCounter); an AFTER trigger
-- then advances the counter, and a BEFORE trigger refuses a write whose Version did not grow.
CREATE TABLE RowVersionCounter (
    Id INTEGER NOT NULL PRIMARY KEY CHECK (Id = 1),
    Value INTEGER NOT NULL
);
INSERT INTO RowVersionCounter (Id, Value) VALUES (1, 0);

CREATE TABLE Tenants (
    TenantId TEXT NOT NULL PRIMARY KEY,
    MaxLeasedRuns INTEGER NOT NULL DEFAULT 1000 CHECK (MaxLeasedRuns >= 0),
    CreatedAt DATETIME NOT NULL
);

CREATE TABLE ApiKeys (
    KeyId TEXT NOT NULL PRIMARY KEY,
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    Role TEXT NOT NULL CHECK (Role IN ('runtime', 'admin')),
    SecretHash BLOB NOT NULL,
    CreatedAt DATETIME NOT NULL,
    RevokedAt DATETIME NULL
);
CREATE INDEX IX_ApiKeys_Tenant ON ApiKeys (TenantId, CreatedAt);
