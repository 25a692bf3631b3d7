package history

// The SQL Server query set of the history reads. Every statement takes @p1..@pN in the
// order queries.go documents (the same list the SQLite statement gets) and is one read.
//
// Nothing here can be run on our machines: each statement carries its reading check
// (TSQL.md, last section): index, locks, READ_COMMITTED_SNAPSHOT (RCSI), 0 rows, errors.
// Conventions that hold for every statement below:
//   - Reads only, in db.Read's READ COMMITTED transaction and tenant scope: row-level
//     security (dbo.fn_TenantAccess) adds a residual predicate on TenantId, and every
//     statement filters on TenantId itself.
//   - No locking hints: under RCSI each statement reads the committed image as of its start
//     and takes no row locks; without RCSI it takes short S locks (released row by row) and
//     waits for an uncommitted writer of a row it reaches. Neither can deadlock with a writer
//     (a reader holds no lock a writer waits for beyond one row).
//   - Arguments: a time.Time arrives as datetimeoffset(7), a uuid.UUID as its string, a NULL
//     as nvarchar(1), a row version as varbinary (CAST to binary(8) below); every comparison
//     converts the argument to the column's type (datetimeoffset, uniqueidentifier, int,
//     binary(8)), never the column, so the index seeks stand.
//   - AttemptId and the other uniqueidentifier keys order as SQL Server orders them (last 6
//     bytes first), which is the index order; keysets round-trip them and compare in that
//     same order, so pages neither skip nor repeat (the order differs from SQLite's text
//     order, which no client may rely on: cursors are opaque).
//   - maxTime (9999-12-31T23:59:59.999Z) and maxID (FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF,
//     the largest uniqueidentifier in SQL Server's order too) stand in for "no cursor";
//     minID (all zeros, the smallest in both orders) turns a time into an exclusive bound.
//   - SESSION_CONTEXT in parallel plans (TSQL.md; a documented SQL Server issue: wrong
//     results or an access violation when the RLS predicate's SESSION_CONTEXT is evaluated
//     in a parallel plan on a reset pooled session): the lists, the change feed and the
//     timeline can read many rows, so each carries OPTION (MAXDOP 1). They are index-ordered
//     seeks that stop after a page (TOP), which gain nothing from parallelism; the by-id
//     reads are a page of key seeks and get serial plans anyway.
//   - Errors: none expected beyond the transport's; OPENJSON needs compatibility level 130
//     (Msg 208 below it, as for the claim); 1205/1222 -> sqldb.ErrRetryable (only possible
//     without RCSI, and a read is retried as a whole). 0 rows is an empty page, never an
//     error.
var mssqlQueries = queries{
	// listByTenant: IX_Attempts_Tenant_Started (TenantId, StartedAt, AttemptId), pinned with
	// an INDEX hint so the page is always a backward range seek in the index order (no sort,
	// TOP stops after @p9 rows: the cost does not grow with the depth of the cursor), with a
	// key lookup into PK_ExecutionAttempts per row for the other columns. Seek predicates:
	// TenantId = @p1, @p5 <= StartedAt <= @p6 (the bound: cursor or startedTo, see
	// queries.go); residual: the bound's "StartedAt < @p6 OR AttemptId < @p7", true for every
	// row but those at the bound's very time, and the catch-all filters (a selective agentId/projectId/state filter therefore reads the
	// tenant's rows in the started range until the page fills; narrow it with startedFrom/To
	// or runId, which seeks its own index). The plan is the same for every combination of
	// filters, so the cached plan is right and no RECOMPILE is needed.
	listByTenant: `SELECT TOP (@p8) ` + attemptColumns + `
FROM dbo.ExecutionAttempts WITH (INDEX (IX_Attempts_Tenant_Started))
WHERE TenantId = @p1 AND StartedAt >= @p5 AND StartedAt <= @p6
    AND (StartedAt < @p6 OR AttemptId < @p7)
    AND (@p2 IS NULL OR State = @p2) AND (@p3 IS NULL OR AgentId = @p3) AND (@p4 IS NULL OR ProjectId = @p4)
ORDER BY StartedAt DESC, AttemptId DESC
OPTION (MAXDOP 1);`,

	// listByRun: IX_Attempts_Run_Step (RunId, StepId) seek on RunId, key lookups, then a sort
	// of that run's attempts (one per claim: at most a few hundred) and TOP. TenantId and
	// the rest are residual. 0 rows: another tenant's run looks empty, as a missing one.
	listByRun: `SELECT TOP (@p9) ` + attemptColumns + `
FROM dbo.ExecutionAttempts WITH (INDEX (IX_Attempts_Run_Step))
WHERE RunId = @p2 AND TenantId = @p1 AND StartedAt >= @p6 AND StartedAt <= @p7
    AND (StartedAt < @p7 OR AttemptId < @p8)
    AND (@p3 IS NULL OR State = @p3) AND (@p4 IS NULL OR AgentId = @p4) AND (@p5 IS NULL OR ProjectId = @p5)
ORDER BY StartedAt DESC, AttemptId DESC
OPTION (MAXDOP 1);`,

	// changesCap: MIN_ACTIVE_ROWVERSION() (binary(8)): the lowest rowversion of a transaction
	// that has not committed, or @@DBTS + 1 when none is active. rowversion is stamped when a
	// row is written, not when it commits, so a row with a smaller Version can commit after a
	// reader saw larger ones; capping the page below this value means such a row is never
	// skipped: it is returned by a later call. It is read in its own statement, BEFORE the
	// page: under RCSI the page statement's snapshot is taken after the cap was read, so
	// every transaction that committed a Version below the cap is in it (read in the same
	// statement, a transaction committing between the snapshot and the function call could
	// fall below the cap and outside the snapshot). Not affected by the isolation level;
	// takes no locks; always one row.
	changesCap: `SELECT MIN_ACTIVE_ROWVERSION();`,

	// changes: IX_Attempts_Tenant_Version (TenantId, Version, AttemptId), pinned; a forward
	// range seek TenantId = @p1, @p2 <= Version < @p4 (rowversion is unique per database, so
	// the AttemptId half of the keyset only matters to keep the statement the same as
	// SQLite's), key lookups for the other columns, TOP in index order (no sort). Rows an
	// active transaction is writing carry a Version at or above the cap, outside the range;
	// without RCSI the seek may still wait briefly on the index entry such a writer is moving
	// out of the range (its old Version), never on a row it returns. Under RCSI no locks.
	// Purged rows are gone and never appear. 0 rows: nothing changed (yet).
	changes: `SELECT TOP (@p5) ` + attemptColumns + `
FROM dbo.ExecutionAttempts WITH (INDEX (IX_Attempts_Tenant_Version))
WHERE TenantId = @p1 AND Version >= CAST(@p2 AS binary(8))
    AND (Version > CAST(@p2 AS binary(8)) OR AttemptId > @p3)
    AND Version < CAST(@p4 AS binary(8))
ORDER BY Version, AttemptId
OPTION (MAXDOP 1);`,

	// timeline: one UNION ALL, each branch a seek of its table's AttemptId index:
	// UX_Checkpoints_Attempt_Sequence, UX_Calls_Attempt_Sequence, IX_Decisions_Attempt
	// (AttemptId, RequestedAt: a range seek on the time too, in index order, the clustered
	// key DecisionId being the index's last key part, so the branch's ORDER BY needs no sort
	// and its TOP stops after a page), IX_Delegations_Attempt (AttemptId, CreatedAt:
	// likewise), with PK lookups for TenantId and, for checkpoints and calls, the time. The
	// keyset (At, Kind, Seq, Id) > (@p3, @p4, @p5, @p6) is spelled out per branch with the
	// branch's Kind as a constant; "At >= @p3" leads so the time-ordered branches seek from
	// the cursor. Each branch keeps at most a page (TOP (@p7) in its own order: a derived
	// table, since ORDER BY in a UNION member needs TOP), and the outer TOP (@p7) ORDER BY
	// sorts at most four pages. Checkpoints and calls have no (AttemptId, time) index in the
	// schema, so their branches read every row of the attempt in that table (a Top N Sort
	// keeps a page; (AttemptId, Sequence) is unique, so (time, Sequence) orders those two
	// branches totally): a page costs O(the attempt's checkpoints and calls); an index
	// (AttemptId, CreatedAt, Sequence) on Checkpoints and (AttemptId, StartedAt, Sequence) on
	// CallRecords would make each branch an ordered seek that stops after a page, with no
	// change here. Kind: 0 checkpoint, 1 call, 2 decision, 3 delegation; Seq is 0 for kinds
	// without a sequence. Types agree across branches: At datetimeoffset, Kind and Seq int,
	// Id uniqueidentifier. 0 rows: the end of the timeline.
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

	// TimelineEntry rows by id: OPENJSON(@p2) yields at most one page of ids (nvarchar [value], cast
	// to uniqueidentifier; @p2 is declared nvarchar(max) whatever the page's size,
	// sqldb.Dialect.JSON, so one plan serves every size), each a seek of the table's clustered primary key; TenantId
	// residual. 0 rows: the entries were purged between the two statements (under RCSI each
	// statement has its own snapshot); the page omits them.
	checkpoints: `SELECT ` + checkpointColumns + ` FROM dbo.Checkpoints
WHERE CheckpointId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1;`,
	calls: `SELECT ` + callColumns + ` FROM dbo.CallRecords
WHERE CallId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1;`,
	delegations: `SELECT ` + delegationColumns + ` FROM dbo.SubAgentDelegations
WHERE DelegationId IN (SELECT CAST(j.[value] AS uniqueidentifier) FROM OPENJSON(@p2) AS j) AND TenantId = @p1;`,
}
