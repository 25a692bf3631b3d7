-- migration: breaking
-- ReleaseOwners is filled from LoadedReleases once; a binary before it registering releases would leave owners unrecorded.
-- The ledger's records (see migrations/mssql 000012 for the reasons):
-- DecisionRequests.PriorPhase (a declared addition), ReleaseOwners (one owner per global
-- release id, backfilled from LoadedReleases) and PurgeBacklog (runs retention deleted whose
-- attempts are still being deleted). SQLite has no row-level security.
ALTER TABLE DecisionRequests ADD PriorPhase INTEGER NULL;

CREATE TABLE ReleaseOwners (
    ReleaseId TEXT NOT NULL,
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    CreatedAt DATETIME NOT NULL,
    CONSTRAINT PK_ReleaseOwners PRIMARY KEY (ReleaseId)
);

INSERT INTO ReleaseOwners (ReleaseId, TenantId, CreatedAt)
SELECT o.ReleaseId, o.TenantId, o.VerifiedAt
FROM (
    SELECT r.ReleaseId, r.TenantId, r.VerifiedAt,
        ROW_NUMBER() OVER (PARTITION BY r.ReleaseId ORDER BY r.VerifiedAt, r.TenantId) AS n
    FROM LoadedReleases AS r
) AS o
WHERE o.n = 1;

CREATE TABLE PurgeBacklog (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    RunId TEXT NOT NULL,
    PurgedAt DATETIME NOT NULL,
    CONSTRAINT PK_PurgeBacklog PRIMARY KEY (TenantId, RunId)
);
