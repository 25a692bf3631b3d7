-- migration: additive
-- Decisions belong to the run, and a run can park (issue 28; see migrations/mssql 000028).
CREATE TABLE RunWaits (
    TenantId TEXT NOT NULL,
    RunId TEXT NOT NULL,
    TargetKind INTEGER NOT NULL CHECK (TargetKind IN (0, 1)),
    TargetId TEXT NOT NULL,
    CreatedAt DATETIME NOT NULL,
    CONSTRAINT PK_RunWaits PRIMARY KEY (TenantId, RunId, TargetKind, TargetId)
);
CREATE INDEX IX_RunWaits_Target ON RunWaits (TenantId, TargetKind, TargetId);
ALTER TABLE DecisionRequests ADD RunId TEXT NULL;
ALTER TABLE DecisionRequests ADD IdempotencyKey TEXT NULL;
ALTER TABLE DecisionRequests ADD RequestHash TEXT NULL;
