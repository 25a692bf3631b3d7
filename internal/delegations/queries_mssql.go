package delegations

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the delegation store. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. dbo.SubAgentDelegations has no
// trigger; the Runs statements here only read. PK_SubAgentDelegations is clustered on
// DelegationId, so IX_Delegations_Attempt is in effect (AttemptId, CreatedAt, DelegationId).
//
// Lock order: a create locks the attempt, then the parent run (the fence), then writes the
// child run and last the delegation row. The hook runs in transactions that hold the child
// run and touches the delegation row last. Nothing takes a delegation row and then asks for
// a run or attempt, so no cycle goes through it.

var mssqlQueries = queries{
	// insert: under the fence, after the child run. 547 FK -> ErrBadReference (not expected).
	insert: `INSERT INTO dbo.SubAgentDelegations (DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth,
    Status, CreatedAt)
OUTPUT inserted.DelegationId, inserted.AttemptId, inserted.TenantId, inserted.ChildRunId, inserted.ChildAgentId,
    inserted.Purpose, inserted.Depth, inserted.Status, inserted.CreatedAt, inserted.Version
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9);`,

	// get: PK seek. 0 rows: missing or another tenant's.
	get: `SELECT ` + columns + ` FROM dbo.SubAgentDelegations WHERE TenantId = @p1 AND DelegationId = @p2;`,

	// byChildRun: UX_Delegations_ChildRun seek. In the hook every writer of this delegation holds
	// the run it follows, so a plain read is current. 0 rows: not a delegated child.
	byChildRun: `SELECT ` + columns + ` FROM dbo.SubAgentDelegations WHERE TenantId = @p1 AND ChildRunId = @p2;`,

	// listByAttempt: IX_Delegations_Attempt seek in key order (no sort), TOP (@p5); RECOMPILE
	// makes the cursor a seek bound.
	listByAttempt: `SELECT TOP (@p5) ` + columns + ` FROM dbo.SubAgentDelegations
WHERE TenantId = @p1 AND AttemptId = @p2
    AND (@p3 IS NULL OR CreatedAt > @p3 OR (CreatedAt = @p3 AND DelegationId > @p4))
ORDER BY CreatedAt, DelegationId
OPTION (RECOMPILE, MAXDOP 1);`,

	// listByRun: the run page's children in one read: IX_Attempts_Run_Step seek on RunId,
	// an IX_Delegations_Attempt seek per attempt, PK lookups, a sort of the run's
	// delegations, TOP (@p3).
	listByRun: `SELECT TOP (@p3) ` + prefixed("d.") + ` FROM dbo.ExecutionAttempts a
JOIN dbo.SubAgentDelegations d ON d.AttemptId = a.AttemptId
WHERE a.RunId = @p2 AND a.TenantId = @p1 AND d.TenantId = @p1
ORDER BY d.CreatedAt, d.DelegationId
OPTION (MAXDOP 1);`,

	// setStatus: PK seek, in the transaction that moves the child run; "Status <> @p3" keeps a
	// repeat from stamping a new rowversion. 0 rows: already @p3.
	setStatus: `UPDATE dbo.SubAgentDelegations SET Status = @p3
WHERE TenantId = @p1 AND DelegationId = @p2 AND Status <> @p3;`,

	// runByIdempotencyKey: UX_Runs_Idempotency seek (filter repeated), covering; read after the
	// fence refused a create (its repeat check). 0 rows: nothing to repeat.
	runByIdempotencyKey: `SELECT RunId FROM dbo.Runs WHERE TenantId = @p1 AND IdempotencyKey = @p2 AND IdempotencyKey IS NOT NULL;`,

	// continuedFrom: PK_Runs seek; the link never changes. 0 rows: purged, the walk stops.
	continuedFrom: `SELECT ContinuedFromRunId FROM dbo.Runs WHERE TenantId = @p1 AND RunId = @p2;`,

	// delegatedSiblings (the hook, for a continuation): IX_Runs_Parent_Subject seek on (tenant,
	// parent, subject), covering (RunId is the clustered key), then UX_Delegations_ChildRun per
	// chain run; LOOP JOIN keeps that order. A child run's ParentRunId is the delegating
	// attempt's run (delegations.Create) and never changes, so no attempt row is read. Without
	// RCSI the S locks fall on this chain's index keys and delegation rows only, never on
	// another subject's child run: a claim of one continuation no longer waits on a sibling a
	// complete holds (the deadlock of issue 18 item 7). Other writers of these keys change this
	// subject's queue and so hold the subject lock this transaction holds. 0 rows: not delegated.
	// The literal `c.ParentRunId IS NOT NULL` matches the index's filter (migration 36): a
	// filtered index is matched by the statement's literals, not derived from a parameter.
	delegatedSiblings: `SELECT d.DelegationId, d.ChildRunId, d.Status
FROM dbo.Runs AS c
INNER LOOP JOIN dbo.SubAgentDelegations AS d ON d.ChildRunId = c.RunId
WHERE c.TenantId = @p1 AND c.ParentRunId = @p2 AND c.ParentRunId IS NOT NULL AND c.Subject = @p3 AND d.TenantId = @p1;`,
}
