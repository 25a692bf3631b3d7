package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
)

// ErrLeaseLost is the cause of a handler's context when its lease is lost: a write or a
// heartbeat was refused with stale_lease, lease_expired or attempt_ended (or, for a
// heartbeat, not_found), or renewals kept failing until the lease had passed by this
// machine's clock. A lost Lease refuses every further write without sending it; the errors
// it returns match ErrLeaseLost and, when the service refused, the problem's sentinel too.
var ErrLeaseLost = errors.New("ledger: lease lost")

// ErrLeaseEnded is what a Lease returns for a write after the lease ended by this holder's
// own complete or release (the Worker's included): nothing more may be written under it.
var ErrLeaseEnded = errors.New("ledger: lease ended")

// ErrCancelRequested is the cause of a handler's context when an admin cancelled its run.
// The lease stays usable (a last checkpoint may be written); whatever the handler returns,
// the Worker completes the attempt as cancelled.
var ErrCancelRequested = errors.New("ledger: run cancel requested")

// ErrShutdown is the cause of a handler's context when the Worker's shutdown grace ran out:
// the lease was released uncharged and refuses further writes.
var ErrShutdown = errors.New("ledger: worker shutting down")

// leaseLossCodes are the refusals that mean the lease is gone for good; a heartbeat's
// not_found too (the attempt is gone), where another write's may name a missing record.
var (
	leaseLossCodes     = []api.ProblemCode{api.CodeStaleLease, api.CodeLeaseExpired, api.CodeAttemptEnded}
	heartbeatLossCodes = append(leaseLossCodes[:len(leaseLossCodes):len(leaseLossCodes)], api.CodeNotFound)
)

// Lease is one claimed run's lease: the fencing token bound to the attempt, and the writes
// a holder makes under it. Its methods are safe for concurrent use. A Worker hands one to
// each handler and keeps it renewed; NewLease makes one of a claim made by hand.
type Lease struct {
	c     *Client
	claim api.Claim
	// length is the lease's length, from the claim.
	length time.Duration

	// resumeMu serialises Resume's read, so that mu is never held across a call.
	resumeMu sync.Mutex

	mu              sync.Mutex
	ended           error // nil while usable; wraps ErrLeaseLost, ErrLeaseEnded or ErrShutdown
	onEnd           func(cause error)
	leasedUntil     time.Time
	cancelRequested bool
	resumed         bool
	last            *api.LastCheckpoint
	nextSeq         int32
	nextCallSeq     int32
	// parkAfter bounds Decide's and WaitChildren's wait before they park (0: the default);
	// stopping, when a Worker runs the lease, closes as the Worker stops (they park at once).
	parkAfter time.Duration
	stopping  <-chan struct{}
	// decides numbers Decide's calls without a Key.
	decides int
	// settles counts the completes and releases sent under the lease, settling those in
	// flight: a refusal that races this holder's own ending is not a loss.
	settles, settling int
}

// NewLease returns the Lease of a claim made with ClaimRun. Nothing renews it: call
// Heartbeat often enough, or use a Worker.
func NewLease(c *Client, claim api.Claim) *Lease {
	l := &Lease{c: c, claim: claim, leasedUntil: claim.Lease.LeasedUntil.Time}
	if s := claim.Run.LeaseSeconds; s != nil && *s > 0 {
		l.length = time.Duration(*s) * time.Second
	} else {
		// Both times are the service's clock, so their difference is the length whatever
		// this machine's clock says.
		l.length = claim.Lease.LeasedUntil.Sub(claim.Attempt.StartedAt.Time)
	}
	if l.length <= 0 {
		l.length = 30 * time.Second // the service's default lease
	}
	return l
}

// Run is the leased run as the claim returned it.
func (l *Lease) Run() api.Run { return l.claim.Run }

// Attempt is the attempt the claim started, as the claim returned it.
func (l *Lease) Attempt() api.Attempt { return l.claim.Attempt }

// RunID is the leased run's id.
func (l *Lease) RunID() uuid.UUID { return l.claim.Run.RunID }

// AttemptID is the attempt's id.
func (l *Lease) AttemptID() uuid.UUID { return l.claim.Attempt.AttemptID }

// FencingToken is the token every write under the lease presents.
func (l *Lease) FencingToken() int64 { return l.claim.Lease.FencingToken }

// Input is the run's input JSON (null when it has none).
func (l *Lease) Input() json.RawMessage { return l.claim.Run.Input }

// Length is the lease's length: how long each renewal extends it.
func (l *Lease) Length() time.Duration { return l.length }

// LeasedUntil is when the lease passes unless renewed, as the service last said.
func (l *Lease) LeasedUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leasedUntil
}

// CancelRequested reports whether a heartbeat has said that the run was cancelled.
func (l *Lease) CancelRequested() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cancelRequested
}

// Err is nil while the lease may be written under, and otherwise why not (matching
// ErrLeaseLost, ErrLeaseEnded or ErrShutdown).
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

// end makes the lease refuse further writes with cause, once; it reports whether this call
// ended it.
func (l *Lease) end(cause error) bool {
	l.mu.Lock()
	if l.ended != nil {
		l.mu.Unlock()
		return false
	}
	l.ended = cause
	onEnd := l.onEnd
	l.mu.Unlock()
	if onEnd != nil {
		onEnd(cause)
	}
	return true
}

// lost ends the lease as lost because of err and returns the error a write reports. A
// lease that had ended already keeps its first cause.
func (l *Lease) lost(err error) error {
	lostErr := fmt.Errorf("%w: %w", ErrLeaseLost, err)
	if !l.end(lostErr) {
		if first := l.Err(); !errors.Is(first, ErrLeaseLost) {
			return fmt.Errorf("%w: %w", first, err)
		}
	}
	return lostErr
}

// write sends one write under the lease, unless the lease has ended; a refusal that means
// the lease is gone ends it.
func (l *Lease) write(f func() error) error {
	return l.send(false, leaseLossCodes, f)
}

// send sends one request under the lease, unless the lease has ended. A refusal with one of
// lossCodes ends the lease as lost, unless this holder's own complete or release (other than
// this request, when settle says it is one) was sent meanwhile: then the refusal is that
// ending seen by a request that lost the race to it, not a loss.
func (l *Lease) send(settle bool, lossCodes []api.ProblemCode, f func() error) error {
	l.mu.Lock()
	ended, before := l.ended, l.settles
	if settle {
		l.settles++
		l.settling++
		before++
	}
	l.mu.Unlock()
	if ended != nil {
		return ended
	}
	err := f()
	l.mu.Lock()
	own := l.settles != before || l.settling > btoi(settle)
	if settle {
		l.settling--
	}
	l.mu.Unlock()
	var p *Problem
	if errors.As(err, &p) && contains(lossCodes, p.Code) && !own {
		return l.lost(err)
	}
	return err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Resume returns the last checkpoint of the run's chain from before this lease: the
// highest sequence of the run's newest attempt that wrote one, or of the run it continues,
// back the chain; nil when there is none (a fresh run). A handler resumes from it.
func (l *Lease) Resume(ctx context.Context) (*api.LastCheckpoint, error) {
	l.resumeMu.Lock()
	defer l.resumeMu.Unlock()
	l.mu.Lock()
	resumed, last := l.resumed, l.last
	l.mu.Unlock()
	if resumed {
		return last, nil
	}
	// A run's epoch moves only when it is claimed, from 0 at its enqueue, and a
	// continuation starts at its predecessor's epoch: token 1 on a run that continues none
	// is the first attempt of a new chain, which has no checkpoint to read.
	if l.FencingToken() != 1 || l.claim.Run.ContinuedFromRunID != nil {
		var err error
		if last, err = l.c.lastCheckpoint(ctx, l.RunID(), true); err != nil {
			return nil, fmt.Errorf("resume run %s: %w", l.RunID(), err)
		}
	}
	l.mu.Lock()
	l.last, l.resumed = last, true
	if last != nil {
		l.nextSeq = last.Sequence + 1
	}
	l.mu.Unlock()
	return last, nil
}

// CheckpointInput is a checkpoint to append; the Lease adds the token, the sequence and the
// adapter version.
type CheckpointInput struct {
	Phase api.Phase
	// StateRef is where the adapter's state is (adapterStateRef), or the state itself when it
	// is small (up to 512 characters).
	StateRef string
	// Hash is the state's hash (default: hex SHA-256 of StateRef).
	Hash               string
	ContextSnapshotRef *string
}

// Checkpoint appends a checkpoint under the lease. Sequences continue from the chain's last
// checkpoint (see Resume), so a resumed run's checkpoints follow its predecessor's. It is
// retried safely: a repeat of a sequence with the same hash answers the stored checkpoint.
func (l *Lease) Checkpoint(ctx context.Context, in CheckpointInput) (api.Checkpoint, error) {
	if _, err := l.Resume(ctx); err != nil {
		return api.Checkpoint{}, err
	}
	if in.Hash == "" {
		in.Hash = hexSHA256([]byte(in.StateRef))
	}
	l.mu.Lock()
	seq := l.nextSeq
	l.nextSeq++
	l.mu.Unlock()
	var out api.Checkpoint
	err := l.write(func() (err error) {
		out, err = l.c.AppendCheckpoint(ctx, l.AttemptID(), api.CheckpointRequest{
			FencingToken: l.FencingToken(), Sequence: &seq, Phase: &in.Phase, AdapterStateRef: in.StateRef,
			AdapterVersion: l.claim.Attempt.AdapterVersion, Hash: in.Hash, ContextSnapshotRef: in.ContextSnapshotRef,
		})
		return err
	})
	return out, err
}

// hexSHA256 is the lowercase hex SHA-256 of b: the default hashes of checkpoints and calls,
// and a manifest's hash.
func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CallInput is a call to record; the Lease adds the token and the sequence.
type CallInput struct {
	Kind   api.CallKind
	Target string
	// RequestHash identifies the request (default: hex SHA-256 of Target).
	RequestHash      string
	PolicyDecisionID *uuid.UUID
	// Model, Provider and Operation name a model call (gen_ai.request.model,
	// gen_ai.provider.name, gen_ai.operation.name); empty means not sent.
	Model, Provider, Operation string
}

// CallReport is what a model call reports when it finishes; every field is optional.
type CallReport struct {
	Usage         *api.Usage
	ResponseModel string
	FinishReasons []string
	// CostMicros is the call's cost in millionths of the tenant's currency unit (nil: not
	// reported); the project's daily cost budget counts it.
	CostMicros *int64
}

// RecordCall records a started call (sequences count from 0 in each attempt) and returns
// it; finish it with FinishCall.
func (l *Lease) RecordCall(ctx context.Context, in CallInput) (api.Call, error) {
	if in.RequestHash == "" {
		in.RequestHash = hexSHA256([]byte(in.Target))
	}
	l.mu.Lock()
	seq := l.nextCallSeq
	l.nextCallSeq++
	l.mu.Unlock()
	var out api.Call
	err := l.write(func() (err error) {
		out, _, err = l.c.RecordCall(ctx, l.AttemptID(), api.CallRequest{
			FencingToken: l.FencingToken(), Sequence: &seq, Kind: &in.Kind, Target: in.Target,
			RequestHash: in.RequestHash, PolicyDecisionID: in.PolicyDecisionID,
			Model: optional(in.Model), Provider: optional(in.Provider), Operation: optional(in.Operation),
		})
		return err
	})
	return out, err
}

// FinishCall finishes a recorded call with its status and an optional receipt reference.
func (l *Lease) FinishCall(ctx context.Context, callID uuid.UUID, status api.CallFinishStatus, receiptRef *string) (api.Call, error) {
	return l.FinishCallReport(ctx, callID, status, receiptRef, CallReport{})
}

// FinishCallReport finishes a call as FinishCall does, with what a model call reports:
// its usage, the model that answered, why it stopped and what it cost. A repeat must
// report the same (another report of a finished call is 409 illegal_transition).
func (l *Lease) FinishCallReport(ctx context.Context, callID uuid.UUID, status api.CallFinishStatus, receiptRef *string, r CallReport) (api.Call, error) {
	var out api.Call
	err := l.write(func() (err error) {
		out, err = l.c.FinishCall(ctx, l.AttemptID(), callID, api.FinishCallRequest{
			FencingToken: l.FencingToken(), Status: status, ReceiptRef: receiptRef, Usage: r.Usage,
			ResponseModel: optional(r.ResponseModel), FinishReasons: r.FinishReasons, CostMicros: r.CostMicros,
		}, "")
		return err
	})
	return out, err
}

// Call records a call, runs do, and finishes the call: succeeded with do's receipt when do
// returns no error, failed otherwise. It returns do's error, or the ledger's.
func (l *Lease) Call(ctx context.Context, in CallInput, do func(ctx context.Context) (receiptRef string, err error)) error {
	c, err := l.RecordCall(ctx, in)
	if err != nil {
		return err
	}
	receipt, doErr := do(ctx)
	status := api.FinishSucceeded
	if doErr != nil {
		status = api.FinishFailed
	}
	var ref *string
	if receipt != "" {
		ref = &receipt
	}
	if _, err := l.FinishCall(ctx, c.CallID, status, ref); err != nil {
		return errors.Join(doErr, err)
	}
	return doErr
}

// patch sends a PATCH of the attempt.
func (l *Lease) patch(ctx context.Context, req api.PatchAttemptRequest) (api.Attempt, error) {
	req.FencingToken = l.FencingToken()
	var out api.Attempt
	err := l.write(func() (err error) {
		out, err = l.c.PatchAttempt(ctx, l.AttemptID(), req)
		return err
	})
	return out, err
}

// SetPhase moves the attempt to a phase (any non-final phase; a checkpoint's phase also
// becomes the attempt's).
func (l *Lease) SetPhase(ctx context.Context, phase api.Phase) (api.Attempt, error) {
	return l.patch(ctx, api.PatchAttemptRequest{Phase: &phase})
}

// Correct counts one correction (ErrCorrectionLimit past the run's maxCorrections). It is
// not retried once it may have reached the service: a repeat would count twice.
func (l *Lease) Correct(ctx context.Context) (api.Attempt, error) {
	return l.patch(ctx, api.PatchAttemptRequest{Correction: true})
}

// SetContextSnapshot records the attempt's context snapshot reference.
func (l *Lease) SetContextSnapshot(ctx context.Context, ref string) (api.Attempt, error) {
	return l.patch(ctx, api.PatchAttemptRequest{ContextSnapshotRef: &ref})
}

// DecisionInput is a decision to ask for; the Lease adds the token.
type DecisionInput struct {
	Kind         api.DecisionKind
	ProposalHash *string
	// Options are what a choice chooses from (any JSON; for a choice, an array).
	Options        json.RawMessage
	Recommendation *string
	// ExpiresIn closes the decision as expired that long after it is asked (0: never;
	// whole seconds).
	ExpiresIn time.Duration
	// Key names the decision within the run's step, so that a resumed handler asking it
	// again gets the same decision (and its answer) instead of asking anew. Decide sends
	// "decide:{stepId}:{Key}" as the idempotency key; when Key is empty it uses the call's
	// order in the handler ("decide:{stepId}:#1", "#2", …), which holds when the handler
	// asks its decisions in the same order every time it runs.
	Key string
}

// ErrParked is what Decide and WaitChildren return when they parked the run instead of
// waiting longer (past the lease's park bound, or because the Worker is stopping): the
// handler should return it (or any error wrapping it) at once. The Worker then sends
// nothing more; the run is claimed again when its conditions close, and the handler, run
// again from its last checkpoint, gets the answer from the same Decide call at once.
var ErrParked = errors.New("ledger: run parked")

// DefaultParkAfter is how long Decide and WaitChildren wait in the handler before parking.
const DefaultParkAfter = 30 * time.Second

// SetParkAfter sets how long Decide and WaitChildren wait before they park the run (d <= 0:
// DefaultParkAfter).
func (l *Lease) SetParkAfter(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parkAfter = d
}

func (l *Lease) parkBound() (time.Duration, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.parkAfter
	if d <= 0 {
		d = DefaultParkAfter
	}
	return d, l.stopping
}

// decisionKey is the idempotency key Decide sends for in.
func (l *Lease) decisionKey(in DecisionInput) string {
	k := in.Key
	if k == "" {
		l.mu.Lock()
		l.decides++
		k = fmt.Sprintf("#%d", l.decides)
		l.mu.Unlock()
	}
	return "decide:" + l.claim.Run.StepID.String() + ":" + k
}

// Park ends the attempt parked and queues the run waiting (no attempt is spent) until every
// named decision is closed and every named child run has ended, or until dueAt (nil: no
// time). Afterwards the lease refuses writes with ErrLeaseEnded.
func (l *Lease) Park(ctx context.Context, decisionIDs, childRunIDs []uuid.UUID, dueAt *time.Time) (api.Attempt, error) {
	req := api.ParkAttemptRequest{FencingToken: l.FencingToken(), DecisionIDs: decisionIDs, ChildRunIDs: childRunIDs}
	if dueAt != nil {
		req.DueAt = api.Ptr(api.NewTime(*dueAt))
	}
	var out api.Attempt
	err := l.send(true, leaseLossCodes, func() (err error) {
		out, err = l.c.ParkAttempt(ctx, l.AttemptID(), req)
		return err
	})
	if err == nil {
		l.end(fmt.Errorf("%w: %w", ErrLeaseEnded, ErrParked))
	}
	return out, err
}

// waitOrPark waits for done (reading with read) up to the park bound; past it, or when
// the Worker is stopping, it parks on the conditions and returns ErrParked.
func waitOrPark[T any](ctx context.Context, l *Lease, read func(ctx context.Context) (T, error), park func(ctx context.Context) error) (T, error) {
	bound, stopping := l.parkBound()
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if stopping != nil {
		go func() {
			select {
			case <-stopping:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	v, err := read(wctx)
	if err == nil || ctx.Err() != nil || wctx.Err() == nil {
		return v, err
	}
	// The bound passed or the Worker is stopping: park instead of holding the lease.
	pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), max(l.length, 5*time.Second))
	defer pcancel()
	if perr := park(pctx); perr != nil {
		return v, perr
	}
	return v, ErrParked
}

// RequestDecision asks a person to decide (the attempt's phase becomes awaiting_decision).
// It is not retried once it may have reached the service: a repeat would ask twice.
func (l *Lease) RequestDecision(ctx context.Context, in DecisionInput) (api.Decision, error) {
	req := api.DecisionRequest{
		FencingToken: l.FencingToken(), Kind: &in.Kind, ProposalHash: in.ProposalHash,
		Options: in.Options, Recommendation: in.Recommendation,
	}
	if in.Key != "" {
		req.IdempotencyKey = api.Ptr("decide:" + l.claim.Run.StepID.String() + ":" + in.Key)
	}
	if in.ExpiresIn > 0 {
		req.ExpiresInSeconds = api.Ptr(int(max(time.Second, in.ExpiresIn.Round(time.Second)) / time.Second))
	}
	var out api.Decision
	err := l.write(func() (err error) {
		out, err = l.c.RequestDecision(ctx, l.AttemptID(), req)
		return err
	})
	return out, err
}

// WaitDecision waits until a decision is no longer pending (approved, rejected, expired or
// cancelled) and returns it, until ctx ends (see Client.WaitDecision).
func (l *Lease) WaitDecision(ctx context.Context, decisionID uuid.UUID) (api.Decision, error) {
	return l.c.WaitDecision(ctx, decisionID)
}

// Decide asks for a decision under an idempotency key derived from the run's step (see
// DecisionInput.Key) and waits for it to close. A decision the run already asked under
// that key is not asked again: a resumed handler gets its answer at once. Past the lease's
// park bound (SetParkAfter, default 30 s), or when the Worker is stopping (SIGTERM), it
// parks the run on the decision and returns ErrParked, which the handler returns.
func (l *Lease) Decide(ctx context.Context, in DecisionInput) (api.Decision, error) {
	in.Key = strings.TrimPrefix(l.decisionKey(in), "decide:"+l.claim.Run.StepID.String()+":")
	d, err := l.RequestDecision(ctx, in)
	if err != nil || d.Status != api.DecisionPending {
		return d, err
	}
	return waitOrPark(ctx, l, func(ctx context.Context) (api.Decision, error) {
		return l.WaitDecision(ctx, d.DecisionID)
	}, func(ctx context.Context) error {
		_, err := l.Park(ctx, []uuid.UUID{d.DecisionID}, nil, nil)
		return err
	})
}

// WaitChildren waits until every child run has ended, and returns them as they then are;
// past the park bound, or when the Worker is stopping, it parks the run on them and
// returns ErrParked (as Decide does). A resumed handler that delegated with the same
// idempotency keys (DelegateStep) finds the same children, already ended.
func (l *Lease) WaitChildren(ctx context.Context, childRunIDs ...uuid.UUID) ([]api.Run, error) {
	return waitOrPark(ctx, l, func(ctx context.Context) ([]api.Run, error) {
		out := make([]api.Run, 0, len(childRunIDs))
		for _, id := range childRunIDs {
			r, err := l.c.WaitRun(ctx, id)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}, func(ctx context.Context) error {
		_, err := l.Park(ctx, nil, childRunIDs, nil)
		return err
	})
}

// DelegateStep delegates as Delegate does, with the child's stepId, snapshotId and
// idempotency key derived from the parent's lease (its run, step and key), so that a
// resumed handler delegating again sends exactly the same request and finds the same
// child: the fields that must match are every field of child and purpose.
func (l *Lease) DelegateStep(ctx context.Context, key, purpose string, child api.RunSpec) (api.Delegation, error) {
	run := l.claim.Run
	child.StepID = uuid.NewSHA1(run.StepID, []byte("step:"+key))
	child.SnapshotID = uuid.NewSHA1(run.RunID, []byte("snapshot:"+key))
	child.IdempotencyKey = api.Ptr("delegate:" + run.RunID.String() + ":" + key)
	return l.Delegate(ctx, purpose, child)
}

// Delegate enqueues a child run for a sub-agent and records the delegation. Give
// child.IdempotencyKey a value that names this delegation in the run's work (the parent's
// subject and step, say) so that a retry, or a resumed run delegating again, finds the same
// child instead of making another; without one the call is not retried.
func (l *Lease) Delegate(ctx context.Context, purpose string, child api.RunSpec) (api.Delegation, error) {
	var out api.Delegation
	err := l.write(func() (err error) {
		out, err = l.c.Delegate(ctx, l.AttemptID(), api.DelegationRequest{FencingToken: l.FencingToken(), Purpose: purpose, Child: child})
		return err
	})
	return out, err
}

// WaitDelegation waits until a delegation's child run has ended (its status is succeeded,
// failed or cancelled) and returns the delegation, until ctx ends (see Client.WaitDelegation).
func (l *Lease) WaitDelegation(ctx context.Context, delegationID uuid.UUID) (api.Delegation, error) {
	return l.c.WaitDelegation(ctx, delegationID)
}

// Heartbeat renews the lease for its length and reports whether a cancel is pending. A
// Worker does this for its handlers; call it yourself only for a Lease made by NewLease.
func (l *Lease) Heartbeat(ctx context.Context) (api.Heartbeat, error) {
	if err := l.Err(); err != nil {
		return api.Heartbeat{}, err
	}
	secs := int(l.length / time.Second)
	req := api.HeartbeatRequest{FencingToken: l.FencingToken()}
	if secs > 0 {
		req.LeaseSeconds = &secs
	}
	var hb api.Heartbeat
	err := l.send(false, heartbeatLossCodes, func() (err error) {
		hb, err = l.c.Heartbeat(ctx, l.AttemptID(), req)
		return err
	})
	if err != nil {
		return hb, err
	}
	l.mu.Lock()
	l.leasedUntil = hb.LeasedUntil.Time
	if hb.CancelRequested {
		l.cancelRequested = true
	}
	l.mu.Unlock()
	return hb, nil
}

// ObserveCancellation records that the holder saw the cancel request.
func (l *Lease) ObserveCancellation(ctx context.Context) error {
	return l.write(func() error {
		_, err := l.c.ObserveCancellation(ctx, l.AttemptID(), api.FencedRequest{FencingToken: l.FencingToken()})
		return err
	})
}

// Complete ends the attempt and its run in state (succeeded, failed or cancelled), with an
// optional outcome hash. Afterwards the lease refuses writes with ErrLeaseEnded. A handler
// run by a Worker may complete its lease itself (to give an outcome hash); the Worker then
// sends nothing more.
func (l *Lease) Complete(ctx context.Context, state api.CompletionState, outcomeHash *string) (api.Attempt, error) {
	return l.CompleteWithError(ctx, state, outcomeHash, nil)
}

// CompleteWithError is Complete saying why the attempt failed or was cancelled: the attempt
// keeps e and the run its code and message (ErrorOf builds one from a Go error).
func (l *Lease) CompleteWithError(ctx context.Context, state api.CompletionState, outcomeHash *string, e *api.AttemptError) (api.Attempt, error) {
	var out api.Attempt
	err := l.send(true, leaseLossCodes, func() (err error) {
		out, err = l.c.CompleteAttempt(ctx, l.AttemptID(), api.CompleteAttemptRequest{
			FencingToken: l.FencingToken(), State: state, OutcomeHash: outcomeHash, Error: e,
		})
		return err
	})
	if err == nil {
		l.end(fmt.Errorf("%w: completed %s", ErrLeaseEnded, state))
	}
	return out, err
}

// Release gives the run back: charge spends one of its attempts; retryAfter, when not
// nil, is when it is due again (whole seconds, 0: at once; nil: the service's backoff).
// Afterwards the lease refuses writes with ErrLeaseEnded.
func (l *Lease) Release(ctx context.Context, charge bool, retryAfter *time.Duration) (api.Attempt, error) {
	return l.ReleaseWithError(ctx, charge, retryAfter, nil)
}

// ReleaseWithError is Release saying why: the attempt keeps e and the run its code and
// message (ErrorOf builds one from a Go error).
func (l *Lease) ReleaseWithError(ctx context.Context, charge bool, retryAfter *time.Duration, e *api.AttemptError) (api.Attempt, error) {
	req := api.ReleaseAttemptRequest{FencingToken: l.FencingToken(), Charge: charge, Error: e}
	if retryAfter != nil {
		req.RetryAfterSeconds = api.Ptr(int(max(0, min(*retryAfter, 86400*time.Second)).Round(time.Second) / time.Second))
	}
	var out api.Attempt
	err := l.send(true, leaseLossCodes, func() (err error) {
		out, err = l.c.ReleaseAttempt(ctx, l.AttemptID(), req)
		return err
	})
	if err == nil {
		l.end(fmt.Errorf("%w: released", ErrLeaseEnded))
	}
	return out, err
}

// WaitDecision waits until a decision is no longer pending and returns it, until ctx ends.
// Each read asks the server to wait for the close (GET with waitSeconds), so the answer
// comes as the decision closes; a read the server answers early (its tenant's waiting
// reads are at their cap) is followed by a pause as WithPolling sets.
func (c *Client) WaitDecision(ctx context.Context, decisionID uuid.UUID) (api.Decision, error) {
	return waitUntil(ctx, c, "getDecision", decisionID.String(), func(d api.Decision) bool {
		return d.Status != api.DecisionPending
	})
}

// WaitRun waits until a run has ended and returns it, until ctx ends (each read a GET with
// waitSeconds, as WaitDecision's).
func (c *Client) WaitRun(ctx context.Context, runID uuid.UUID) (api.Run, error) {
	return waitUntil(ctx, c, "getRun", runID.String(), func(r api.Run) bool { return r.State == api.RunEnded })
}

// WaitDelegation waits until a delegation's child run has ended and returns the
// delegation, until ctx ends. It waits on the child run (GET with waitSeconds) and reads
// the delegation when the run has ended; a delegation that follows a continuation of its
// child is read again after pauses as WithPolling sets.
func (c *Client) WaitDelegation(ctx context.Context, delegationID uuid.UUID) (api.Delegation, error) {
	for n := 1; ; n++ {
		var d api.Delegation
		if _, err := c.do(ctx, call{op: "getDelegation", params: []string{delegationID.String()}, out: &d}); err != nil {
			return d, err
		}
		if d.Status == api.DelegationSucceeded || d.Status == api.DelegationFailed || d.Status == api.DelegationCancelled {
			return d, nil
		}
		ended, err := waitUntil(ctx, c, "getRun", d.ChildRunID.String(), func(r api.Run) bool { return r.State == api.RunEnded })
		if err != nil {
			return d, err
		}
		if ended.State == api.RunEnded && n > 1 {
			// The child ended before and the delegation follows its continuation: no run to
			// wait on by id here, so read again after a pause.
			if err := c.sleep(ctx, equalJitter(c.pollMin, c.pollMax, n-1)); err != nil {
				return d, err
			}
		}
	}
}

// waitSeconds is what each read of waitUntil asks the server to wait (its greatest).
const waitSeconds = 30

// waitUntil reads the operation op (a GET taking waitSeconds) of the one id with
// waitSeconds until done says so. A read answered early and
// unfinished (the server's cap of waiting reads, or a deadline of ctx's) is followed by a
// wait from the client's least poll interval doubling up to its greatest.
func waitUntil[T any](ctx context.Context, c *Client, op, id string, done func(T) bool) (T, error) {
	var cur T
	for early := 0; ; {
		wait := waitSeconds * time.Second
		if dl, ok := ctx.Deadline(); ok {
			// Answered with the current state just before the deadline, not cut off by it.
			wait = min(wait, time.Until(dl)-time.Second)
		}
		secs := max(0, int(wait/time.Second))
		start := time.Now()
		var next T
		_, err := c.do(ctx, call{op: op, params: []string{id}, query: url.Values{"waitSeconds": {strconv.Itoa(secs)}}, out: &next})
		if err != nil {
			return cur, err
		}
		cur = next
		if done(cur) {
			return cur, nil
		}
		if time.Since(start) >= time.Duration(secs)*time.Second/2 && secs > 0 {
			early = 0
			continue
		}
		early++
		if err := c.sleep(ctx, equalJitter(c.pollMin, c.pollMax, early)); err != nil {
			return cur, err
		}
	}
}

// optional is nil for an empty string: a field not sent.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
