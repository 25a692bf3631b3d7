-- migration: additive
-- Retention (DESIGN.md section 5): purging a run chain keeps a tombstone of each purged
-- idempotency key, so an event still never runs twice.
CREATE TABLE IdempotencyTombstones (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    IdempotencyKey TEXT NOT NULL,
    RunId TEXT NOT NULL,
    PurgedAt DATETIME NOT NULL,
    PRIMARY KEY (TenantId, IdempotencyKey)
);
