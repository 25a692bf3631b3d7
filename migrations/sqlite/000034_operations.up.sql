-- migration: additive
-- Bulk operations (DESIGN.md 5b): one row per operation with its cursor and lease (any
-- replica takes an operation whose lease has passed, with a conditional write), and the run
-- ids it matched, fixed when it was created, in Seq order (the cursor is the last Seq done).
-- RequestKey is the idempotency key, or the digest of the body: an exact repeat finds it.
CREATE TABLE Operations (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    OperationId TEXT NOT NULL,
    RequestKey TEXT NOT NULL,
    BodyDigest TEXT NOT NULL,
    Action TEXT NOT NULL CHECK (Action IN ('cancel', 'continue')),
    Reason TEXT NULL,
    State TEXT NOT NULL CHECK (State IN ('running', 'succeeded')),
    Matched INTEGER NOT NULL,
    Cursor INTEGER NOT NULL,
    Cancelled INTEGER NOT NULL,
    CancelRequested INTEGER NOT NULL,
    Continued INTEGER NOT NULL,
    SkippedEnded INTEGER NOT NULL,
    SkippedNotEnded INTEGER NOT NULL,
    SkippedExhausted INTEGER NOT NULL,
    SkippedNotFound INTEGER NOT NULL,
    SkippedContinued INTEGER NOT NULL,
    Holder TEXT NULL,
    LeaseUntil DATETIME NULL,
    CreatedAt DATETIME NOT NULL,
    CreatedBy TEXT NOT NULL,
    FinishedAt DATETIME NULL,
    PRIMARY KEY (TenantId, OperationId)
);

CREATE UNIQUE INDEX UX_Operations_Request ON Operations (TenantId, RequestKey);
CREATE INDEX IX_Operations_Pending ON Operations (LeaseUntil) WHERE State = 'running';

CREATE TABLE OperationRuns (
    TenantId TEXT NOT NULL,
    OperationId TEXT NOT NULL,
    Seq INTEGER NOT NULL,
    RunId TEXT NOT NULL,
    Result TEXT NULL,
    PRIMARY KEY (TenantId, OperationId, Seq),
    FOREIGN KEY (TenantId, OperationId) REFERENCES Operations (TenantId, OperationId)
);
