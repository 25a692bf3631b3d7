package runs

import (
	"strings"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// SQLite runs one writer at a time (immediate transactions), so nothing here takes a lock:
// a write transaction's reads cannot interleave with another's writes. That is also why
// lockSubject is empty (every change of a subject's queue is serialised already) and why
// claimStart reads no clock (an embedded database's clock is this machine's).

// sqliteStamp is the emulated rowversion (migrations/sqlite 000001).
const sqliteStamp = `(SELECT Value + 1 FROM RowVersionCounter)`

// sqliteEligible is what makes a head claimable besides its band and due time: its project
// is active, no cancel is pending, and it passes the claim's filters. The subject's order
// (no older queued run, no leased run) is the head marker itself. A run's project exists
// (Runs' foreign key), so when the tenant has no inactive and no budgeted project every
// head's project passes: two empty seeks of IX_Projects_Inactive and IX_Projects_Budgeted
// (uncorrelated, so SQLite runs each once per seek the claim reaches, not per head) say
// so, and the project probe per head is skipped (migration 43; docs/perf/issue-35.md).
const sqliteEligible = `r.CancelRequestedAt IS NULL
    AND ((NOT EXISTS (SELECT 1 FROM Projects h WHERE h.TenantId = ?1 AND h.Active = 0)
            AND NOT EXISTS (SELECT 1 FROM Projects h WHERE h.TenantId = ?1 AND h.DailyCostBudgetMicros IS NOT NULL))
        OR EXISTS (SELECT 1 FROM Projects p WHERE p.TenantId = r.TenantId AND p.ProjectId = r.ProjectId AND p.Active = 1
            AND (p.DailyCostBudgetMicros IS NULL OR NOT EXISTS (SELECT 1 FROM ProjectDailyCosts c
                WHERE c.TenantId = p.TenantId AND c.Day = substr(?2, 1, 10) AND c.ProjectId = p.ProjectId
                AND c.CostMicros >= p.DailyCostBudgetMicros))))
    AND (?5 = '[]' OR r.Kind IN (SELECT value FROM json_each(?5)))
    AND (?6 = '[]' OR r.AgentId IN (SELECT value FROM json_each(?6)))
    AND (?7 = '[]' OR r.ProjectId IN (SELECT value FROM json_each(?7)))
    AND (?8 = '[]' OR r.RunId NOT IN (SELECT value FROM json_each(?8)))`

// sqliteSeek is one seek of IX_Runs_Claim (heads only): a band's eligible heads, which the
// index answers in age order (DueAt, then RunId, its last column).
func sqliteSeek(band, dueBy string) string {
	return `SELECT r.RunId, r.ProjectId, r.DueAt FROM Runs r
    WHERE r.TenantId = ?1 AND r.SubjectHead = 1 AND r.Band = ` + band + ` AND r.DueAt <= ` + dueBy + `
    AND ` + sqliteEligible
}

// sqlitePick weighs one band group's window, its K oldest eligible heads, by project load,
// fewest leased runs (a missing counter row is 0) first, then age: its pick's RunId, or NULL.
// The window is the group's seeks as one compound ordered by age: SQLite merges the seeks
// as co-routines (MERGE (UNION ALL)), each in its index's order, and stops after K rows, so
// the only sort is the pick's (TestSQLitePlansWithoutStatistics). Each seek wrapped in a
// subquery of its own with ORDER BY and LIMIT, as before, made the merge sort each seek's
// rows in a temporary B-tree first: 3 sorts for the BATCH group's pick instead of 1, about
// 58k instructions a cycle (docs/perf/issue-35.md).
func sqlitePick(seeks ...string) string {
	return `SELECT c.RunId FROM (
    ` + strings.Join(seeks, "\n    UNION ALL\n    ") + `
    ORDER BY DueAt, RunId LIMIT ?4
) c LEFT JOIN ProjectLeases pl ON pl.TenantId = ?1 AND pl.ProjectId = c.ProjectId
ORDER BY COALESCE(pl.LeasedCount, 0), c.DueAt, c.RunId LIMIT 1`
}

// sqliteClaim is the claim's one statement: the band groups' picks in band order, as
// scalar subqueries of one COALESCE, which SQLite evaluates lazily (a group's seek runs only
// when every group before it had nothing), so one statement does what three would. It
// answers the pick's whole row, its Version the stamp the lease will write
// (leaseUnanswered): the claim's immediate transaction writes nothing between the two, so
// the lease needs no RETURNING, whose ephemeral table cost a cycle more than reading the
// row here (docs/perf/issue-35.md).
var sqliteClaim = `SELECT ` + sqldb.SQLiteColumnList(runTable, "r.", func(c runColumn) bool {
	return c.Uses&answered != 0 && c.Name != "Version"
}) + `, ` + sqliteStamp + ` AS Version FROM Runs r WHERE r.TenantId = ?1 AND r.RunId = COALESCE(
    (` + sqlitePick(sqliteSeek("0", "?2")) + `),
    (` + sqlitePick(sqliteSeek("1", "?2"), sqliteSeek("2", "?3")) + `),
    (` + sqlitePick(sqliteSeek("2", "?2")) + `))`

// sqliteFenceColumns is the fence's read, as mssqlFenceColumns: no clock (NULL: the fence
// reads the transaction's), no lock hints (the immediate transaction holds the writer's lock).
// Its times are answered as text (attempts.SQLiteFenceColumns, sqldb.SQLiteColumnList).
var sqliteFenceColumns = `NULL AS Now, ` + attempts.SQLiteFenceColumns + `,` + sqliteFenceRun

// sqliteFenceWholeColumns is fenceWhole's read: the fence's, with every column of the attempt
// and the stamp the transaction's first write will take (attempts.EndWhole), and what a run
// leaving its lease answered (its left columns, immutable, and SubjectQueued: the subject's
// other runs, which nothing in a complete or a release changes between the fence and the
// run's end), so that requeueUnanswered and endLeasedUnanswered answer nothing.
var sqliteFenceWholeColumns = `NULL AS Now, ` + sqliteStamp + ` AS Stamp, ` + attempts.SQLiteWholeColumns + `,
    ` + sqliteFenceLeft() + `,
    EXISTS (SELECT 1 FROM Runs AS q WHERE q.TenantId = r.TenantId AND q.Subject = r.Subject AND q.State = 0) AS SubjectQueued,` + sqliteFenceRun

// sqliteFenceLeft is the run's left columns as run.<column> (none is a time).
func sqliteFenceLeft() string {
	var cols []string
	for _, c := range runTable {
		if c.Uses&left != 0 {
			cols = append(cols, `r.`+c.Name+` AS "run.`+c.Name+`"`)
		}
	}
	return strings.Join(cols, ", ")
}

// sqliteFenceRun is the run's part of the fence's read, and its tables. The run's RunId,
// TenantId and ProjectId are the attempt's (the join's, the WHERE's, the claim's copy of an
// immutable column), which the fence takes instead of reading them twice (Service.fence).
const sqliteFenceRun = `
    r.Subject AS "run.Subject",
    r.State AS "run.State", r.Epoch AS "run.Epoch", r.LeaseSeconds AS "run.LeaseSeconds",
    CAST(r.LeasedUntil AS TEXT) AS "run.LeasedUntil", r.Attempt AS "run.Attempt", r.MaxAttempts AS "run.MaxAttempts",
    CAST(r.DeadlineAt AS TEXT) AS "run.DeadlineAt", CAST(r.CancelRequestedAt AS TEXT) AS "run.CancelRequestedAt"
FROM ExecutionAttempts AS a JOIN Runs AS r ON r.RunId = a.RunId`

// sqliteInsertRow is the row an enqueue inserts: its arguments, queued, the head marker when
// its subject has no other queued or leased run, and the stamp.
var sqliteInsertRow = insertValues("?") + `, 0,
    NOT EXISTS (SELECT 1 FROM Runs s WHERE s.TenantId = ?2 AND s.Subject = ?5 AND s.State = 0)
        AND NOT EXISTS (SELECT 1 FROM Runs s WHERE s.TenantId = ?2 AND s.Subject = ?5 AND s.State = 1),
    ` + sqliteStamp

var sqliteQueries = queries{
	insert: `INSERT INTO Runs (` + runInsertColumns + `,
    State, SubjectHead, Version)
SELECT ` + sqliteInsertRow + `
WHERE NOT EXISTS (SELECT 1 FROM IdempotencyTombstones WHERE TenantId = ?2 AND IdempotencyKey = ` + insertArg("?", "IdempotencyKey") + `)
RETURNING Version, SubjectHead`,
	// insertKeyless: VALUES, so SQLite writes the row as it is instead of first copying the
	// select (which reads Runs) into a temporary table.
	insertKeyless: `INSERT INTO Runs (` + runInsertColumns + `,
    State, SubjectHead, Version)
VALUES (` + sqliteInsertRow + `)
RETURNING Version, SubjectHead`,
	get:           `SELECT ` + sqliteRunColumns + ` FROM Runs WHERE TenantId = ?1 AND RunId = ?2`,
	lock:          `SELECT ` + sqliteRunColumns + ` FROM Runs WHERE TenantId = ?1 AND RunId = ?2`,
	byIdempotency: `SELECT ` + sqliteRunColumns + `, RequestHash FROM Runs WHERE TenantId = ?1 AND IdempotencyKey = ?2`,
	continuation:  `SELECT ` + sqliteRunColumns + ` FROM Runs WHERE TenantId = ?1 AND ContinuedFromRunId = ?2`,
	// Back: a primary-key seek per hop; forward: an IX_Runs_ContinuedFromRunId seek per hop.
	chain: `WITH RECURSIVE back(ChainRunId, PrevRunId, Pos) AS (
    SELECT RunId, ContinuedFromRunId, 0 FROM Runs WHERE RunId = ?2 AND TenantId = ?1
    UNION ALL
    SELECT r.RunId, r.ContinuedFromRunId, b.Pos - 1 FROM back b JOIN Runs r ON r.RunId = b.PrevRunId
    WHERE b.Pos > -?3 AND r.TenantId = ?1
), fwd(ChainRunId, Pos) AS (
    SELECT RunId, 0 FROM Runs WHERE RunId = ?2 AND TenantId = ?1
    UNION ALL
    SELECT r.RunId, f.Pos + 1 FROM fwd f JOIN Runs r ON r.ContinuedFromRunId = f.ChainRunId
    WHERE f.Pos < ?3 AND r.TenantId = ?1
)
SELECT ` + sqliteRunColumns + `, c.Pos AS Pos
FROM (SELECT ChainRunId, Pos FROM back UNION SELECT ChainRunId, Pos FROM fwd) AS c JOIN Runs ON Runs.RunId = c.ChainRunId
ORDER BY c.Pos`,
	tombstone: `SELECT RunId, CAST(PurgedAt AS TEXT) AS PurgedAt FROM IdempotencyTombstones WHERE TenantId = ?1 AND IdempotencyKey = ?2`,
	forkPoint: `SELECT k.CheckpointId FROM Checkpoints AS k JOIN ExecutionAttempts AS a ON a.AttemptId = k.AttemptId
WHERE k.CheckpointId = ?3 AND k.TenantId = ?1 AND a.RunId = ?2 AND a.TenantId = ?1`,

	lockSubject: "",
	// The head is computed once (h) from IX_Runs_SubjectQueue and UX_Runs_LeasedSubject; the
	// rows whose marker must change are the current head (UX_Runs_SubjectHead) when it is not
	// h, and h when it is not marked. Usually nothing changes and nothing is written.
	syncHead: `WITH h(RunId) AS (
    SELECT q.RunId FROM Runs AS q
    WHERE q.TenantId = ?1 AND q.Subject = ?2 AND q.State = 0
        AND NOT EXISTS (SELECT 1 FROM Runs AS l WHERE l.TenantId = ?1 AND l.Subject = ?2 AND l.State = 1)
    ORDER BY q.QueuedAt, q.RunId LIMIT 1
)
UPDATE Runs SET SubjectHead = (RunId IN (SELECT RunId FROM h)), Version = ` + sqliteStamp + `
WHERE RunId IN (
    SELECT o.RunId FROM Runs AS o WHERE o.TenantId = ?1 AND o.Subject = ?2 AND o.SubjectHead = 1
        AND o.RunId NOT IN (SELECT RunId FROM h)
    UNION ALL
    SELECT n.RunId FROM Runs AS n WHERE n.RunId IN (SELECT RunId FROM h) AND n.SubjectHead = 0
)`,

	claimStart: `SELECT NULL AS Now, t.MaxLeasedRuns,
    COALESCE((SELECT l.LeasedCount FROM TenantLeases l WHERE l.TenantId = ?1), 0) AS LeasedCount
FROM Tenants t WHERE t.TenantId = ?1`,
	claimCandidates: []string{sqliteClaim},
	// leaseUnanswered: ?6 is the stamp the candidate answered, which the claim answers as the
	// run's Version. Nothing writes between the two on SQLite; should anything (a fault
	// injection) have advanced the counter, the lease writes -1, which the run's AFTER UPDATE
	// trigger refuses (a version that went down): the claim fails (sqldb.ErrRefused) rather
	// than answer a stale version. The refusal comes after the row's unique checks, so a
	// leased-subject conflict is still reported as one. OR FAIL, as the complete's end: a
	// statement that cannot abort needs no statement journal (migrations/sqlite 000045), and
	// a one-row update checks every constraint before it writes, so a conflict the claim
	// goes on from (the leased subject's) leaves nothing written.
	leaseUnanswered: `UPDATE OR FAIL Runs SET State = 1, Epoch = Epoch + 1, HolderId = ?3, LeaseSeconds = ?4, LeasedUntil = ?5,
    SubjectHead = 0, Version = CASE WHEN ?6 = ` + sqliteStamp + ` THEN ?6 ELSE -1 END
WHERE TenantId = ?1 AND RunId = ?2 AND State = 0 AND SubjectHead = 1`,
	tenantLeased: `INSERT INTO TenantLeases (TenantId, LeasedCount) VALUES (?1, 1)
ON CONFLICT (TenantId) DO UPDATE SET LeasedCount = LeasedCount + 1`,
	projectLeased: `INSERT INTO ProjectLeases (TenantId, ProjectId, LeasedCount) VALUES (?1, ?2, 1)
ON CONFLICT (TenantId, ProjectId) DO UPDATE SET LeasedCount = LeasedCount + 1`,
	tenantUnleased:  `UPDATE TenantLeases SET LeasedCount = LeasedCount - 1 WHERE TenantId = ?1`,
	projectUnleased: `UPDATE ProjectLeases SET LeasedCount = LeasedCount - 1 WHERE TenantId = ?1 AND ProjectId = ?2`,

	fence: `SELECT ` + sqliteFenceColumns + `
WHERE a.TenantId = ?1 AND a.AttemptId = ?2 AND r.TenantId = ?1`,
	// fenceRunning seeks IX_Attempts_Run_Step by the run (at most MaxAttempts rows): without
	// statistics (nothing runs ANALYZE) the planner otherwise took IX_Attempts_Tenant_State_Ended
	// for "TenantId = ? AND State = 0" and read every running attempt of the tenant.
	fenceWhole: `SELECT ` + sqliteFenceWholeColumns + `
WHERE a.TenantId = ?1 AND a.AttemptId = ?2 AND r.TenantId = ?1`,
	fenceRunning: `SELECT ` + sqliteFenceColumns + `
WHERE a.RunId = ?2 AND +a.TenantId = ?1 AND a.FencingToken = ?3 AND +a.State = 0 AND r.TenantId = ?1`,

	heartbeat: `UPDATE Runs SET LeasedUntil = ?3, LeaseSeconds = ?4, Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND Epoch = ?2 AND State = 1`,
	requeue: `UPDATE Runs SET State = 0, DueAt = ?3, Attempt = ?4, LeasedUntil = NULL, ErrorCode = ?6, ErrorMessage = ?7,
    Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND Epoch = ?2 AND State = 1 AND (?5 IS NULL OR LeasedUntil < ?5)
RETURNING ` + sqliteLeftColumns + `, 1 AS SubjectQueued`,
	requeueUnanswered: `UPDATE Runs SET State = 0, DueAt = ?3, Attempt = ?4, LeasedUntil = NULL, ErrorCode = ?6, ErrorMessage = ?7,
    Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND Epoch = ?2 AND State = 1 AND (?5 IS NULL OR LeasedUntil < ?5)`,
	// SubjectQueued: an IX_Runs_SubjectQueue probe (the run itself is no longer leased, and
	// is not queued), so that leaving the lease runs syncHead only when there is a head to mark.
	endLeased: `UPDATE Runs SET State = 2, Outcome = ?3, EndedAt = ?4, Attempt = ?5, LeasedUntil = NULL,
    ErrorCode = ?7, ErrorMessage = ?8, Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND Epoch = ?2 AND State = 1 AND (?6 IS NULL OR LeasedUntil < ?6)
RETURNING ` + sqliteLeftColumns + `,
    EXISTS (SELECT 1 FROM Runs AS q WHERE q.TenantId = Runs.TenantId AND q.Subject = Runs.Subject AND q.State = 0) AS SubjectQueued`,
	// endLeasedUnanswered: ?9 is the SubjectQueued its fence read. Nothing in a complete or a
	// release queues a run of the subject between the two; should anything have (a fault
	// injection), the end writes -1, which the run's AFTER UPDATE trigger refuses, rather than
	// leave the new run's head unmarked. The probe runs only when ?9 said none. OR FAIL: see
	// leaseUnanswered.
	endLeasedUnanswered: `UPDATE OR FAIL Runs SET State = 2, Outcome = ?3, EndedAt = ?4, Attempt = ?5, LeasedUntil = NULL,
    ErrorCode = ?7, ErrorMessage = ?8, Version = CASE WHEN ?9 OR NOT EXISTS (SELECT 1 FROM Runs AS q
        WHERE q.TenantId = Runs.TenantId AND q.Subject = Runs.Subject AND q.State = 0) THEN ` + sqliteStamp + ` ELSE -1 END
WHERE RunId = ?1 AND Epoch = ?2 AND State = 1 AND (?6 IS NULL OR LeasedUntil < ?6)`,
	endQueued: `UPDATE Runs SET State = 2, Outcome = ?2, EndedAt = ?3, SubjectHead = 0, ErrorCode = ?4, ErrorMessage = ?5,
    Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND State = 0
RETURNING ` + sqliteRunColumns,
	requestCancel: `UPDATE Runs SET CancelRequestedAt = ?2, Version = ` + sqliteStamp + `
WHERE RunId = ?1 AND State = 1 AND CancelRequestedAt IS NULL
RETURNING ` + sqliteRunColumns,
	// costHeld: PK_ProjectDailyCosts range (TenantId, Day), each project by its key, then one
	// IX_Runs_Claim probe per held project.
	costHeld: `SELECT 1 FROM ProjectDailyCosts c
    JOIN Projects p ON p.TenantId = c.TenantId AND p.ProjectId = c.ProjectId
WHERE c.TenantId = ?1 AND c.Day = substr(?2, 1, 10) AND p.Active = 1 AND c.CostMicros >= p.DailyCostBudgetMicros
    AND (?3 = '[]' OR c.ProjectId IN (SELECT value FROM json_each(?3)))
    AND EXISTS (SELECT 1 FROM Runs r WHERE r.TenantId = ?1 AND r.SubjectHead = 1 AND r.ProjectId = c.ProjectId
        AND r.DueAt <= ?2 AND r.CancelRequestedAt IS NULL)
LIMIT 1`,
	budgetHeld: `SELECT 1 FROM Projects p JOIN ProjectDailyCosts c
    ON c.TenantId = p.TenantId AND c.Day = ?3 AND c.ProjectId = p.ProjectId
WHERE p.TenantId = ?1 AND p.ProjectId = ?2 AND c.CostMicros >= p.DailyCostBudgetMicros`,
	list: `SELECT ` + sqliteRunColumns + ` FROM Runs
WHERE TenantId = ?1 AND (?2 IS NULL OR State = ?2) AND (?3 IS NULL OR Subject = ?3) AND (?4 IS NULL OR ProjectId = ?4)
    AND (?5 IS NULL OR Kind = ?5) AND (?9 IS NULL OR AgentId = ?9) AND (?10 IS NULL OR QueuedAt >= ?10)
    AND (?11 IS NULL OR Band = ?11) AND (?12 IS NULL OR Outcome = ?12) AND (?13 IS NULL OR ErrorCode = ?13)
    AND (?14 IS NULL OR (SELECT a.ReleaseId FROM ExecutionAttempts AS a WHERE a.RunId = Runs.RunId AND +a.TenantId = ?1
        ORDER BY a.StartedAt DESC, a.AttemptId DESC LIMIT 1) = ?14)
    AND (?15 IS NULL OR EndedAt >= ?15) AND (?16 IS NULL OR EndedAt < ?16)
    AND (?17 IS NULL OR EXISTS (SELECT 1 FROM json_each(Runs.Tags) AS j WHERE j.value = ?17))
    AND ((?18 IS NULL AND ?19 IS NULL) OR (SELECT COUNT(*) FROM ExecutionAttempts AS a WHERE a.RunId = Runs.RunId AND +a.TenantId = ?1)
        BETWEEN COALESCE(?18, 0) AND COALESCE(?19, 2147483647))
    AND (?20 IS NULL OR (SELECT a.ReleaseId FROM ExecutionAttempts AS a WHERE a.RunId = Runs.RunId AND +a.TenantId = ?1
        ORDER BY a.StartedAt, a.AttemptId LIMIT 1) = ?20)
    AND (?21 IS NULL OR (?21 = 1 AND ErrorCode IS NOT NULL) OR (?21 = 0 AND ErrorCode IS NULL))
    AND (?22 IS NULL OR EXISTS (SELECT 1 FROM ExecutionAttempts AS a WHERE a.RunId = Runs.RunId AND +a.TenantId = ?1) = (?22 = 1))
    AND (?23 = '[]' OR ProjectId NOT IN (SELECT value FROM json_each(?23)))
    AND (?24 = '[]' OR AgentId NOT IN (SELECT value FROM json_each(?24)))
    AND (?25 = '[]' OR Kind NOT IN (SELECT value FROM json_each(?25)))
    AND (?26 = '[]' OR COALESCE((SELECT a.ReleaseId FROM ExecutionAttempts AS a WHERE a.RunId = Runs.RunId AND +a.TenantId = ?1
        ORDER BY a.StartedAt DESC, a.AttemptId DESC LIMIT 1), '') NOT IN (SELECT value FROM json_each(?26)))
    AND (?27 = '[]' OR COALESCE(ErrorCode, '') NOT IN (SELECT value FROM json_each(?27)))
    AND (?28 = '[]' OR COALESCE((SELECT a.ReleaseId FROM ExecutionAttempts AS a WHERE a.RunId = Runs.RunId AND +a.TenantId = ?1
        ORDER BY a.StartedAt, a.AttemptId LIMIT 1), '') NOT IN (SELECT value FROM json_each(?28)))
    AND (?6 IS NULL OR QueuedAt < ?6 OR (QueuedAt = ?6 AND RunId < ?7))
ORDER BY Runs.QueuedAt DESC, RunId DESC LIMIT ?8`,
	// parkDecisions: each named decision by primary key, its attempt by primary key.
	parkDecisions: `SELECT COUNT(*) FROM DecisionRequests AS d
CROSS JOIN ExecutionAttempts AS a ON a.AttemptId = d.AttemptId
WHERE d.DecisionId IN (SELECT value FROM json_each(?2)) AND d.TenantId = ?1 AND a.TenantId = ?1 AND a.RunId = ?3`,
	parkChildren: `SELECT COUNT(*) FROM Runs
WHERE RunId IN (SELECT value FROM json_each(?2)) AND TenantId = ?1 AND ParentRunId = ?3`,
	clearWaits: `DELETE FROM RunWaits WHERE TenantId = ?1 AND RunId = ?2`,
	waitDecisions: `INSERT INTO RunWaits (TenantId, RunId, TargetKind, TargetId, CreatedAt)
SELECT ?1, ?3, 0, d.DecisionId, ?4 FROM DecisionRequests AS d
WHERE d.DecisionId IN (SELECT value FROM json_each(?2)) AND d.TenantId = ?1 AND d.Status = 'pending'
    AND (d.ExpiresAt IS NULL OR d.ExpiresAt > ?4)`,
	waitChildren: `INSERT INTO RunWaits (TenantId, RunId, TargetKind, TargetId, CreatedAt)
SELECT ?1, ?3, 1, c.RunId, ?4 FROM Runs AS c
WHERE c.RunId IN (SELECT value FROM json_each(?2)) AND c.TenantId = ?1 AND c.State <> 2`,
	// closeWaits: one writer at a time, so the check needs no lock; the update's RETURNING
	// answers the runs made due (IX_RunWaits_Target, then PK_RunWaits). dropTargets follows.
	closeWaits: `WITH gone AS (
    SELECT w.RunId FROM RunWaits AS w
    WHERE w.TenantId = ?1 AND w.TargetKind = ?2 AND w.TargetId IN (SELECT value FROM json_each(?3))
)
UPDATE Runs SET DueAt = ?4, Version = ` + sqliteStamp + `
WHERE TenantId = ?1 AND RunId IN (SELECT RunId FROM gone) AND State = 0 AND DueAt > ?4
    AND NOT EXISTS (SELECT 1 FROM RunWaits AS x WHERE x.TenantId = ?1 AND x.RunId = Runs.RunId
        AND NOT (x.TargetKind = ?2 AND x.TargetId IN (SELECT value FROM json_each(?3))))
RETURNING RunId`,
	dropTargets: `DELETE FROM RunWaits WHERE TenantId = ?1 AND TargetKind = ?2 AND TargetId IN (SELECT value FROM json_each(?3))`,
	// waitLostDecisions: IX_Decisions_Attempt (the unary plus keeps the planner off the
	// tenant's status index, as in the decision store).
	waitLostDecisions: `INSERT INTO RunWaits (TenantId, RunId, TargetKind, TargetId, CreatedAt)
SELECT ?1, ?3, 0, d.DecisionId, ?4 FROM DecisionRequests AS d INDEXED BY IX_Decisions_Attempt
WHERE d.AttemptId = ?2 AND +d.TenantId = ?1 AND +d.Status = 'pending' AND (d.ExpiresAt IS NULL OR d.ExpiresAt > ?4)`,
	waitsOf: `SELECT TargetKind, TargetId, CAST(CreatedAt AS TEXT) AS CreatedAt FROM RunWaits WHERE TenantId = ?1 AND RunId = ?2
ORDER BY RunWaits.CreatedAt, TargetKind, TargetId LIMIT ?3`,

	expiredLeases: `SELECT RunId, TenantId, Epoch FROM Runs WHERE State = 1 AND LeasedUntil < ?1 AND LeasedUntil >= ?3
ORDER BY LeasedUntil LIMIT ?2`,
	overdueQueued: `SELECT RunId, TenantId FROM Runs WHERE State = 0 AND DeadlineAt IS NOT NULL AND DeadlineAt < ?1
    AND DeadlineAt >= ?3
ORDER BY DeadlineAt LIMIT ?2`,
}
