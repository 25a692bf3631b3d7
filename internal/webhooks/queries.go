package webhooks

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the webhook store; each dialect fills every field.
type queries struct {
	getEndpoint    string // 1 tenant, 2 name
	insertEndpoint string // 1 tenant, 2 name, 3 url, 4 events, 5 active, 6 description, 7 secret, 8 now
	updateEndpoint string // 1 tenant, 2 name, 3 url, 4 events, 5 active, 6 description, 7 now, 8 expected version
	deleteEndpoint string // 1 tenant, 2 name
	rotateSecret   string // 1 tenant, 2 name, 3 new secret, 4 now, 5 old secret valid until
	listEndpoints  string // 1 tenant, 2 after name, 3 limit
	countEndpoints string // 1 tenant, 2 cap
	subscribed     string // 1 tenant, 2 cap: the active endpoints' names and events
	disable        string // 1 tenant, 2 name, 3 now
	insertDelivery string // 1 tenant, 2 id, 3 endpoint, 4 event, 5 payload, 6 now, 7 retry until
	due            string // 1 now, 2 limit, 3 busy tenants (JSON array)
	lease          string // 1 tenant, 2 id, 3 attempts seen, 4 now, 5 lease until
	record         string // 1 tenant, 2 id, 3 attempts leased, 4 status, 5 next, 6 code, 7 error, 8 delivered at
	getDelivery    string // 1 tenant, 2 id
	listDeliveries string // 1 tenant, 2 status, 3 event, 4 webhook, 5 before created, 6 before id, 7 limit
	redeliver      string // 1 tenant, 2 id, 3 now, 4 retry until
	purge          string // 1 delivered before, 2 batch
	oldestPending  string // (none)
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
