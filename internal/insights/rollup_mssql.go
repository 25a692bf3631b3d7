package insights

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { rollupSets.Register(sqldb.SQLServerName, &mssqlRollups) }

// The SQL Server roll-up statements. The projector's run in maintenance scope (every
// tenant's rows, feed.Runner's transaction, READ COMMITTED); the insights' read of cells in
// the tenant's scope. Reading checks shared by the projector's four range reads:
//   - Index: the table's Version index (migration 000026) seeks Version > @p1 AND Version <
//     @p2 in order, TOP (@p3) stops it after a batch; it INCLUDEs every column read of the
//     row, so there is no key lookup (and no reader-lookup deadlock with a writer changing
//     the row's Version); a clustered PK seek each for the attempt and the run a row hangs
//     from. The range is below MIN_ACTIVE_ROWVERSION() (feed's ceiling), so
//     every row it reads is committed and no later commit can land inside it.
//   - Locks: short S locks released row by row (or none under READ_COMMITTED_SNAPSHOT): a
//     writer waits for at most one row's read. A row changed after the ceiling was read is
//     read in its newest state or not at all; either way its newer Version brings it back in
//     a later step, and InsightFacts makes seeing it again harmless.
//   - 0 rows: nothing changed; the runner's position moves to the ceiling.
//   - MAXDOP 1: a range read (TSQL.md), and the security function must not run in a
//     parallel plan.
// Issue 26 item 5's reading of the old insights statements applies here: nothing a request
// runs reads IX_Attempts_Run_Step, DecisionRequests or an OPENJSON list any more. The run
// read below seeks IX_Attempts_Run_Step (RunId, StepId) for each changed run, a key lookup
// per attempt for StartedAt and ReleaseId (the seed's index cannot carry INCLUDE columns:
// seed parity), bounded by a batch's runs and off the request path; histogram bins are
// computed in Go, so no bound list is parsed per row.

// mssqlRunAttempt reads one column of a run's first or latest attempt.
func mssqlRunAttempt(col, order string) string {
	return `(SELECT TOP (1) a.` + col + ` FROM dbo.ExecutionAttempts a WHERE a.RunId = r.RunId
        ORDER BY a.StartedAt ` + order + `, a.AttemptId ` + order + `)`
}

// mssqlNoUsage: the usage columns of a source row that is not a call.
const mssqlNoUsage = `CAST(NULL AS nvarchar(128)) AS Model, CAST(NULL AS bigint) AS InputTokens,
    CAST(NULL AS bigint) AS OutputTokens, CAST(NULL AS bigint) AS CacheReadInputTokens,
    CAST(NULL AS bigint) AS CacheCreationInputTokens, CAST(NULL AS bigint) AS ReasoningOutputTokens,
    CAST(NULL AS bigint) AS CostMicros`

var mssqlRollups = rollupQueries{
	runs: `SELECT TOP (@p3) CAST(1 AS tinyint) AS Source, r.RunId AS Id, r.TenantId, r.Version, r.State, r.Outcome AS Status,
    r.ProjectId, r.AgentId, CAST(NULL AS nvarchar(256)) AS ReleaseId, r.Kind, CAST(NULL AS nvarchar(256)) AS Subkey,
    r.QueuedAt AS StartAt, r.EndedAt AS EndAt,
    ` + mssqlRunAttempt("StartedAt", "ASC") + ` AS FirstClaimAt,
    ` + mssqlRunAttempt("ReleaseId", "ASC") + ` AS FirstRelease,
    ` + mssqlRunAttempt("ReleaseId", "DESC") + ` AS LastRelease,
    (SELECT COUNT_BIG(*) FROM dbo.ExecutionAttempts a WHERE a.RunId = r.RunId) AS Attempts,
    r.ErrorCode, ` + mssqlNoUsage + `
FROM dbo.Runs r WITH (INDEX (IX_Runs_Version))
WHERE r.Version > @p1 AND r.Version < @p2
ORDER BY r.Version
OPTION (MAXDOP 1);`,

	attempts: `SELECT TOP (@p3) CAST(2 AS tinyint) AS Source, a.AttemptId AS Id, a.TenantId, a.Version, a.State,
    CAST(NULL AS nvarchar(32)) AS Status, a.ProjectId, a.AgentId, a.ReleaseId, r.Kind, CAST(NULL AS nvarchar(256)) AS Subkey,
    CAST(NULL AS datetimeoffset(3)) AS StartAt, a.EndedAt AS EndAt, CAST(NULL AS datetimeoffset(3)) AS FirstClaimAt,
    CAST(NULL AS nvarchar(256)) AS FirstRelease, CAST(NULL AS nvarchar(256)) AS LastRelease, CAST(NULL AS bigint) AS Attempts,
    a.ErrorCode, ` + mssqlNoUsage + `
FROM dbo.ExecutionAttempts a WITH (INDEX (IX_Attempts_Version))
LEFT JOIN dbo.Runs r ON r.RunId = a.RunId
WHERE a.Version > @p1 AND a.Version < @p2
ORDER BY a.Version
OPTION (MAXDOP 1);`,

	// Reading check: Target is at the database default collation (the seed's); the cell's
	// Subkey is BIN2, so targets differing in case are separate cells, as on SQLite.
	calls: `SELECT TOP (@p3) CAST(3 AS tinyint) AS Source, c.CallId AS Id, c.TenantId, c.Version, CAST(NULL AS int) AS State,
    c.Status, a.ProjectId, a.AgentId, a.ReleaseId, r.Kind, c.Target AS Subkey, c.StartedAt AS StartAt, c.EndedAt AS EndAt,
    CAST(NULL AS datetimeoffset(3)) AS FirstClaimAt, CAST(NULL AS nvarchar(256)) AS FirstRelease,
    CAST(NULL AS nvarchar(256)) AS LastRelease, CAST(NULL AS bigint) AS Attempts, CAST(NULL AS nvarchar(64)) AS ErrorCode,
    c.Model, c.InputTokens, c.OutputTokens, c.CacheReadInputTokens, c.CacheCreationInputTokens, c.ReasoningOutputTokens,
    c.CostMicros
FROM dbo.CallRecords c WITH (INDEX (IX_Calls_Version))
LEFT JOIN dbo.ExecutionAttempts a ON a.AttemptId = c.AttemptId
LEFT JOIN dbo.Runs r ON r.RunId = a.RunId
WHERE c.Version > @p1 AND c.Version < @p2
ORDER BY c.Version
OPTION (MAXDOP 1);`,

	decisions: `SELECT TOP (@p3) CAST(4 AS tinyint) AS Source, d.DecisionId AS Id, d.TenantId, d.Version, CAST(NULL AS int) AS State,
    d.Status, a.ProjectId, a.AgentId, a.ReleaseId, r.Kind, CAST(d.Kind AS nvarchar(8)) AS Subkey,
    d.RequestedAt AS StartAt, d.AnsweredAt AS EndAt,
    CAST(NULL AS datetimeoffset(3)) AS FirstClaimAt, CAST(NULL AS nvarchar(256)) AS FirstRelease,
    CAST(NULL AS nvarchar(256)) AS LastRelease, CAST(NULL AS bigint) AS Attempts, CAST(NULL AS nvarchar(64)) AS ErrorCode,
    ` + mssqlNoUsage + `
FROM dbo.DecisionRequests d WITH (INDEX (IX_Decisions_Version))
LEFT JOIN dbo.ExecutionAttempts a ON a.AttemptId = d.AttemptId
LEFT JOIN dbo.Runs r ON r.RunId = a.RunId
WHERE d.Version > @p1 AND d.Version < @p2
ORDER BY d.Version
OPTION (MAXDOP 1);`,

	// Reading check: a PK seek.
	factsOf: `SELECT Facts FROM dbo.InsightFacts WHERE TenantId = @p1 AND Source = @p2 AND SourceId = @p3;`,

	// Reading check: only the projector writes facts, one step at a time (feed.Runner holds
	// the projector's row locked until commit), so the insert never races another.
	insertFacts: `INSERT INTO dbo.InsightFacts (TenantId, Source, SourceId, Facts) VALUES (@p1, @p2, @p3, @p4);`,

	// Reading check: a PK seek of the row factsOf found in this transaction.
	updateFacts: `UPDATE dbo.InsightFacts SET Facts = @p4 WHERE TenantId = @p1 AND Source = @p2 AND SourceId = @p3;`,

	// Reading check: a PK seek; the update-then-insert needs no lock hints because the
	// projector is the only writer of cells and runs one step at a time (as insertFacts).
	upsertCell: `UPDATE dbo.InsightCells SET N = N + @p13, Peak = CASE WHEN Peak < @p14 THEN @p14 ELSE Peak END
WHERE TenantId = @p1 AND Metric = @p2 AND DimSet = @p15 AND Grain = @p3 AND BucketStart = @p4 AND CellHash = @p5;
IF @@ROWCOUNT = 0
    INSERT INTO dbo.InsightCells (TenantId, Metric, DimSet, Grain, BucketStart, CellHash, ProjectId, AgentId, ReleaseId, Kind,
        Subkey, Series, Bin, N, Peak, ErrorCode)
    VALUES (@p1, @p2, @p15, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11, @p12, @p13, @p14, @p16);`,

	// Reading check: PK_InsightCells seeks (TenantId, Metric, DimSet, Grain, BucketStart range): the
	// window's cells only; the filters are catch-all residual predicates on the covered
	// columns (the clustered index holds every column), one plan for every combination.
	// Read in the tenant's scope; the security predicate adds TenantId, already sought.
	cells: `SELECT BucketStart, ProjectId, AgentId, ReleaseId, Kind, ErrorCode, Subkey, Series, Bin, N, Peak
FROM dbo.InsightCells
WHERE TenantId = @p1 AND Metric = @p2 AND DimSet = @p11 AND Grain = @p3 AND BucketStart >= @p4 AND BucketStart < @p5 AND N <> 0
    AND (@p6 IS NULL OR ProjectId = @p6) AND (@p7 IS NULL OR AgentId = @p7) AND (@p8 IS NULL OR ReleaseId = @p8)
    AND (@p9 IS NULL OR Kind = @p9) AND (@p10 IS NULL OR Series = @p10)
OPTION (MAXDOP 1);`,

	// Reading check: a PK seek of FeedProjectors (no tenant data: a tenant's read sees it).
	// Under READ COMMITTED an insight reads this and then its cells in separate statements:
	// a step committed in between shows in the later statements only, as any change
	// committed during a request may; the answer is off by no more than that step.
	coarseCurrent: `SELECT COUNT(*) FROM dbo.FeedProjectors WHERE Name = @p1 AND CoarseThrough = Position OPTION (MAXDOP 1);`,

	// Reading check: a PK seek of the projector's row, which feed.Runner's lease UPDATE
	// holds locked until the step commits.
	markCoarse: `UPDATE dbo.FeedProjectors SET CoarseThrough = @p2 WHERE Name = @p1;`,

	// Reading check: Grain is not a leading key column, so this scans PK_InsightCells across
	// tenants (maintenance scope): it runs only when the coarse cells are stale (once after
	// migration 000042, or after an older binary stepped), in the step's transaction, whose
	// exclusive locks keep the insights' reads of the cells waiting until it commits.
	clearCoarse: `DELETE FROM dbo.InsightCells WHERE Grain = @p1 OPTION (MAXDOP 1);`,

	// Reading check: a scan of the daily cells (as clearCoarse, once per rebuild); the
	// GROUP BY's hash or sort aggregate is spooled before the insert (Halloween protection:
	// the table is read and written in one statement). Every cell of a CellHash in a
	// dimension set has the same dimensions, so MIN of each is that value; the BIN2 columns
	// compare by code point. BucketStart is positive (Unix seconds), so % floors it; the derived
	// table names the bucket once for the GROUP BY.
	buildCoarse: `INSERT INTO dbo.InsightCells (TenantId, Metric, DimSet, Grain, BucketStart, CellHash, ProjectId, AgentId, ReleaseId,
    Kind, Subkey, Series, Bin, N, Peak, ErrorCode)
SELECT TenantId, Metric, DimSet, @p1, Coarse, CellHash, MIN(ProjectId), MIN(AgentId), MIN(ReleaseId),
    MIN(Kind), MIN(Subkey), MIN(Series), MIN(Bin), SUM(N), MAX(Peak), MIN(ErrorCode)
FROM (SELECT TenantId, Metric, DimSet, BucketStart - BucketStart % @p1 AS Coarse, CellHash, ProjectId, AgentId, ReleaseId, Kind,
        Subkey, Series, Bin, N, Peak, ErrorCode
    FROM dbo.InsightCells
    WHERE Grain = @p2 AND Metric IN (` + binnedList() + `)) AS d
GROUP BY TenantId, Metric, DimSet, Coarse, CellHash
OPTION (MAXDOP 1);`,
}
