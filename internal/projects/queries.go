package projects

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the project store; each dialect fills every field.
type queries struct {
	get    string // 1 tenant, 2 project
	insert string // 1 tenant, 2 project, 3 active, 4 retention days, 5 now
	update string // 1 tenant, 2 project, 3 active, 4 retention days, 5 now, 6 expected version
	list   string // 1 tenant, 2 after project id, 3 limit
}

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &mssqlQueries, &sqliteQueries) }
