package releases

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the release store; each dialect fills every field with a
// complete statement taking the numbered arguments listed here.
type queries struct {
	get             string // 1 tenant, 2 release, 3 adapter version
	lock            string // 1 tenant, 2 release, 3 adapter version: get, holding the row until commit
	insert          string // 1 release, 2 adapter version, 3 tenant, 4 manifest hash, 5 content refs (canonical JSON), 6 state, 7 verified at, 8 in-flight policy (NULL: drain)
	update          string // 1 tenant, 2 release, 3 adapter version, 4 state, 5 in-flight policy, 6 expected version
	list            string // 1 tenant, 2 state (NULL: any), 3 after release, 4 after adapter version, 5 limit
	runningAttempts string // 1 tenant, 2 release, 3 adapter version -> AttemptId of each running attempt, in id order
	// ownerIs: 1 release, 2 tenant -> Mine (1 when the tenant owns the release id, else 0);
	// no row when no tenant owns it. Holds the ownership key (or its absence) until commit.
	ownerIs string
	// claimOwner: 1 release, 2 tenant, 3 now: the tenant becomes the release id's owner.
	claimOwner string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }

const columns = `ReleaseId, AdapterVersion, TenantId, ManifestHash, ContentRefsJson, State, VerifiedAt, InFlightPolicy, Version`

// conflictMarkers name the primary key of LoadedReleases in a unique-violation message:
// the constraint on SQL Server, the column list on SQLite.
var conflictMarkers = []string{"PK_LoadedReleases", "LoadedReleases.ReleaseId, LoadedReleases.AdapterVersion"}

// ownerMarkers name the primary key of ReleaseOwners in a unique-violation message.
var ownerMarkers = []string{"PK_ReleaseOwners", "ReleaseOwners.ReleaseId"}
