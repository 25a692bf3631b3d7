package console

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the console's session store; each dialect fills every
// field.
type queries struct {
	insert        string // 1 tenant, 2 session hash, 3 key id, 4 now, 5 expires at
	get           string // 1 tenant, 2 session hash, 3 now -> KeyId, Role, ExpiresAt (only with its key unrevoked)
	delete        string // 1 tenant, 2 session hash
	deleteExpired string // 1 tenant, 2 now: up to 100 expired sessions of the tenant
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
