-- migration: additive
-- Seed 000's task run lock, keyed by tenant. No agents table here, so no foreign key.
CREATE TABLE TaskRunLocks (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    AgentId TEXT NOT NULL,
    TaskId TEXT NOT NULL,
    HolderId TEXT NOT NULL,
    HeldUntil DATETIME NOT NULL,
    CreatedAt DATETIME NOT NULL,
    UpdatedAt DATETIME NOT NULL,
    PRIMARY KEY (TenantId, AgentId, TaskId)
);
