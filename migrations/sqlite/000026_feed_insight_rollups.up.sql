-- migration: additive
-- Projections of the committed change feed (DESIGN.md 5a, 5b; internal/feed): the position
-- and lease of each projector, and the insights roll-ups the first projector maintains.
--
-- FeedProjectors is not tenant data: one row per projector (keyed by its name), holding the
-- last Version it applied (Position), which replica holds its lease and until when, and when
-- it last reached the committed end of the feed (CaughtUpAt, the watermark answers report).
CREATE TABLE FeedProjectors (
    Name TEXT NOT NULL,
    Position INTEGER NOT NULL,
    Holder TEXT NULL,
    LeaseUntil DATETIME NULL,
    CaughtUpAt DATETIME NULL,
    UpdatedAt DATETIME NOT NULL,
    PRIMARY KEY (Name)
);

-- One cell of a roll-up: the count N (and the largest value Peak) of the facts of one metric
-- in one bucket of one grain (300, 3600 or 86400 seconds, every fact is counted in all
-- three) with one set of dimensions. DimSet says which dimensions the cell keeps (all of them,
-- none, or one: each fact is counted in every view, so a request reads the view with just
-- the dimensions it groups or filters by). CellHash is the SHA-256 of the dimensions, so
-- the key stays short whatever the identifiers' lengths.
CREATE TABLE InsightCells (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    Metric INTEGER NOT NULL,
    DimSet INTEGER NOT NULL,
    Grain INTEGER NOT NULL,
    BucketStart INTEGER NOT NULL,
    CellHash BLOB NOT NULL,
    ProjectId TEXT NOT NULL,
    AgentId TEXT NOT NULL,
    ReleaseId TEXT NOT NULL,
    Kind TEXT NOT NULL,
    ErrorCode TEXT NOT NULL,
    Subkey TEXT NOT NULL,
    Series TEXT NOT NULL,
    Bin INTEGER NOT NULL,
    N INTEGER NOT NULL,
    Peak INTEGER NOT NULL,
    PRIMARY KEY (TenantId, Metric, DimSet, Grain, BucketStart, CellHash)
) WITHOUT ROWID;

-- What each source row (a run, an attempt, a call, a decision) contributes to the cells,
-- so a row seen again (its Version changed) moves its counts instead of adding them twice.
CREATE TABLE InsightFacts (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    Source INTEGER NOT NULL,
    SourceId TEXT NOT NULL,
    Facts TEXT NOT NULL,
    PRIMARY KEY (TenantId, Source, SourceId)
) WITHOUT ROWID;

-- The projector reads each table's rows in Version order across tenants.
CREATE INDEX IX_Runs_Version ON Runs (Version);
CREATE INDEX IX_Attempts_Version ON ExecutionAttempts (Version);
CREATE INDEX IX_Calls_Version ON CallRecords (Version);
CREATE INDEX IX_Decisions_Version ON DecisionRequests (Version);
