package runs

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the run-lease core; each dialect fills every field with
// complete statements taking the numbered arguments listed here. "-> run" means the
// statement answers with runColumns of the row it changed (no row: sqldb.ErrNotFound).
type queries struct {
	// insert: the columns of runTable that have an insert argument, in its order (insertArgs
	// builds them; today 1 run, 2 tenant, 5 subject, 19 idempotency key among them) -> Version
	// and SubjectHead. The new run is
	// marked the head at once when its subject has no other queued or leased run (then no
	// marker elsewhere can need a change); otherwise syncHead decides. Inserts nothing (no
	// row) when the idempotency key has a tombstone.
	insert string
	// insertKeyless: insert for a run without an idempotency key, which no tombstone can
	// match, so the same row without that test. Empty: insert serves (SQL Server). SQLite
	// copies an INSERT ... SELECT whose select reads Runs into a temporary table before
	// writing it; a VALUES row it writes as it is.
	insertKeyless string `sqllint:"optional"`
	get           string // 1 tenant, 2 run
	lock          string // 1 tenant, 2 run: get, holding the row until commit
	byIdempotency string // 1 tenant, 2 key
	continuation  string // 1 tenant, 2 continued-from run
	// forkPoint: 1 tenant, 2 run, 3 checkpoint -> the checkpoint's id when it is a checkpoint
	// of one of the run's attempts (no row otherwise).
	forkPoint string
	// chain: the continuation chain through a run in one read, up to 3 runs back (through
	// ContinuedFromRunId) and 3 forward (through the runs continuing it): 1 tenant, 2 run,
	// 3 limit each way -> runColumns and Pos (0 the run, negative before, positive after).
	chain     string
	tombstone string // 1 tenant, 2 idempotency key -> RunId, PurgedAt of a purged run

	// lockSubject: 1 lock resource -> the lock's result code (>= 0 granted). Empty where the
	// dialect serialises writers already (SQLite): no statement is sent.
	lockSubject string `sqllint:"optional"`
	// syncHead: 1 tenant, 2 subject: sets SubjectHead on the subject's head (its oldest queued
	// run when it has no leased run) and clears it everywhere else.
	syncHead string

	// claimStart: 1 tenant -> Now (the database clock, or NULL where the dialect reads none),
	// MaxLeasedRuns, LeasedCount; holds the tenant row until commit. No row: no tenant.
	claimStart string
	// claimCandidates are the claim's seeks in band order (DESIGN.md section 4): the claim
	// tries them in turn and takes the first pick. A dialect may fold the bands into one
	// statement that answers the first band's pick. Each answers the pick's RunId and
	// Subject; where the dialect fills leaseUnanswered instead of lease, the pick's whole row
	// with Version the stamp the lease will write.
	claimCandidates []string
	// lease: 1 tenant, 2 run, 3 holder, 4 lease seconds, 5 leased until -> run; no row unless
	// a queued head. leaseUnanswered is the same write answering nothing (its count: 0
	// unless a queued head), 6 the stamp its candidate answered, which it writes (an error
	// when that is no longer the next stamp), for a dialect whose candidate answered the run
	// and its stamp: nothing writes between the two there, and the claim sets what the lease
	// wrote itself. Each dialect fills one of the two.
	lease           string `sqllint:"optional"`
	leaseUnanswered string `sqllint:"optional"`
	tenantLeased    string // 1 tenant: +1, the row made when missing (only a claim can find it missing)
	projectLeased   string // 1 tenant, 2 project: +1, likewise
	tenantUnleased  string // 1 tenant: -1
	projectUnleased string // 1 tenant, 2 project: -1

	// fence: 1 tenant, 2 attempt -> the attempt's columns and the run's as run.<column>;
	// both rows held until commit, attempt first. fenceRunning: 1 tenant, 2 run, 3 token:
	// the same for the running attempt of a run at a token (the reaper).
	fence        string
	fenceRunning string
	// fenceWhole: as fence, for the writes whose first write ends the attempt (a complete, a
	// release): where the dialect can read the stamp that write takes, every column of the
	// attempt and the stamp as Stamp (attempts.EndWhole then answers nothing); elsewhere
	// the fence's columns. Where it reads the stamp, it also reads the run's leftColumns (as
	// run.<column>) and SubjectQueued, endLeased's probe (another run of the subject is
	// queued): requeueUnanswered and endLeasedUnanswered then answer nothing.
	fenceWhole string

	heartbeat string // 1 run, 2 epoch, 3 leased until, 4 lease seconds
	// requeue, endLeased and endQueued also write the run's error (code, message; NULL: none).
	// requeue and endLeased answer leftColumns (Kind, AgentId, ParentRunId, ContinuedFromRunId:
	// what leaveLease neither has from the fence nor wrote) and SubjectQueued.
	requeue   string // 1 run, 2 epoch, 3 due, 4 attempt, 5 expired before (NULL: any), 6 error code, 7 error message
	endLeased string // 1 run, 2 epoch, 3 outcome, 4 ended at, 5 attempt, 6 expired before (NULL: any), 7 error code, 8 error message
	// requeueUnanswered and endLeasedUnanswered: requeue and endLeased answering nothing
	// (their count), for the caller whose fence read the left columns and SubjectQueued
	// (fenceWhole); endLeasedUnanswered's 9 is that SubjectQueued, and it refuses
	// (sqldb.ErrRefused) when another run of the subject is queued and 9 said none. Filled
	// where fenceWhole reads them (SQLite).
	requeueUnanswered   string `sqllint:"optional"`
	endLeasedUnanswered string `sqllint:"optional"`
	endQueued           string // 1 run, 2 outcome, 3 ended at, 4 error code, 5 error message -> run
	requestCancel       string // 1 run, 2 now -> run
	// list: 1 tenant, 2 state, 3 subject, 4 project, 5 kind, 6 cursor queued at, 7 cursor
	// run, 8 limit, 9 agent, 10 queued from, 11 band, 12 outcome, 13 error code, 14 release
	// (its latest attempt's, as insights group runs), 15 ended from, 16 ended before, 17 tag,
	// 18 at least and 19 at most this many attempts (as the attempts-per-run insight counts),
	// 20 first claim's release (its first attempt's, as claim latency groups runs); NULL: any.
	list string
	// costHeld: 1 tenant, 2 now, 3 project ids (a JSON array; [] means any) -> 1 when a due
	// head waits in an active project whose cost counter of the day (now's UTC date) reached
	// its daily cost budget; no row otherwise.
	costHeld string
	// budgetHeld: 1 tenant, 2 project, 3 day ('YYYY-MM-DD') -> 1 when the project's cost
	// counter of the day reached its daily cost budget; no row otherwise.
	budgetHeld string
	// Parking (park.go). parkDecisions: 1 tenant, 2 decision ids (JSON array), 3 run -> how
	// many of them are decisions of the run's attempts. parkChildren: 1 tenant, 2 run ids, 3
	// run -> how many of them are the run's children. clearWaits: 1 tenant, 2 run. waitDecisions,
	// waitChildren: 1 tenant, 2 ids, 3 run, 4 now: a RunWaits row for each named decision still
	// pending (not past its ExpiresAt) or child not ended, read with a lock so that a close
	// committing meanwhile is waited for, not missed. closeWaits: 1 tenant, 2 kind, 3 ids, 4
	// now -> RunId of each run waiting on them with no other wait, made due at now (see
	// CloseWaits); dropTargets (1 tenant, 2 kind, 3 ids) then deletes the waits on them.
	// waitsOf: 1 tenant, 2 run, 3 limit. waitLostDecisions: 1 tenant, 2 attempt, 3 run, 4
	// now: a RunWaits row for each decision of the attempt still pending (the reaper's park).
	waitLostDecisions string
	parkDecisions     string
	parkChildren      string
	clearWaits        string
	waitDecisions     string
	waitChildren      string
	closeWaits        string
	dropTargets       string
	waitsOf           string

	// expiredLeases and overdueQueued read from 3, the database's clock floor (the year 1
	// without one): a test process's reaper leaves alone the rows of another whose clock
	// runs in an earlier range (sqldb.Config.ClockFloor).
	expiredLeases string // 1 now, 2 limit, 3 floor -> RunId, TenantId, Epoch
	overdueQueued string // 1 now, 2 limit, 3 floor -> RunId, TenantId
}

// Claim candidate arguments, the same for the three band groups: 1 tenant, 2 now, 3 aged
// cutoff (now - band aging), 4 fairness window, 5 kinds, 6 agent ids, 7 project ids (JSON
// arrays; [] means no filter), 8 runs to skip (a JSON array of ids, usually []) -> RunId,
// Subject.

// querySets holds the package's statement sets, one per dialect, each registered by its
// queries_<dialect>.go: a new dialect adds a file and edits none here.
var querySets sqldb.QuerySets[queries]

func queriesFor(d sqldb.Dialect) *queries { return sqldb.QueriesFor(d, &querySets) }

// agreementQueries find attempts and runs that disagree (seed 003's review_job_run_agrees,
// for attempts), head markers that are not their definition, and leased counts that are
// not the count of leased runs. Plain SQL that both dialects accept once rebound (sqlx
// Rebind); each takes a tenant twice ("? IS NULL OR ... = ?": NULL means every tenant) and
// answers one count, 0 when all agree. Tests and the crash test run them.
var agreementQueries = []string{
	// A running attempt whose run is not leased at its token.
	`SELECT COUNT(*) FROM ExecutionAttempts a JOIN Runs r ON r.RunId = a.RunId
WHERE a.State = 0 AND (r.State <> 1 OR r.Epoch <> a.FencingToken) AND (? IS NULL OR a.TenantId = ?)`,
	// A leased run without exactly one running attempt at its epoch.
	`SELECT COUNT(*) FROM Runs r WHERE r.State = 1 AND (? IS NULL OR r.TenantId = ?)
AND (SELECT COUNT(*) FROM ExecutionAttempts a WHERE a.RunId = r.RunId AND a.State = 0 AND a.FencingToken = r.Epoch) <> 1`,
	// A run out of its lease with a running attempt.
	`SELECT COUNT(*) FROM Runs r WHERE r.State <> 1 AND (? IS NULL OR r.TenantId = ?)
AND EXISTS (SELECT 1 FROM ExecutionAttempts a WHERE a.RunId = r.RunId AND a.State = 0)`,
	// A head marker that is not its definition: 1 exactly on the oldest queued run (QueuedAt,
	// then RunId) of a subject that has no leased run.
	`SELECT COUNT(*) FROM Runs r
WHERE (? IS NULL OR r.TenantId = ?) AND r.SubjectHead <> CASE WHEN r.State = 0
    AND NOT EXISTS (SELECT 1 FROM Runs l WHERE l.TenantId = r.TenantId AND l.Subject = r.Subject AND l.State = 1)
    AND NOT EXISTS (SELECT 1 FROM Runs o WHERE o.TenantId = r.TenantId AND o.Subject = r.Subject AND o.State = 0
        AND o.QueuedAt <= r.QueuedAt AND (o.QueuedAt < r.QueuedAt OR o.RunId < r.RunId))
    THEN 1 ELSE 0 END`,
	// A tenant's leased count that is not the number of its leased runs (a missing row is 0).
	`SELECT COUNT(*) FROM Tenants t
WHERE (? IS NULL OR t.TenantId = ?)
    AND COALESCE((SELECT x.LeasedCount FROM TenantLeases x WHERE x.TenantId = t.TenantId), 0)
    <> (SELECT COUNT(*) FROM Runs r WHERE r.TenantId = t.TenantId AND r.State = 1)`,
	// A project's leased count that is not the number of its leased runs.
	`SELECT COUNT(*) FROM Projects p
WHERE (? IS NULL OR p.TenantId = ?)
    AND COALESCE((SELECT x.LeasedCount FROM ProjectLeases x WHERE x.TenantId = p.TenantId AND x.ProjectId = p.ProjectId), 0)
    <> (SELECT COUNT(*) FROM Runs r WHERE r.TenantId = p.TenantId AND r.ProjectId = p.ProjectId AND r.State = 1)`,
}
