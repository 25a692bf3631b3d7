package runs

import "github.com/ledger-dev/ledger/internal/sqldb"

// queries is the statement set of the run-lease core; each dialect fills every field with
// complete statements taking the numbered arguments listed here.
type queries struct {
	insert          string // 1 run, 2 tenant, 3 project, 4 environment, 5 subject, 6 kind, 7 agent, 8 step, 9 snapshot, 10 input, 11 band, 12 epoch, 13 attempt, 14 max attempts, 15 max corrections, 16 now, 17 due, 18 deadline, 19 idempotency key, 20 parent, 21 depth, 22 continued from, 23 created by
	get             string // 1 tenant, 2 run
	lock            string // 1 tenant, 2 run: get, holding the row until commit
	byIdempotency   string // 1 tenant, 2 key
	continuation    string // 1 tenant, 2 continued-from run
	tombstone       string // 1 tenant, 2 idempotency key -> RunId, PurgedAt of a purged run
	projectActive   string // 1 tenant, 2 project -> Active
	lockTenant      string // 1 tenant -> MaxLeasedRuns, holding the row until commit
	countLeased     string // 1 tenant -> leased runs
	claimCandidates [3]string
	lease           string // 1 tenant, 2 run, 3 holder, 4 lease seconds, 5 leased until
	projectLeased   string // 1 tenant, 2 project, 3 delta (+1 or -1)
	heartbeat       string // 1 run, 2 epoch, 3 leased until, 4 lease seconds
	requeue         string // 1 run, 2 epoch, 3 due, 4 attempt, 5 expired before (NULL: any)
	endLeased       string // 1 run, 2 epoch, 3 outcome, 4 ended at, 5 attempt, 6 expired before (NULL: any)
	endQueued       string // 1 run, 2 outcome, 3 ended at
	requestCancel   string // 1 run, 2 now
	list            string // 1 tenant, 2 state, 3 subject, 4 project, 5 kind, 6 cursor queued at, 7 cursor run, 8 limit, 9 agent, 10 queued from
	expiredLeases   string // 1 now, 2 limit -> RunId, TenantId, Epoch
	overdueQueued   string // 1 now, 2 limit -> RunId, TenantId

	getLock    string // 1 tenant, 2 agent, 3 task
	insertLock string // 1 tenant, 2 agent, 3 task, 4 holder, 5 held until, 6 now
	updateLock string // 1 tenant, 2 agent, 3 task, 4 holder, 5 held until, 6 now
	deleteLock string // 1 tenant, 2 agent, 3 task
}

// Claim candidate arguments, the same for the three band groups:
// 1 tenant, 2 now, 3 aged cutoff (now - band aging), 4 fairness window, 5 kinds (JSON array
// or NULL), 6 agent ids (JSON or NULL), 7 project ids (JSON or NULL), 8 run to skip (or NULL).

func queriesFor(d sqldb.Dialect) *queries {
	if d.Name() == "sqlserver" {
		return &mssqlQueries
	}
	return &sqliteQueries
}

const runColumns = `RunId, TenantId, ProjectId, EnvironmentId, Subject, Kind, AgentId, StepId, SnapshotId, Input, Band,
State, Epoch, HolderId, LeaseSeconds, LeasedUntil, Attempt, MaxAttempts, MaxCorrections, QueuedAt, DueAt, DeadlineAt,
EndedAt, Outcome, ErrorCode, ErrorMessage, CancelRequestedAt, IdempotencyKey, ParentRunId, Depth, ContinuedFromRunId,
CreatedBy, Version`

// agreementQueries find attempts and runs that disagree (seed 003's review_job_run_agrees,
// for attempts): a running attempt whose run is not leased at its token, and a leased run
// without exactly one running attempt. Plain SQL that both dialects accept.
var agreementQueries = []string{
	`SELECT COUNT(*) FROM ExecutionAttempts a JOIN Runs r ON r.RunId = a.RunId
WHERE a.State = 0 AND (r.State <> 1 OR r.Epoch <> a.FencingToken)`,
	`SELECT COUNT(*) FROM Runs r WHERE r.State = 1
AND (SELECT COUNT(*) FROM ExecutionAttempts a WHERE a.RunId = r.RunId AND a.State = 0 AND a.FencingToken = r.Epoch) <> 1`,
	`SELECT COUNT(*) FROM Runs r WHERE r.State <> 1
AND EXISTS (SELECT 1 FROM ExecutionAttempts a WHERE a.RunId = r.RunId AND a.State = 0)`,
}
