package checkpoints

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the checkpoint store; each dialect fills every field
// with a complete statement taking the numbered arguments listed here. Sequence and Phase
// arguments are int32 (the seed's int), so SQL Server compares them without converting the
// column.
type queries struct {
	// bySequence: 1 tenant, 2 attempt, 3 sequence -> the checkpoint's columns and
	// AttemptToken (the attempt's FencingToken); no row when either is missing or another
	// tenant's.
	bySequence string
	// get: 1 tenant, 2 attempt, 3 checkpoint -> the checkpoint's columns.
	get string
	// insert: 1 checkpoint, 2 attempt, 3 tenant, 4 sequence, 5 phase, 6 adapter state ref,
	// 7 adapter version, 8 context snapshot ref (or NULL), 9 hash, 10 created at.
	insert string
	// list: 1 tenant, 2 attempt, 3 after sequence, 4 limit -> checkpoints in sequence order.
	list string
	// lastOfRun: 1 tenant, 2 run -> the checkpoint with the highest sequence of the run's
	// newest attempt (highest FencingToken) that has any, with RunId; no row when none has.
	lastOfRun string
	// runLink: 1 tenant, 2 run -> ContinuedFromRunId (NULL for a run that continues none) and
	// ForkedFromCheckpointId (NULL unless the run is a fork); no row when the run is missing
	// or another tenant's.
	runLink string
	// forkPoint: 1 tenant, 2 checkpoint -> the checkpoint with its attempt's RunId; no row
	// when it is gone (retention purged the run it belonged to).
	forkPoint string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }

const columns = `CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion, ContextSnapshotRef,
Hash, CreatedAt`

// sqliteColumns and sqliteCColumns are columns and cColumns as SQLite's statements answer
// them: CreatedAt as text, which the scan parses (sqldb.ParseTimeText), not the driver.
const (
	sqliteColumns = `CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion, ContextSnapshotRef,
Hash, CAST(CreatedAt AS TEXT) AS CreatedAt`
	sqliteCColumns = `c.CheckpointId, c.AttemptId, c.TenantId, c.Sequence, c.Phase, c.AdapterStateRef, c.AdapterVersion,
c.ContextSnapshotRef, c.Hash, CAST(c.CreatedAt AS TEXT) AS CreatedAt`
)

// cColumns are columns for a statement where the table is aliased c.
const cColumns = `c.CheckpointId, c.AttemptId, c.TenantId, c.Sequence, c.Phase, c.AdapterStateRef, c.AdapterVersion,
c.ContextSnapshotRef, c.Hash, c.CreatedAt`
