// Package client is the Go SDK of the ledger service: a typed Client for every route, a
// Worker that turns an agent runtime into a handler function, and the Lease a handler
// writes under.
//
// # Client
//
// New makes a Client (WithBaseURL, WithKey, WithHTTPClient, WithUserAgent, WithRetry,
// WithPolling). Each route is a method taking a context.Context and the wire types of
// package api. Collections are read a page at a time (ListRuns, ListAttempts, …) or as
// iterators that follow nextCursor (Runs, Attempts, Changes, Decisions, …):
//
//	for run, err := range c.Runs(ctx, api.ListRunsParams{State: api.Ptr(api.RunQueued)}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(run.RunID, run.Subject)
//	}
//
// An error answer is a *Problem (status, code, detail, field errors, Retry-After), and
// errors.Is matches it against the sentinel of its code: errors.Is(err, client.ErrStaleLease).
// A call that got no answer fails with a *TransportError.
//
// # Retries
//
// A call is sent again, with exponential backoff and jitter (RetryPolicy), when it failed in
// a way that may pass, and only when sending it again cannot do its work twice:
//
//   - After a 429 every call is retried, no sooner than its Retry-After: the service's limits
//     refuse a request before any of it runs. So is a call whose connection could not be
//     made, since nothing reached the service.
//   - After a 502, 503 or 504 or a lost answer, only calls that are safe to repeat: reads;
//     EnqueueRun and Delegate with an idempotency key (a repeat answers the run or the
//     delegation made); the fenced writes the service answers idempotently (AppendCheckpoint
//     and RecordCall by sequence and hash, FinishCall, CompleteAttempt, ReleaseAttempt,
//     Heartbeat, ObserveCancellation, PatchAttempt without a correction); CancelRun,
//     ContinueRun, AcquireLock, ReleaseLock, and PutRelease (a repeat of a registration
//     answers the release).
//   - If-Match updates (AnswerDecision, PutProject and PutRelease with an ETag, FinishCall
//     with one) are retried too, but a repeat of one that applied is refused (412, or
//     decision_closed): when an earlier try may have reached the service, that refusal also
//     matches ErrMaybeApplied, and only a read tells what happened. UpdateProject,
//     UpdateRelease and AnswerPending read the ETag for you; the Update helpers read and
//     change again after a 412.
//   - Never after the request may have reached the service: ClaimRun (a lost answer may hold
//     a lease, which then passes), RequestDecision (it would ask twice), EnqueueRun and
//     Delegate without an idempotency key (a second run), PatchAttempt with a correction
//     (counted twice), PutProject creating a project (its repeat is refused as an update
//     without If-Match), and Readyz (it reports the moment).
//
// # Worker and Lease
//
// A Worker claims runs (long-polling, waiting out budget holds), runs a Handler for each
// with a concurrency limit, renews each lease at about a third of its length, and ends the
// attempt as the handler's return says: nil completes it as succeeded, Permanent(err) as
// failed, another error releases the run for another try, and a return after the run was
// cancelled completes it as cancelled. The handler's context ends with cause ErrLeaseLost
// when the lease is lost (after which the Lease sends nothing), ErrCancelRequested when an
// admin cancels the run, and ErrShutdown when the Worker's shutdown grace runs out (its lease
// is then released uncharged).
//
// The Lease binds the attempt and its fencing token to every write: Checkpoint (sequences
// continue from Resume, the last checkpoint of the run's chain, so a reclaimed or continued
// run carries on where it stopped), RecordCall and FinishCall (or Call around the work),
// SetPhase, Decide (ask a person and wait for the answer), Delegate and WaitDelegation.
//
// Waiting without a lease: Decide asks under an idempotency key derived from the run's
// step and waits at most WorkerConfig.ParkAfter (default 30 s); past it, or as soon as the
// Worker stops (SIGTERM), it parks the run on the decision (Lease.Park) and returns
// ErrParked, which the handler returns: the run holds no lease, worker or budget while a
// person decides, and is claimed again when the answer comes, when the same Decide call
// returns it at once. DelegateStep and WaitChildren do the same for sub-agents.
//
// See the Worker example for a whole runtime, and examples/worker in the repository for a
// runnable one.
package client
