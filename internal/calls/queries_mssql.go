package calls

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the call store. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. dbo.CallRecords has no trigger, so
// OUTPUT needs no INTO.
//
// PK_CallRecords (CallId) is clustered; UX_Calls_Attempt_Sequence (AttemptId, Sequence), the
// seed's index, has no TenantId, so TenantId is a residual after the key lookup (an
// AttemptId belongs to one tenant). Lock order: the fence's U locks on the attempt, then the
// run; then the call's keys. Every writer of an attempt's calls passes the fence first, so
// the attempt's U lock serialises them and a duplicate key met here is always committed.

var mssqlQueries = queries{
	// bySequence: the exact-repeat check after the insert's 2601 or a fence refusal (under the
	// fence): UX_Calls_Attempt_Sequence seek, then the attempt's token. 0 rows: nothing to repeat.
	bySequence: `SELECT ` + cColumns + `, a.FencingToken AS AttemptToken
FROM dbo.CallRecords AS c
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = @p1
WHERE c.TenantId = @p1 AND c.AttemptId = @p2 AND c.Sequence = @p3;`,

	// byID: PK seek, AttemptId residual (a call of another attempt in the path is not found).
	byID: `SELECT ` + cColumns + `, a.FencingToken AS AttemptToken
FROM dbo.CallRecords AS c
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = c.AttemptId AND a.TenantId = @p1
WHERE c.TenantId = @p1 AND c.AttemptId = @p2 AND c.CallId = @p3;`,

	// insert: under the fence. 2601 on UX_Calls_Attempt_Sequence -> ConflictError (the
	// transaction stays usable): Go reads the winner and answers repeat or sequence_conflict.
	insert: `INSERT INTO dbo.CallRecords (` + insertColumns + `,
    Status)
OUTPUT ` + insertedColumns + `
VALUES (` + insertValues("@p") + `, N'started');`,

	// finish: PK seek under the fence. @p7 (If-Match) is binary(8) or an nvarchar NULL, hence
	// the CONVERT. 0 rows: missing, finished, or another version: Go reads why (byID).
	finish: `UPDATE dbo.CallRecords SET Status = @p4, ReceiptRef = @p5, EndedAt = @p6, ResponseModel = @p8,
    FinishReasons = @p9, InputTokens = @p10, OutputTokens = @p11, CacheReadInputTokens = @p12,
    CacheCreationInputTokens = @p13, ReasoningOutputTokens = @p14, CostMicros = @p15
OUTPUT ` + insertedColumns + `
WHERE TenantId = @p1 AND AttemptId = @p2 AND CallId = @p3 AND Status = N'started'
    AND (@p7 IS NULL OR Version = CONVERT(binary(8), @p7));`,

	// list: UX_Calls_Attempt_Sequence range after @p3 (-1 first) in key order, TOP (@p4).
	list: `SELECT TOP (@p4) ` + columns + ` FROM dbo.CallRecords
WHERE TenantId = @p1 AND AttemptId = @p2 AND Sequence > @p3
ORDER BY Sequence
OPTION (MAXDOP 1);`,

	// abandon: the AttemptEnded hook, inside the transaction that ends the attempt (attempt,
	// then run held): every open call of the attempt. 0 rows is normal.
	abandon: `UPDATE dbo.CallRecords SET Status = N'abandoned', EndedAt = @p3
WHERE TenantId = @p1 AND AttemptId = @p2 AND Status = N'started';`,

	// attemptUsage: PK_ExecutionAttempts seek, then the attempt's calls by
	// UX_Calls_Attempt_Sequence with a key lookup each for the usage columns (one attempt's
	// calls: no window). No row when the attempt is missing or another tenant's (GROUP BY).
	attemptUsage: `SELECT ` + usageSums + `
FROM dbo.ExecutionAttempts AS a
LEFT JOIN dbo.CallRecords AS c ON c.AttemptId = a.AttemptId AND c.TenantId = @p1
WHERE a.TenantId = @p1 AND a.AttemptId = @p2
GROUP BY a.AttemptId
OPTION (MAXDOP 1);`,

	// runUsage: PK_Runs seek, the run's attempts by IX_Attempts_Run_Step (at most MaxAttempts),
	// their calls as attemptUsage's. No row when the run is missing or another tenant's.
	runUsage: `SELECT ` + usageSums + `
FROM dbo.Runs AS r
LEFT JOIN dbo.ExecutionAttempts AS a ON a.RunId = r.RunId AND a.TenantId = @p1
LEFT JOIN dbo.CallRecords AS c ON c.AttemptId = a.AttemptId AND c.TenantId = @p1
WHERE r.TenantId = @p1 AND r.RunId = @p2
GROUP BY r.RunId
OPTION (MAXDOP 1);`,

	// addCost: under the fence (attempt, then run held), then PK_ProjectDailyCosts. Finishes
	// of other attempts of the project are not serialised by the fence, so the UPDATE holds
	// the key, or the gap where it would be, with UPDLOCK and SERIALIZABLE until commit: a
	// second adder waits there instead of both inserting (no MERGE: TSQL.md). The day
	// ('YYYY-MM-DD') converts to date. The SELECT reads the row this transaction holds and
	// PK_Projects. 2627 cannot happen while the range lock is held.
	addCost: `UPDATE dbo.ProjectDailyCosts WITH (UPDLOCK, SERIALIZABLE) SET CostMicros = CostMicros + @p4
WHERE TenantId = @p1 AND ProjectId = @p2 AND Day = @p3;
IF @@ROWCOUNT = 0
    INSERT INTO dbo.ProjectDailyCosts (TenantId, ProjectId, Day, CostMicros) VALUES (@p1, @p2, @p3, @p4);
SELECT c.CostMicros, p.DailyCostBudgetMicros
FROM dbo.ProjectDailyCosts AS c
INNER JOIN dbo.Projects AS p ON p.TenantId = c.TenantId AND p.ProjectId = c.ProjectId
WHERE c.TenantId = @p1 AND c.ProjectId = @p2 AND c.Day = @p3;`,

	// listByStarted, listByEnded: IX_Calls_Tenant_Started / IX_Calls_Tenant_Ended pinned (the
	// clustered key CallId follows the time, so (time, CallId) is index order): a backward
	// range seek from the bound, TOP stops after a page, a key lookup per row for the
	// columns; the catch-all filters are residuals (the attempt and its run by PK seek only
	// when one of their filters is set), one cached plan for every combination. hasModel
	// (@p13, a bit) tests DATALENGTH, not = N'', which would take a model of spaces for none
	// (trailing blanks compare equal) while the usage insight groups it by its text. The
	// not* lists (@p14 targets, @p15 models: JSON arrays as nvarchar(max), N'[]' for none)
	// are residuals too. Reading check: OPENJSON's [value] is nvarchar(max) in the database's
	// collation, so the comparison states BIN2, Target's and Model's (Msg 468 otherwise);
	// items are strings, never NULL, so NOT IN cannot turn unknown; a NULL model compares as
	// N'', which no item is (identifiers), so a call without a model is kept, as "(no model)"
	// is a row of its own; no new seek, lock or error; 0 rows when all are left out.
	listByStarted: mssqlTenantList("StartedAt", "IX_Calls_Tenant_Started"),
	listByEnded:   mssqlTenantList("EndedAt", "IX_Calls_Tenant_Ended"),
}

func mssqlTenantList(at, index string) string {
	return `SELECT TOP (@p5) ` + columns + ` FROM dbo.CallRecords WITH (INDEX (` + index + `))
WHERE TenantId = @p1 AND ` + at + ` >= @p2 AND ` + at + ` <= @p3 AND (` + at + ` < @p3 OR CallId < @p4)
    AND (@p6 IS NULL OR Target = @p6) AND (@p7 IS NULL OR Model = @p7)
    AND (@p13 IS NULL OR (@p13 = 1 AND DATALENGTH(Model) > 0) OR (@p13 = 0 AND COALESCE(DATALENGTH(Model), 0) = 0))
    AND (@p14 = N'[]' OR Target NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p14) AS j))
    AND (@p15 = N'[]' OR COALESCE(Model, N'') NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p15) AS j))
    AND (@p8 = 0 OR ` + reportedUsage + `)
    AND ((@p9 IS NULL AND @p10 IS NULL AND @p11 IS NULL AND @p12 IS NULL) OR EXISTS (SELECT 1 FROM dbo.ExecutionAttempts AS a
        WHERE a.AttemptId = CallRecords.AttemptId AND a.TenantId = @p1 AND (@p9 IS NULL OR a.ProjectId = @p9)
        AND (@p10 IS NULL OR a.AgentId = @p10) AND (@p11 IS NULL OR a.ReleaseId = @p11)
        AND (@p12 IS NULL OR EXISTS (SELECT 1 FROM dbo.Runs AS r WHERE r.RunId = a.RunId AND r.TenantId = @p1 AND r.Kind = @p12))))
ORDER BY ` + at + ` DESC, CallId DESC
OPTION (MAXDOP 1);`
}
