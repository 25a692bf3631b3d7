package insights

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// The SQLite query set. Times are fixed-width text (2006-01-02T15:04:05.000Z): unixepoch()
// reads their whole seconds, so with a bucket-aligned window start the integer division is
// the bucket; durations are julianday differences rounded to the millisecond (a double
// resolves 2026's julian days to about 0.05 ms, so ROUND gives the exact stored ms).
// INDEXED BY pins each window's index: the filters are catch-all predicates the planner
// cannot weigh, and a pinned index fails loudly ("no query solution") if a change made it
// unusable. A histogram bin is the number of bounds below the duration (bin i holds
// durations up to bound i; bin len(bounds) the rest).

// sqliteRanked folds the groups past the largest ?10 (by their total, then key) into one
// NULL group, in the database, so the answer is bounded by the groups it names.
func sqliteRanked(inner string) string {
	return `SELECT GroupKey, Bucket, Series, SUM(N) AS N, MAX(Peak) AS Peak FROM (
    SELECT CASE WHEN Place <= ?10 THEN GroupKey END AS GroupKey, Bucket, Series, N, Peak FROM (
        SELECT GroupKey, Bucket, Series, N, Peak, DENSE_RANK() OVER (ORDER BY GroupTotal DESC, GroupKey) AS Place FROM (
            SELECT GroupKey, Bucket, Series, COUNT(*) AS N, MAX(Value) AS Peak,
                SUM(COUNT(*)) OVER (PARTITION BY GroupKey) AS GroupTotal
            FROM (` + inner + `) AS x
            GROUP BY GroupKey, Bucket, Series
        ) AS c
    ) AS k
) AS o
GROUP BY GroupKey, Bucket, Series`
}

// sqliteReleaseOf is a run's release: its latest attempt's (order DESC, as the ended runs
// and the runs list read it) or its first claim's (ASC, as claim latency reads it): an
// IX_Attempts_Run_Step seek, a run's few attempts. "+a.TenantId" here and below: without
// statistics the planner otherwise took IX_Attempts_Tenant_Started and read every attempt
// of the tenant for each run.
func sqliteReleaseOf(order string) string {
	return `COALESCE((SELECT a.ReleaseId FROM ExecutionAttempts a WHERE a.RunId = r.RunId AND +a.TenantId = r.TenantId
    ORDER BY a.StartedAt ` + order + `, a.AttemptId ` + order + ` LIMIT 1), '')`
}

// sqliteRunGroup is a run's group key, its release being release (sqliteReleaseOf).
func sqliteRunGroup(release string) string {
	return `CASE ?5 WHEN 'project' THEN r.ProjectId WHEN 'agent' THEN r.AgentId WHEN 'kind' THEN r.Kind
    WHEN 'release' THEN ` + release + ` WHEN 'errorCode' THEN COALESCE(r.ErrorCode, '') ELSE '' END`
}

// sqliteRunFilters are the page's filters on a run, its release being release.
func sqliteRunFilters(release string) string {
	return `(?6 IS NULL OR r.ProjectId = ?6) AND (?7 IS NULL OR r.AgentId = ?7) AND (?9 IS NULL OR r.Kind = ?9)
    AND (?8 IS NULL OR ` + release + ` = ?8)`
}

const (
	// An attempt's kind is its run's (a PK_Runs seek when asked for).
	sqliteAttemptGroup = `CASE ?5 WHEN 'project' THEN a.ProjectId WHEN 'agent' THEN a.AgentId WHEN 'release' THEN a.ReleaseId
    WHEN 'kind' THEN (SELECT r.Kind FROM Runs r WHERE r.RunId = a.RunId) WHEN 'errorCode' THEN COALESCE(a.ErrorCode, '')
    ELSE '' END`
	sqliteAttemptFilters = `(?6 IS NULL OR a.ProjectId = ?6) AND (?7 IS NULL OR a.AgentId = ?7) AND (?8 IS NULL OR a.ReleaseId = ?8)
    AND (?9 IS NULL OR EXISTS (SELECT 1 FROM Runs r WHERE r.RunId = a.RunId AND r.Kind = ?9))`
	// A parked attempt (6) is its own series: the run waits without a lease, no attempt spent.
	sqliteAttemptState = `CASE a.State WHEN 1 THEN 'succeeded' WHEN 2 THEN 'failed' WHEN 3 THEN 'cancelled' WHEN 4 THEN 'lost'
    WHEN 6 THEN 'parked' ELSE 'released' END`
)

func sqliteMs(from, to string) string {
	return `CAST(ROUND((julianday(` + to + `) - julianday(` + from + `)) * 86400000.0) AS INTEGER)`
}

func sqliteBin(ms string) string {
	return `(SELECT COUNT(*) FROM json_each(?11) WHERE value < ` + ms + `)`
}

// sqliteChild filters a call or decision (alias) by its attempt's filters, reading the
// attempt (PK seek) only when a filter is set.
func sqliteChild(alias string) string {
	return `((?6 IS NULL AND ?7 IS NULL AND ?8 IS NULL AND ?9 IS NULL)
    OR EXISTS (SELECT 1 FROM ExecutionAttempts a WHERE a.AttemptId = ` + alias + `.AttemptId AND ` + sqliteAttemptFilters + `))`
}

var sqliteQueries = queries{
	// The window's ended runs among the tenant's, by whichever of its indexes the planner
	// picks: IX_Runs_Tenant_Ended, the window's seek, is gone (migration 44). The direct
	// statements are the tests' reference for the roll-ups, which the service reads.
	runsEnded: sqliteRanked(`SELECT ` + sqliteRunGroup(sqliteReleaseOf("DESC")) + ` AS GroupKey,
    (unixepoch(r.EndedAt) - unixepoch(?2)) / ?4 AS Bucket, r.Outcome AS Series, 0 AS Value
FROM Runs r
WHERE r.TenantId = ?1 AND r.State = 2 AND r.EndedAt >= ?2 AND r.EndedAt < ?3 AND ` + sqliteRunFilters(sqliteReleaseOf("DESC"))),

	// The same range, and per run an IX_Attempts_Run_Step seek counting its attempts.
	attemptsPerRun: sqliteRanked(`SELECT ` + sqliteRunGroup(sqliteReleaseOf("DESC")) + ` AS GroupKey,
    min((SELECT COUNT(*) FROM ExecutionAttempts a WHERE a.RunId = r.RunId AND +a.TenantId = r.TenantId), 20) AS Bucket,
    '' AS Series, 0 AS Value
FROM Runs r
WHERE r.TenantId = ?1 AND r.State = 2 AND r.EndedAt >= ?2 AND r.EndedAt < ?3 AND ` + sqliteRunFilters(sqliteReleaseOf("DESC"))),

	// IX_Runs_Tenant_Queued (TenantId, QueuedAt, RunId): the window's enqueued runs; per run
	// an IX_Attempts_Run_Step seek for its first claim (none: never claimed, left out).
	claimLatency: sqliteRanked(`SELECT GroupKey, ` + sqliteBin("Ms") + ` AS Bucket, '' AS Series, Ms AS Value FROM (
    SELECT ` + sqliteRunGroup(sqliteReleaseOf("ASC")) + ` AS GroupKey,
        ` + sqliteMs("r.QueuedAt", "(SELECT MIN(a.StartedAt) FROM ExecutionAttempts a WHERE a.RunId = r.RunId AND +a.TenantId = r.TenantId)") + ` AS Ms
    FROM Runs r INDEXED BY IX_Runs_Tenant_Queued
    WHERE r.TenantId = ?1 AND r.QueuedAt >= ?2 AND r.QueuedAt < ?3 AND ` + sqliteRunFilters(sqliteReleaseOf("ASC")) + `
) AS m WHERE Ms IS NOT NULL`),

	// IX_Attempts_Tenant_State_Ended (TenantId, State, EndedAt): one range per ended state.
	attemptsEnded: sqliteRanked(`SELECT ` + sqliteAttemptGroup + ` AS GroupKey,
    (unixepoch(a.EndedAt) - unixepoch(?2)) / ?4 AS Bucket, ` + sqliteAttemptState + ` AS Series, 0 AS Value
FROM ExecutionAttempts a INDEXED BY IX_Attempts_Tenant_State_Ended
WHERE a.TenantId = ?1 AND a.State IN (1, 2, 3, 4, 5, 6) AND a.EndedAt >= ?2 AND a.EndedAt < ?3 AND ` + sqliteAttemptFilters),

	// The same index, the lost state's range only.
	leasesLost: sqliteRanked(`SELECT ` + sqliteAttemptGroup + ` AS GroupKey,
    (unixepoch(a.EndedAt) - unixepoch(?2)) / ?4 AS Bucket, 'lost' AS Series, 0 AS Value
FROM ExecutionAttempts a INDEXED BY IX_Attempts_Tenant_State_Ended
WHERE a.TenantId = ?1 AND a.State = 4 AND a.EndedAt >= ?2 AND a.EndedAt < ?3 AND ` + sqliteAttemptFilters),

	// IX_Calls_Tenant_Started (TenantId, StartedAt): the window's calls.
	calls: sqliteRanked(`SELECT c.Target AS GroupKey,
    CASE WHEN c.EndedAt IS NULL THEN -1 ELSE ` + sqliteBin(sqliteMs("c.StartedAt", "c.EndedAt")) + ` END AS Bucket,
    c.Status AS Series, COALESCE(` + sqliteMs("c.StartedAt", "c.EndedAt") + `, 0) AS Value
FROM CallRecords c INDEXED BY IX_Calls_Tenant_Started
WHERE c.TenantId = ?1 AND c.StartedAt >= ?2 AND c.StartedAt < ?3 AND ` + sqliteChild("c")),

	// IX_Decisions_Tenant_Status (TenantId, Status, RequestedAt, DecisionId): one range per
	// status; a row lookup each for Kind and AnsweredAt.
	decisions: sqliteRanked(`SELECT CASE d.Kind WHEN 0 THEN 'approval' WHEN 1 THEN 'choice' ELSE 'input' END AS GroupKey,
    CASE WHEN d.Status IN ('approved', 'rejected') AND d.AnsweredAt IS NOT NULL
        THEN ` + sqliteBin(sqliteMs("d.RequestedAt", "d.AnsweredAt")) + ` ELSE -1 END AS Bucket,
    d.Status AS Series, COALESCE(` + sqliteMs("d.RequestedAt", "d.AnsweredAt") + `, 0) AS Value
FROM DecisionRequests d INDEXED BY IX_Decisions_Tenant_Status
WHERE d.TenantId = ?1 AND d.Status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')
    AND d.RequestedAt >= ?2 AND d.RequestedAt < ?3 AND ` + sqliteChild("d")),
}
