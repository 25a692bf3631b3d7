package schedules

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the schedule store and its scheduler; each dialect fills
// every field.
type queries struct {
	// get: 1 tenant, 2 schedule -> scheduleColumns (the schedule with its firing state).
	get string
	// insert: 1 tenant, 2 schedule, 3 cron, 4 timezone, 5 run spec, 6 overlap, 7 catchup
	// seconds, 8 paused, 9 description, 10 now, 11 updated by.
	insert string
	// insertState: 1 tenant, 2 schedule, 3 next fire at (NULL: paused).
	insertState string
	// update: 1 tenant, 2 schedule, 3 cron, 4 timezone, 5 run spec, 6 overlap, 7 catchup
	// seconds, 8 paused, 9 description, 10 now, 11 updated by, 12 expected version.
	update string
	// reschedule: 1 tenant, 2 schedule, 3 next fire at (NULL: paused).
	reschedule string
	// list: 1 tenant, 2 after schedule id, 3 limit -> scheduleColumns in id order.
	list string
	// project: 1 tenant, 2 project -> how many (0 or 1) projects of the tenant have the id.
	project string
	// deleteState, delete: 1 tenant, 2 schedule.
	deleteState string
	delete      string
	// firings: 1 tenant, 2 key prefix (schedule:{id}:), 3 the prefix's upper bound
	// (schedule:{id};), 4 limit -> RunId, IdempotencyKey of the schedule's runs, newest
	// firing first (the key ends with the fire time, which sorts as time).
	firings string
	// due: 1 now, 2 limit -> TenantId, ScheduleId, NextFireAt of due schedules of every
	// tenant, oldest first (the schedulers' scan; maintenance scope).
	due string
	// advance: the firing's conditional write. 1 tenant, 2 schedule, 3 expected next fire
	// at, 4 new next fire at (NULL: none), 5 skipped by catch-up, 6 skipped by overlap, 7
	// fired (0 or 1), 8 last fire at (NULL: keep). No row: another scheduler took it.
	advance string
	// setLastRun: 1 tenant, 2 schedule, 3 run.
	setLastRun string
}

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }
