package locks

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

// SQLite runs one writer at a time (immediate transactions), so nothing here takes a lock:
// acquire's check-then-insert cannot interleave with another acquire's.

var sqliteQueries = queries{
	getLock: `SELECT TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt FROM TaskRunLocks
WHERE TenantId = ?1 AND AgentId = ?2 AND TaskId = ?3`,
	insertLock: `INSERT INTO TaskRunLocks (TenantId, AgentId, TaskId, HolderId, HeldUntil, CreatedAt, UpdatedAt)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)`,
	updateLock: `UPDATE TaskRunLocks SET HolderId = ?4, HeldUntil = ?5, UpdatedAt = ?6
WHERE TenantId = ?1 AND AgentId = ?2 AND TaskId = ?3`,
	deleteLock: `DELETE FROM TaskRunLocks WHERE TenantId = ?1 AND AgentId = ?2 AND TaskId = ?3`,
}
