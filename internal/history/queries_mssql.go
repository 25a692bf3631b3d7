package history

import (
	"fmt"
	"strings"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the history reads. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. Reads only, in db.Read's transaction,
// without hints: no deadlock with a writer (a reader holds no lock a writer waits for
// beyond one row). Keysets compare uniqueidentifier keys in SQL Server's order, which is
// the index order (cursors are opaque, so SQLite's text order differs harmlessly); maxTime
// and maxID stand in for "no cursor", minID makes a time an exclusive bound.

// mssqlInsightFilters are the release, run kind, error code and error presence filters
// (parameter numbers release, kind, code, hasError); the kind reads the attempt's run by
// PK_Runs seek only when asked; hasError (NULL, 0 or 1) is a residual on ErrorCode's NULL.
// The five not* lists (from parameter number not: project, agent, run kind, release, error
// code) are JSON arrays as nvarchar(max), N'[]' for none, residuals after the index read.
// Reading check: OPENJSON's [value] is nvarchar(max) in the database's collation, so each
// comparison states BIN2, the identifier columns' (Msg 468 otherwise); items are strings,
// never NULL, so NOT IN cannot turn unknown; a NULL ErrorCode compares as N”, which no
// item is (an error code has 1..64 characters), so an attempt without an error is kept as
// the insight keeps it in "(none)"; the run kind's probe is the kind filter's PK_Runs seek;
// no lock beyond the read's, 0 rows when every attempt is left out, no new error.
func mssqlInsightFilters(release, kind, code, hasError, not int) string {
	return fmt.Sprintf(`(@p%[1]d IS NULL OR ReleaseId = @p%[1]d) AND (@p%[3]d IS NULL OR ErrorCode = @p%[3]d)
    AND (@p%[4]d IS NULL OR (@p%[4]d = 1 AND ErrorCode IS NOT NULL) OR (@p%[4]d = 0 AND ErrorCode IS NULL))
    AND (@p%[2]d IS NULL OR EXISTS (SELECT 1 FROM dbo.Runs AS r WHERE r.RunId = ExecutionAttempts.RunId AND r.TenantId = @p1 AND r.Kind = @p%[2]d))
    AND (@p%[5]d = N'[]' OR ProjectId NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p%[5]d) AS j))
    AND (@p%[6]d = N'[]' OR AgentId NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p%[6]d) AS j))
    AND (@p%[7]d = N'[]' OR NOT EXISTS (SELECT 1 FROM dbo.Runs AS r WHERE r.RunId = ExecutionAttempts.RunId AND r.TenantId = @p1
        AND r.Kind IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p%[7]d) AS j)))
    AND (@p%[8]d = N'[]' OR ReleaseId NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p%[8]d) AS j))
    AND (@p%[9]d = N'[]' OR COALESCE(ErrorCode, N'') NOT IN (SELECT j.[value] COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p%[9]d) AS j))`,
		release, kind, code, hasError, not, not+1, not+2, not+3, not+4)
}

func mssqlListByEnded() string {
	var b strings.Builder
	for i, st := range []int{1, 2, 3, 4, 5, 6} {
		if i > 0 {
			b.WriteString("\n    UNION ALL\n")
		}
		which := fmt.Sprintf("(@p2 IS NULL OR @p2 = %d)", st)
		if st == 6 {
			which = "@p2 = 6" // parked: only when asked for, as the insight does not count it
		}
		fmt.Fprintf(&b, `    SELECT b%[1]d.* FROM (
        SELECT TOP (@p8) `+attempts.Columns+`
        FROM dbo.ExecutionAttempts WITH (INDEX (IX_Attempts_Tenant_State_Ended))
        WHERE TenantId = @p1 AND State = %[1]d AND %[2]s AND EndedAt >= @p5 AND EndedAt <= @p6
            AND (EndedAt < @p6 OR AttemptId < @p7)
            AND (@p3 IS NULL OR AgentId = @p3) AND (@p4 IS NULL OR ProjectId = @p4) AND `+mssqlInsightFilters(9, 10, 11, 12, 13)+`
        ORDER BY EndedAt DESC, AttemptId DESC
    ) AS b%[1]d`, st, which)
	}
	return `SELECT TOP (@p8) ` + attempts.Columns + ` FROM (
` + b.String() + `
) AS u
ORDER BY u.EndedAt DESC, u.AttemptId DESC
OPTION (MAXDOP 1);`
}

var mssqlQueries = queries{
	// listByTenant: IX_Attempts_Tenant_Started pinned (INDEX hint): a backward range seek from
	// the bound in index order, TOP stops after a page whatever the cursor's depth; the
	// catch-all filters are residuals, so one cached plan serves every combination.
	listByTenant: `SELECT TOP (@p8) ` + attempts.Columns + `
FROM dbo.ExecutionAttempts WITH (INDEX (IX_Attempts_Tenant_Started))
WHERE TenantId = @p1 AND StartedAt >= @p5 AND StartedAt <= @p6
    AND (StartedAt < @p6 OR AttemptId < @p7)
    AND (@p2 IS NULL OR State = @p2) AND (@p3 IS NULL OR AgentId = @p3) AND (@p4 IS NULL OR ProjectId = @p4)
    AND ` + mssqlInsightFilters(9, 10, 11, 12, 13) + `
ORDER BY StartedAt DESC, AttemptId DESC
OPTION (MAXDOP 1);`,

	// listByRun: IX_Attempts_Run_Step seek on RunId, a sort of the run's attempts (one per
	// claim), TOP. 0 rows: another tenant's run looks empty, as a missing one.
	listByRun: `SELECT TOP (@p9) ` + attempts.Columns + `
FROM dbo.ExecutionAttempts WITH (INDEX (IX_Attempts_Run_Step))
WHERE RunId = @p2 AND TenantId = @p1 AND StartedAt >= @p6 AND StartedAt <= @p7
    AND (StartedAt < @p7 OR AttemptId < @p8)
    AND (@p3 IS NULL OR State = @p3) AND (@p4 IS NULL OR AgentId = @p4) AND (@p5 IS NULL OR ProjectId = @p5)
    AND ` + mssqlInsightFilters(10, 11, 12, 13, 14) + `
ORDER BY StartedAt DESC, AttemptId DESC
OPTION (MAXDOP 1);`,

	// listByEnded: a UNION ALL of one branch per ended state, each a backward range seek of
	// IX_Attempts_Tenant_State_Ended (TenantId, State, EndedAt; the clustered key AttemptId
	// follows, so (EndedAt, AttemptId) is index order) from the bound, TOP (@p8) in index
	// order plus a key lookup per row for the columns; the outer TOP sorts at most six
	// pages. A branch whose state is not asked for is a startup filter (no seek). The
	// catch-all filters are residuals, one cached plan for every combination.
	listByEnded: mssqlListByEnded(),

	// changesCap: MIN_ACTIVE_ROWVERSION(), read in its own statement BEFORE the page, so under
	// RCSI the page's snapshot has every transaction that committed a Version below the cap
	// (rowversion is stamped at write, not commit). Always one row.
	changesCap: `SELECT MIN_ACTIVE_ROWVERSION();`,

	// changes: IX_Attempts_Tenant_Version pinned, forward range @p2 <= Version < cap, TOP in
	// index order. 0 rows: nothing changed (yet).
	changes: `SELECT TOP (@p5) ` + attempts.Columns + `
FROM dbo.ExecutionAttempts WITH (INDEX (IX_Attempts_Tenant_Version))
WHERE TenantId = @p1 AND Version >= CAST(@p2 AS binary(8))
    AND (Version > CAST(@p2 AS binary(8)) OR AttemptId > @p3)
    AND Version < CAST(@p4 AS binary(8))
ORDER BY Version, AttemptId
OPTION (MAXDOP 1);`,

	// timeline: one UNION ALL of four per-table seeks on AttemptId, each TOP (@p7) in its own
	// order, merged by the outer TOP (@p7): at most four pages sorted. Checkpoints and calls
	// have no (AttemptId, time) index, so their branches read the attempt's rows in that table
	// (a Top N Sort keeps a page). Kind: 0 checkpoint, 1 call, 2 decision, 3 delegation.
	timeline: `SELECT TOP (@p7) u.Kind, u.At, u.Seq, u.Id FROM (
    SELECT b0.Kind, b0.At, b0.Seq, b0.Id FROM (
        SELECT TOP (@p7) 0 AS Kind, c.CreatedAt AS At, c.Sequence AS Seq, c.CheckpointId AS Id
        FROM dbo.Checkpoints AS c
        WHERE c.AttemptId = @p2 AND c.TenantId = @p1 AND c.CreatedAt >= @p3
            AND (c.CreatedAt > @p3 OR 0 > @p4 OR (0 = @p4 AND (c.Sequence > @p5 OR (c.Sequence = @p5 AND c.CheckpointId > @p6))))
        ORDER BY c.CreatedAt, c.Sequence
    ) AS b0
    UNION ALL
    SELECT b1.Kind, b1.At, b1.Seq, b1.Id FROM (
        SELECT TOP (@p7) 1 AS Kind, k.StartedAt AS At, k.Sequence AS Seq, k.CallId AS Id
        FROM dbo.CallRecords AS k
        WHERE k.AttemptId = @p2 AND k.TenantId = @p1 AND k.StartedAt >= @p3
            AND (k.StartedAt > @p3 OR 1 > @p4 OR (1 = @p4 AND (k.Sequence > @p5 OR (k.Sequence = @p5 AND k.CallId > @p6))))
        ORDER BY k.StartedAt, k.Sequence
    ) AS b1
    UNION ALL
    SELECT b2.Kind, b2.At, b2.Seq, b2.Id FROM (
        SELECT TOP (@p7) 2 AS Kind, d.RequestedAt AS At, 0 AS Seq, d.DecisionId AS Id
        FROM dbo.DecisionRequests AS d
        WHERE d.AttemptId = @p2 AND d.TenantId = @p1 AND d.RequestedAt >= @p3
            AND (d.RequestedAt > @p3 OR 2 > @p4 OR (2 = @p4 AND (0 > @p5 OR (0 = @p5 AND d.DecisionId > @p6))))
        ORDER BY d.RequestedAt, d.DecisionId
    ) AS b2
    UNION ALL
    SELECT b3.Kind, b3.At, b3.Seq, b3.Id FROM (
        SELECT TOP (@p7) 3 AS Kind, s.CreatedAt AS At, 0 AS Seq, s.DelegationId AS Id
        FROM dbo.SubAgentDelegations AS s
        WHERE s.AttemptId = @p2 AND s.TenantId = @p1 AND s.CreatedAt >= @p3
            AND (s.CreatedAt > @p3 OR 3 > @p4 OR (3 = @p4 AND (0 > @p5 OR (0 = @p5 AND s.DelegationId > @p6))))
        ORDER BY s.CreatedAt, s.DelegationId
    ) AS b3
) AS u
ORDER BY u.At, u.Kind, u.Seq, u.Id
OPTION (MAXDOP 1);`,

	// checkpoints, calls, delegations: a page of ids (OPENJSON), each a PK seek. Missing rows
	// were purged between the timeline's two statements: the page omits them.
	checkpoints: `SELECT ` + checkpointColumns + ` FROM dbo.Checkpoints
WHERE CheckpointId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1;`,
	calls: `SELECT ` + callColumns + ` FROM dbo.CallRecords
WHERE CallId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1;`,
	delegations: `SELECT ` + delegationColumns + ` FROM dbo.SubAgentDelegations
WHERE DelegationId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1;`,
}
