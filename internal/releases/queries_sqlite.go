package releases

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

var sqliteQueries = queries{
	get: `SELECT ` + columns + ` FROM LoadedReleases WHERE TenantId = ?1 AND ReleaseId = ?2 AND AdapterVersion = ?3`,
	// The same read: a write transaction here is IMMEDIATE, so it holds the database's write
	// lock from its start and nothing can change the row before it commits.
	lock: `SELECT ` + columns + ` FROM LoadedReleases WHERE TenantId = ?1 AND ReleaseId = ?2 AND AdapterVersion = ?3`,
	// Version is stamped from the database-wide counter (migrations/sqlite 000001).
	insert: `INSERT INTO LoadedReleases (ReleaseId, AdapterVersion, TenantId, ManifestHash, ContentRefsJson, State,
    VerifiedAt, InFlightPolicy, Version)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, (SELECT Value + 1 FROM RowVersionCounter))`,
	update: `UPDATE LoadedReleases SET State = ?4, InFlightPolicy = ?5, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND ReleaseId = ?2 AND AdapterVersion = ?3 AND Version = ?6`,
	list: `SELECT ` + columns + ` FROM LoadedReleases
WHERE TenantId = ?1 AND (?2 IS NULL OR State = ?2)
  AND ReleaseId >= ?3 AND (ReleaseId > ?3 OR AdapterVersion > ?4)
ORDER BY ReleaseId, AdapterVersion LIMIT ?5`,
	runningAttempts: `SELECT AttemptId FROM ExecutionAttempts
WHERE ReleaseId = ?2 AND AdapterVersion = ?3 AND State = 0 AND TenantId = ?1 ORDER BY AttemptId`,
	// A write transaction holds the database's write lock from its start: nothing can claim
	// the id between this read and the insert that follows it.
	ownerIs:    `SELECT CASE WHEN TenantId = ?2 THEN 1 ELSE 0 END AS Mine FROM ReleaseOwners WHERE ReleaseId = ?1`,
	claimOwner: `INSERT INTO ReleaseOwners (ReleaseId, TenantId, CreatedAt) VALUES (?1, ?2, ?3)`,
}
