package locks

// The SQL Server query set of the lock store. Every statement takes @p1..@pN in the order
// queries.go documents (the same argument list the SQLite statement gets). The conventions
// and the error table of internal/runs/queries_mssql.go hold here too.

var mssqlQueries = queries{
	// getLock: PK_TaskRunLocks seek WITH (UPDLOCK, HOLDLOCK, ROWLOCK). UPDLOCK holds the row
	// until commit, so release's check-then-delete and acquire's check-then-update cannot
	// interleave with another acquire. HOLDLOCK (serializable for this table only) matters
	// when the lock row is missing: it takes a RangeS-U lock on the key range where the row
	// would go, and RangeS-U conflicts with RangeS-U, so a second acquire of the same
	// missing lock waits here until the first commits, then reads its row and answers
	// lock_held (instead of both inserting and the second failing with 2627, which the Go
	// code still handles, and which fault injection exercises on SQLite). The range may cover
	// neighbouring missing keys of the same tenant's gap: those acquires wait briefly too.
	// Under RCSI these hints make it a locking read. 0 rows -> ErrNotFound. Errors:
	// 1205/1222 -> ErrRetryable.
	getLock: `SELECT TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt
FROM dbo.TaskRunLocks WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,

	// insertLock: X on the new PK_TaskRunLocks key (RangeI-N within the range getLock
	// locked). Errors: 2627 (PK) -> ConflictError, the transaction stays usable; 547 FK
	// (tenant) -> ErrBadReference; 33504 -> ErrRefused.
	insertLock: `INSERT INTO dbo.TaskRunLocks (TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p6);`,

	// updateLock: PK seek, after getLock's U lock: exactly one row (exec1).
	updateLock: `UPDATE dbo.TaskRunLocks SET HolderId = @p4, HeldUntil = @p5, UpdatedAt = @p6
WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,

	// deleteLock: PK seek, after getLock's U lock. 0 rows is not an error.
	deleteLock: `DELETE FROM dbo.TaskRunLocks WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,
}
