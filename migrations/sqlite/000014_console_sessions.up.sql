-- migration: additive
-- Console sessions (DESIGN.md section 6): server-side, so every process sees them and
-- signing out ends them everywhere. Only the SHA-256 of the cookie's secret is stored.
CREATE TABLE ConsoleSessions (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    SessionHash BLOB NOT NULL,
    KeyId TEXT NOT NULL,
    CreatedAt DATETIME NOT NULL,
    ExpiresAt DATETIME NOT NULL,
    PRIMARY KEY (TenantId, SessionHash)
);
CREATE INDEX IX_ConsoleSessions_Expires ON ConsoleSessions (TenantId, ExpiresAt);
