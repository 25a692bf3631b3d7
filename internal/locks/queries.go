package locks

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the lock store; each dialect fills every field.
type queries struct {
	getLock    string // 1 tenant, 2 agent, 3 task
	insertLock string // 1 tenant, 2 agent, 3 task, 4 holder, 5 held until, 6 now
	updateLock string // 1 tenant, 2 agent, 3 task, 4 holder, 5 held until, 6 now
	deleteLock string // 1 tenant, 2 agent, 3 task
}

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &mssqlQueries, &sqliteQueries) }
