package tenancy

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the tenancy store; each dialect fills every field.
type queries struct {
	ensureTenant string // 1 tenant, 2 max leased, 3 now
	insertKey    string // 1 key id, 2 tenant, 3 role, 4 secret hash, 5 now, 6 label or NULL
	listKeys     string // 1 tenant or ''
	revokeKey    string // 1 key id, 2 now
	setMaxLeased string // 1 tenant, 2 n
	getTenant    string // 1 tenant
	countTenants string
	listTenants  string
	getKey       string // 1 key id
	touchKey     string // 1 key id, 2 now, 3 now less the resolution
	liveKeyIDs   string // the ids of the keys not revoked
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
