package decisions

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the decision store. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. dbo.DecisionRequests has no trigger.
//
// PK_DecisionRequests is clustered on DecisionId, so every nonclustered index ends in it:
// IX_Decisions_Attempt is in effect (AttemptId, RequestedAt, DecisionId). Status is BIN2,
// compared with N'…' literals (which match IX_Decisions_PendingExpiry's filter).
//
// Lock order: the attempt row first, always. Every path that writes an attempt's decisions
// (a request's fence, an answer, closeForAttempt, an expiry) holds that attempt's U lock
// first, so they serialise on the attempt and no cycle forms through decision rows. Reads
// that return decisions join the attempt (inner: the FK guarantees it) and its run (left: a
// run retention has just deleted reads with a NULL Subject) by primary key.

var mssqlQueries = queries{
	// insert: a new pending decision; the FK check's S lock on the attempt is compatible with
	// the U lock the fence holds. 547 FK -> ErrBadReference (not expected after the fence).
	insert: `INSERT INTO dbo.DecisionRequests (DecisionId, AttemptId, TenantId, Kind, ApprovalId, ProposalHash, OptionsJson,
    Recommendation, Status, RequestedAt, AnsweredAt, AnswerJson, AnsweredBy, ExpiresAt, PriorPhase, RunId, IdempotencyKey,
    RequestHash)
VALUES (@p1, @p2, @p3, @p4, NULL, @p5, @p6, @p7, N'pending', @p8, NULL, NULL, NULL, @p9, @p10, @p11, @p12, @p13);`,

	// byKey: UX_Decisions_Idempotency seek (the filter repeated), under the fence's attempt
	// and run locks: two requests of one run under one key serialise on the run (every
	// attempt of a run is fenced through it), so the insert after a miss meets no duplicate.
	byKey: `SELECT ` + columns + `, ` + sourceColumns + `, d.RequestHash` + mssqlFrom + `
WHERE d.TenantId = @p1 AND d.RunId = @p2 AND d.IdempotencyKey = @p3 AND d.IdempotencyKey IS NOT NULL;`,

	// listByRun: the runs' attempts (IX_Attempts_Run_Step seeks), then each attempt's
	// decisions (IX_Decisions_Attempt), a TOP (@p5) sort of those runs' decisions (bounded
	// by their attempts and each attempt's decisions).
	listByRun: `SELECT TOP (@p5) ` + columns + `, ` + sourceColumns + ` FROM dbo.ExecutionAttempts AS a
INNER LOOP JOIN dbo.DecisionRequests AS d ON d.AttemptId = a.AttemptId AND d.TenantId = a.TenantId
LEFT OUTER JOIN dbo.Runs AS r ON r.RunId = a.RunId AND r.TenantId = a.TenantId
WHERE a.RunId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND a.TenantId = @p1
    AND (@p3 IS NULL OR d.RequestedAt > @p3 OR (d.RequestedAt = @p3 AND d.DecisionId > @p4))
ORDER BY d.RequestedAt, d.DecisionId
OPTION (RECOMPILE, MAXDOP 1);`,

	// get: PK seek and the attempt and run seeks. 0 rows: missing or another tenant's.
	get: mssqlRead + ` WHERE d.TenantId = @p1 AND d.DecisionId = @p2;`,

	// lock: the decision's own columns, U-locked to commit (after the attempt's lock).
	lock: `SELECT ` + columns + ` FROM dbo.DecisionRequests AS d WITH (UPDLOCK, ROWLOCK)
WHERE d.TenantId = @p1 AND d.DecisionId = @p2;`,

	// byIDs: a page of ids (OPENJSON, JSON argument), each a PK seek. Missing rows were purged
	// between the timeline's two statements: the page omits them.
	byIDs: mssqlRead + `
WHERE d.DecisionId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND d.TenantId = @p1;`,

	// answer: PK seek under lock's U lock; the WHERE repeats what Go checked (pending, version,
	// not expired at @p7). 0 rows: Go re-reads and answers decision_closed or precondition_failed.
	answer: `UPDATE dbo.DecisionRequests SET Status = @p3, AnswerJson = @p4, ApprovalId = @p5, AnsweredBy = @p6, AnsweredAt = @p7
WHERE TenantId = @p1 AND DecisionId = @p2 AND Status = N'pending' AND Version = @p8
    AND (ExpiresAt IS NULL OR ExpiresAt > @p7);`,

	// list: the inbox with a status. RECOMPILE folds the catch-alls: one IX_Decisions_Tenant_Status
	// seek whose order is the ORDER BY (no sort), or for expired two ranges and a TOP N sort.
	// The project filter is a residual on the attempt, as are the decisions insight's filters
	// (@p8 to @p13: the decision's kind and requested window, the attempt's agent and release,
	// its run's kind through the LEFT JOIN already read). The N'expired' literal is pinned to BIN2.
	list: mssqlReadTop + `
WHERE d.TenantId = @p1
    AND (d.Status = @p2 OR (@p2 = N'expired' COLLATE Latin1_General_100_BIN2 AND d.Status = N'pending'))
    AND (CASE WHEN d.Status = N'pending' AND d.ExpiresAt <= @p3 THEN N'expired' ELSE d.Status END) = @p2
    AND (@p4 IS NULL OR a.ProjectId = @p4)
    AND (@p8 IS NULL OR d.Kind = @p8) AND (@p9 IS NULL OR d.RequestedAt >= @p9) AND (@p10 IS NULL OR d.RequestedAt < @p10)
    AND (@p11 IS NULL OR a.AgentId = @p11) AND (@p12 IS NULL OR a.ReleaseId = @p12) AND (@p13 IS NULL OR r.Kind = @p13)
    AND (@p5 IS NULL OR d.RequestedAt > @p5 OR (d.RequestedAt = @p5 AND d.DecisionId > @p6))
ORDER BY d.RequestedAt, d.DecisionId
OPTION (RECOMPILE, MAXDOP 1);`,

	// listPendingFirst: two branches of at most a page each (pending not past ExpiresAt; the
	// rest), merged by the outer TOP (@p7). The cursor: @p4 NULL starts; 0 continues the pending
	// branch and starts the other; 1 continues the other. @p8 to @p13 are list's residuals.
	listPendingFirst: `SELECT TOP (@p7) u.* FROM (
    SELECT b0.* FROM (
        SELECT TOP (@p7) 0 AS Rank, ` + columns + `, ` + sourceColumns + mssqlFrom + `
        WHERE d.TenantId = @p1 AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p2)
            AND (@p3 IS NULL OR a.ProjectId = @p3)
            AND (@p8 IS NULL OR d.Kind = @p8) AND (@p9 IS NULL OR d.RequestedAt >= @p9) AND (@p10 IS NULL OR d.RequestedAt < @p10)
            AND (@p11 IS NULL OR a.AgentId = @p11) AND (@p12 IS NULL OR a.ReleaseId = @p12) AND (@p13 IS NULL OR r.Kind = @p13)
            AND (@p4 IS NULL OR (@p4 = 0 AND (d.RequestedAt > @p5 OR (d.RequestedAt = @p5 AND d.DecisionId > @p6))))
        ORDER BY d.RequestedAt, d.DecisionId
    ) AS b0
    UNION ALL
    SELECT b1.* FROM (
        SELECT TOP (@p7) 1 AS Rank, ` + columns + `, ` + sourceColumns + mssqlFrom + `
        WHERE d.TenantId = @p1 AND (d.Status <> N'pending' OR d.ExpiresAt <= @p2)
            AND (@p3 IS NULL OR a.ProjectId = @p3)
            AND (@p8 IS NULL OR d.Kind = @p8) AND (@p9 IS NULL OR d.RequestedAt >= @p9) AND (@p10 IS NULL OR d.RequestedAt < @p10)
            AND (@p11 IS NULL OR a.AgentId = @p11) AND (@p12 IS NULL OR a.ReleaseId = @p12) AND (@p13 IS NULL OR r.Kind = @p13)
            AND (@p4 IS NULL OR @p4 = 0 OR d.RequestedAt > @p5 OR (d.RequestedAt = @p5 AND d.DecisionId > @p6))
        ORDER BY d.RequestedAt, d.DecisionId
    ) AS b1
) AS u
ORDER BY u.Rank, u.RequestedAt, u.DecisionId
OPTION (RECOMPILE, MAXDOP 1);`,

	// listByAttempt: IX_Decisions_Attempt seek in key order (no sort), TOP (@p5).
	listByAttempt: `SELECT TOP (@p5) ` + columns + `, ` + sourceColumns + mssqlFrom + `
WHERE d.TenantId = @p1 AND d.AttemptId = @p2
    AND (@p3 IS NULL OR d.RequestedAt > @p3 OR (d.RequestedAt = @p3 AND d.DecisionId > @p4))
ORDER BY d.RequestedAt, d.DecisionId
OPTION (RECOMPILE, MAXDOP 1);`,

	// newestPrior: IX_Decisions_Attempt backward seek, TOP (1), under the attempt's U lock.
	// 0 rows: no decision.
	newestPrior: `SELECT TOP (1) PriorPhase FROM dbo.DecisionRequests
WHERE AttemptId = @p2 AND TenantId = @p1 ORDER BY RequestedAt DESC, DecisionId DESC;`,

	// countPending: IX_Decisions_Attempt seek with PK lookups, TOP (@p4): at most the cap of
	// rows read. Runs under the attempt's U lock (the request's fence), so no other request
	// of this attempt counts at the same time and the cap holds.
	countPending: `SELECT COUNT(*) FROM (SELECT TOP (@p4) 1 AS One FROM dbo.DecisionRequests
WHERE AttemptId = @p2 AND TenantId = @p1 AND Status = N'pending' AND (ExpiresAt IS NULL OR ExpiresAt > @p3)) AS p
OPTION (MAXDOP 1);`,

	// restorePhase: the attempt's PK seek (U held, now X); the NOT EXISTS seeks its decisions,
	// seeing this transaction's close. 0 rows: waiting on another decision, or moved on.
	restorePhase: `UPDATE dbo.ExecutionAttempts SET Phase = @p3
WHERE TenantId = @p1 AND AttemptId = @p2 AND State = 0 AND Phase = 5
    AND NOT EXISTS (SELECT 1 FROM dbo.DecisionRequests AS d
        WHERE d.AttemptId = @p2 AND d.TenantId = @p1 AND d.Status = N'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > @p4));`,

	// closeForRun: in the run-ending transaction (the run held, and the ending attempt when
	// there is one): the run's attempts (IX_Attempts_Run_Step), each one's decisions
	// (IX_Decisions_Attempt). An answer that committed first is seen and left answered. The
	// decisions of the run's earlier attempts are written without their attempt's lock: an
	// answer to one (attempt, decision, then the run in closeWaits) can deadlock with this
	// (run, then decision); 1205 is retried, and the loser finds the other's result.
	closeForRun: `UPDATE d
SET Status = CASE WHEN d.ExpiresAt IS NOT NULL AND d.ExpiresAt <= @p3 THEN N'expired' ELSE N'cancelled' END
FROM dbo.DecisionRequests AS d INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = d.AttemptId
WHERE a.RunId = @p2 AND a.TenantId = @p1 AND d.TenantId = @p1 AND d.Status = N'pending'
OPTION (MAXDOP 1);`,

	// due: across tenants, IX_Decisions_PendingExpiry range (literals repeated), DISTINCT TOP
	// (@p2) attempts, each expired afterwards in its own tenant-scoped transaction.
	due: `SELECT DISTINCT TOP (@p2) TenantId, AttemptId FROM dbo.DecisionRequests
WHERE Status = N'pending' AND ExpiresAt IS NOT NULL AND ExpiresAt <= @p1
OPTION (MAXDOP 1);`,

	// expireForAttempt: after attempts.Lock holds the attempt; a decision answered since due
	// read it is left alone. 0 rows: another replica or an answer closed them first.
	expireForAttempt: `UPDATE dbo.DecisionRequests SET Status = N'expired'
OUTPUT inserted.DecisionId
WHERE TenantId = @p1 AND AttemptId = @p2 AND Status = N'pending' AND ExpiresAt IS NOT NULL AND ExpiresAt <= @p3;`,
}

const mssqlFrom = ` FROM dbo.DecisionRequests AS d
INNER JOIN dbo.ExecutionAttempts AS a ON a.AttemptId = d.AttemptId AND a.TenantId = d.TenantId
LEFT OUTER JOIN dbo.Runs AS r ON r.RunId = a.RunId AND r.TenantId = a.TenantId`

const mssqlRead = `SELECT ` + columns + `, ` + sourceColumns + mssqlFrom

const mssqlReadTop = `SELECT TOP (@p7) ` + columns + `, ` + sourceColumns + mssqlFrom
