package insights

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set. Every statement takes @p1..@p11 as queries.go lists them.
//
// Reading checks (TSQL.md, last section) shared by every statement below; each statement's
// comment says what is particular to it:
//   - Index: each pins, with an INDEX hint, the index on (TenantId[, State or Status], the
//     window's time column) that migration 000018 or the seed's history indexes give, and
//     seeks TenantId = @p1 and the window @p2 <= t < @p3: it reads the window's rows only.
//     The filters (@p6..@p9) are catch-all residual predicates, the same plan for every
//     combination, so the cached plan stays right without RECOMPILE. Per row, correlated
//     reads (a run's attempts, an attempt's run) are key seeks of a handful of rows.
//   - Locks: reads only, in db.Read's READ COMMITTED transaction and tenant scope (row-level
//     security adds its TenantId predicate). Under READ_COMMITTED_SNAPSHOT a statement reads
//     the committed image as of its start and takes no row locks; without it, short S locks
//     released row by row, which never hold up a writer for more than one row's read, and
//     at worst a 1205 on a read (sqldb.ErrRetryable: the read is retried as a whole).
//   - 0 rows: an empty answer, read as zeros; never an error.
//   - Errors: none of their own; OPENJSON (the histogram's bounds, @p11, nvarchar(max))
//     needs compatibility level 130, which the service checks at start (Msg 208 below it).
//   - MAXDOP 1 on every statement: they aggregate a window's rows, and the security
//     predicate's SESSION_CONTEXT must not be evaluated in a parallel plan (TSQL.md).
//   - Buckets: DATEDIFF(second, @p2, t) counts the second boundaries from the window start,
//     which is bucket-aligned to the second, so it is floor(t - start) in seconds and the
//     integer division by @p4 is the bucket (a 500-day window is far inside int).
//     Durations: DATEDIFF_BIG(millisecond, …) of millisecond-truncated times is exact. A
//     histogram bin is the number of bounds below the duration.
//   - Ranking: mssqlRanked counts per (group, bucket, series) once, totals each group with a
//     window aggregate over those counts and folds groups past the largest @p10 into one
//     NULL group: one pass over the window's rows, a sort of the counts (bounded by the
//     distinct groups, buckets and series), an answer of at most @p10 + 1 groups.
//   - Collation: group keys are BIN2 identifiers except CallRecords.Target, which the seed
//     leaves at the database default (a case-insensitive database groups 'Search' with
//     'search' there, where SQLite keeps them apart).

// mssqlRanked folds the groups past the largest @p10 (by total, then key) into one NULL
// group.
func mssqlRanked(inner string) string {
	return `SELECT GroupKey, Bucket, Series, SUM(N) AS N, MAX(Peak) AS Peak FROM (
    SELECT CASE WHEN Place <= @p10 THEN GroupKey END AS GroupKey, Bucket, Series, N, Peak FROM (
        SELECT GroupKey, Bucket, Series, N, Peak, DENSE_RANK() OVER (ORDER BY GroupTotal DESC, GroupKey) AS Place FROM (
            SELECT GroupKey, Bucket, Series, COUNT_BIG(*) AS N, MAX(Value) AS Peak,
                SUM(COUNT_BIG(*)) OVER (PARTITION BY GroupKey) AS GroupTotal
            FROM (` + inner + `) AS x
            GROUP BY GroupKey, Bucket, Series
        ) AS c
    ) AS k
) AS o
GROUP BY GroupKey, Bucket, Series
OPTION (MAXDOP 1);`
}

// mssqlReleaseOf is a run's release: its latest attempt's (order DESC, as the ended runs
// and the runs list read it) or its first claim's (ASC, as claim latency reads it):
// IX_Attempts_Run_Step seek on RunId, a key lookup per attempt (TenantId, StartedAt),
// TOP (1) of a run's few attempts.
func mssqlReleaseOf(order string) string {
	return `COALESCE((SELECT TOP (1) a.ReleaseId FROM dbo.ExecutionAttempts a
    WHERE a.RunId = r.RunId AND a.TenantId = r.TenantId ORDER BY a.StartedAt ` + order + `, a.AttemptId ` + order + `), N'')`
}

// mssqlRunGroup is a run's group key, its release being release (mssqlReleaseOf).
// errorCode: the run's last error (migration 000021), a row lookup past the window's index
// like the release's seek ("" for a run without one).
func mssqlRunGroup(release string) string {
	return `CASE @p5 WHEN N'project' THEN r.ProjectId WHEN N'agent' THEN r.AgentId WHEN N'kind' THEN r.Kind
    WHEN N'release' THEN ` + release + ` WHEN N'errorCode' THEN COALESCE(r.ErrorCode, N'') ELSE N'' END`
}

// mssqlRunFilters are the page's filters on a run, its release being release.
func mssqlRunFilters(release string) string {
	return `(@p6 IS NULL OR r.ProjectId = @p6) AND (@p7 IS NULL OR r.AgentId = @p7) AND (@p9 IS NULL OR r.Kind = @p9)
    AND (@p8 IS NULL OR ` + release + ` = @p8)`
}

const (
	// An attempt's kind is its run's (PK_Runs seek when asked for).
	mssqlAttemptGroup = `CASE @p5 WHEN N'project' THEN a.ProjectId WHEN N'agent' THEN a.AgentId WHEN N'release' THEN a.ReleaseId
    WHEN N'kind' THEN (SELECT r.Kind FROM dbo.Runs r WHERE r.RunId = a.RunId) WHEN N'errorCode' THEN COALESCE(a.ErrorCode, N'')
    ELSE N'' END`
	mssqlAttemptFilters = `(@p6 IS NULL OR a.ProjectId = @p6) AND (@p7 IS NULL OR a.AgentId = @p7) AND (@p8 IS NULL OR a.ReleaseId = @p8)
    AND (@p9 IS NULL OR EXISTS (SELECT 1 FROM dbo.Runs r WHERE r.RunId = a.RunId AND r.Kind = @p9))`
	// A parked attempt (6) is its own series: the run waits without a lease, no attempt spent.
	mssqlAttemptState = `CASE a.State WHEN 1 THEN N'succeeded' WHEN 2 THEN N'failed' WHEN 3 THEN N'cancelled' WHEN 4 THEN N'lost'
    WHEN 6 THEN N'parked' ELSE N'released' END`
	// The histogram bin of the duration column Ms of the row source before it.
	mssqlBin = `CROSS APPLY (SELECT COUNT_BIG(*) AS Bin FROM OPENJSON(@p11) AS j WHERE CAST(j.[value] AS bigint) < d.Ms) AS b`
)

// mssqlChild filters a call or decision (alias) by its attempt's filters, reading the
// attempt (PK_ExecutionAttempts seek) only when a filter is set.
func mssqlChild(alias string) string {
	return `((@p6 IS NULL AND @p7 IS NULL AND @p8 IS NULL AND @p9 IS NULL)
    OR EXISTS (SELECT 1 FROM dbo.ExecutionAttempts a WHERE a.AttemptId = ` + alias + `.AttemptId AND ` + mssqlAttemptFilters + `))`
}

var mssqlQueries = queries{
	// The window's ended runs among the tenant's, by the optimiser's choice:
	// IX_Runs_Tenant_Ended, the window's seek, is gone (migration 44). The direct statements
	// are the tests' reference for the roll-ups, which the service reads.
	runsEnded: mssqlRanked(`SELECT ` + mssqlRunGroup(mssqlReleaseOf("DESC")) + ` AS GroupKey,
    DATEDIFF(second, @p2, r.EndedAt) / @p4 AS Bucket, r.Outcome AS Series, 0 AS Value
FROM dbo.Runs r
WHERE r.TenantId = @p1 AND r.State = 2 AND r.EndedAt >= @p2 AND r.EndedAt < @p3 AND ` + mssqlRunFilters(mssqlReleaseOf("DESC"))),

	// The same range, and per run an IX_Attempts_Run_Step seek counting its attempts.
	attemptsPerRun: mssqlRanked(`SELECT ` + mssqlRunGroup(mssqlReleaseOf("DESC")) + ` AS GroupKey,
    CASE WHEN n.Attempts >= 20 THEN 20 ELSE n.Attempts END AS Bucket, N'' AS Series, 0 AS Value
FROM dbo.Runs r
CROSS APPLY (SELECT COUNT_BIG(*) AS Attempts FROM dbo.ExecutionAttempts a WHERE a.RunId = r.RunId AND a.TenantId = r.TenantId) AS n
WHERE r.TenantId = @p1 AND r.State = 2 AND r.EndedAt >= @p2 AND r.EndedAt < @p3 AND ` + mssqlRunFilters(mssqlReleaseOf("DESC"))),

	// IX_Runs_Tenant_Queued (TenantId, QueuedAt, RunId), the seed's history index: the
	// window's enqueued runs, a PK_Runs lookup each (ProjectId, AgentId, Kind); per run an
	// IX_Attempts_Run_Step seek for its first claim (none: never claimed, left out).
	claimLatency: mssqlRanked(`SELECT d.GroupKey, b.Bin AS Bucket, N'' AS Series, d.Ms AS Value FROM (
    SELECT ` + mssqlRunGroup(mssqlReleaseOf("ASC")) + ` AS GroupKey, DATEDIFF_BIG(millisecond, r.QueuedAt, fc.FirstClaim) AS Ms
    FROM dbo.Runs r WITH (INDEX (IX_Runs_Tenant_Queued))
    CROSS APPLY (SELECT MIN(a.StartedAt) AS FirstClaim FROM dbo.ExecutionAttempts a
        WHERE a.RunId = r.RunId AND a.TenantId = r.TenantId) AS fc
    WHERE r.TenantId = @p1 AND r.QueuedAt >= @p2 AND r.QueuedAt < @p3 AND fc.FirstClaim IS NOT NULL AND ` + mssqlRunFilters(mssqlReleaseOf("ASC")) + `
) AS d
` + mssqlBin),

	// IX_Attempts_Tenant_State_Ended (TenantId, State, EndedAt) INCLUDE (ProjectId, AgentId,
	// ReleaseId, RunId): six seek ranges, one per ended state (parked too); covered.
	attemptsEnded: mssqlRanked(`SELECT ` + mssqlAttemptGroup + ` AS GroupKey,
    DATEDIFF(second, @p2, a.EndedAt) / @p4 AS Bucket, ` + mssqlAttemptState + ` AS Series, 0 AS Value
FROM dbo.ExecutionAttempts a WITH (INDEX (IX_Attempts_Tenant_State_Ended))
WHERE a.TenantId = @p1 AND a.State IN (1, 2, 3, 4, 5, 6) AND a.EndedAt >= @p2 AND a.EndedAt < @p3 AND ` + mssqlAttemptFilters),

	// The same index, the lost state's range only.
	leasesLost: mssqlRanked(`SELECT ` + mssqlAttemptGroup + ` AS GroupKey,
    DATEDIFF(second, @p2, a.EndedAt) / @p4 AS Bucket, N'lost' AS Series, 0 AS Value
FROM dbo.ExecutionAttempts a WITH (INDEX (IX_Attempts_Tenant_State_Ended))
WHERE a.TenantId = @p1 AND a.State = 4 AND a.EndedAt >= @p2 AND a.EndedAt < @p3 AND ` + mssqlAttemptFilters),

	// IX_Calls_Tenant_Started (TenantId, StartedAt) INCLUDE (AttemptId, Target, Status,
	// EndedAt): the window's calls, covered.
	calls: mssqlRanked(`SELECT c.Target AS GroupKey, CASE WHEN d.Ms IS NULL THEN -1 ELSE b.Bin END AS Bucket,
    c.Status AS Series, COALESCE(d.Ms, 0) AS Value
FROM dbo.CallRecords c WITH (INDEX (IX_Calls_Tenant_Started))
CROSS APPLY (SELECT DATEDIFF_BIG(millisecond, c.StartedAt, c.EndedAt) AS Ms) AS d
` + mssqlBin + `
WHERE c.TenantId = @p1 AND c.StartedAt >= @p2 AND c.StartedAt < @p3 AND ` + mssqlChild("c")),

	// IX_Decisions_Tenant_Status (TenantId, Status, RequestedAt, DecisionId): five seek
	// ranges, one per status, a key lookup each (Kind, AnsweredAt, AttemptId): bounded by
	// the window's decisions.
	decisions: mssqlRanked(`SELECT CASE dr.Kind WHEN 0 THEN N'approval' WHEN 1 THEN N'choice' ELSE N'input' END AS GroupKey,
    CASE WHEN dr.Status IN (N'approved', N'rejected') AND d.Ms IS NOT NULL THEN b.Bin ELSE -1 END AS Bucket,
    dr.Status AS Series, COALESCE(d.Ms, 0) AS Value
FROM dbo.DecisionRequests dr WITH (INDEX (IX_Decisions_Tenant_Status))
CROSS APPLY (SELECT DATEDIFF_BIG(millisecond, dr.RequestedAt, dr.AnsweredAt) AS Ms) AS d
` + mssqlBin + `
WHERE dr.TenantId = @p1 AND dr.Status IN (N'pending', N'approved', N'rejected', N'expired', N'cancelled')
    AND dr.RequestedAt >= @p2 AND dr.RequestedAt < @p3 AND ` + mssqlChild("dr")),
}
