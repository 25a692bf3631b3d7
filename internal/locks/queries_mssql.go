package locks

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the task-run lock store. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it.

var mssqlQueries = queries{
	// getLock: PK seek WITH (UPDLOCK, HOLDLOCK): a missing lock's key range is locked too, so a
	// second acquire of the same missing lock waits and then answers lock_held (the 2627 path
	// remains, and fault injection runs it on SQLite).
	getLock: `SELECT TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt
FROM dbo.TaskRunLocks WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,

	// insertLock: 2627 (PK) -> ConflictError, the transaction stays usable.
	insertLock: `INSERT INTO dbo.TaskRunLocks (TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p6);`,

	// updateLock, deleteLock: PK seeks after getLock's U lock.
	updateLock: `UPDATE dbo.TaskRunLocks SET HolderId = @p4, HeldUntil = @p5, UpdatedAt = @p6
WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,

	deleteLock: `DELETE FROM dbo.TaskRunLocks WHERE TenantId = @p1 AND AgentId = @p2 AND TaskId = @p3;`,
}
