"""Lease: one claimed run's lease and the writes its holder makes under it."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
import time
import uuid
from datetime import datetime
from typing import Any, Callable, List, Optional, Tuple, TypeVar

from . import _behaviour
from ._problem import LedgerProblem
from .client import Client, WaitTimeout
from .wire import (Attempt, AttemptError, Call, CallFinishStatus, CallKind, CallRequest, Checkpoint,
                   CheckpointRequest, Claim, CompleteAttemptRequest, CompletionState, Decision,
                   DecisionKind, DecisionStatus, DecisionRequest, Delegation, DelegationRequest,
                   FencedRequest, FinishCallRequest, Heartbeat, HeartbeatRequest,
                   LastCheckpoint, ParkAttemptRequest, PatchAttemptRequest, Phase,
                   ReleaseAttemptRequest, Run, RunSpec, Usage)

T = TypeVar("T")

#: The refusals that mean the lease is gone for good (api/worker.json's leaseLost).
LEASE_LOSS_CODES = _behaviour.LEASE_LOST_CODES
#: A heartbeat's not_found too (the attempt is gone), where another write's may name a
#: missing record (heartbeatLost).
HEARTBEAT_LOSS_CODES = _behaviour.HEARTBEAT_LOST_CODES


class LeaseStopped(Exception):
    """Base of the reasons a handler stops working under its lease."""


class LeaseLost(LeaseStopped):
    """The lease is lost: a write or a heartbeat was refused with stale_lease, lease_expired
    or attempt_ended (a heartbeat also with not_found), or renewals kept failing until the
    lease had passed by this machine's clock. Another holder may have the run now: a lost
    Lease refuses every further write without sending it. ``problem`` is the refusal when the
    service refused."""

    def __init__(self, message: str, problem: Optional[LedgerProblem] = None) -> None:
        super().__init__(message)
        self.problem = problem


class LeaseEnded(LeaseStopped):
    """The lease ended by this holder's own complete or release: nothing more may be written
    under it."""


class Parked(LeaseEnded):
    """What decide and wait_children raise when they parked the run instead of waiting longer
    (past the park bound, or because the Worker is stopping); lease.park ends the lease with
    it too. The handler lets it through (or returns): the Worker sends nothing more and counts
    no failure. The run is claimed again when its conditions close, and the handler, run again
    from its last checkpoint, gets the answer from the same decide call at once."""


#: How long decide and wait_children wait in the handler before they park the run, seconds.
DEFAULT_PARK_AFTER = 30.0
#: The longest long poll while decide or wait_children waits: a stopping Worker's handler
#: parks within it.
PARK_POLL_MAX = 2


class _ParkNow(Exception):
    """The Worker is stopping: the wait ends and parks."""


class WorkerShutdown(LeaseStopped):
    """The Worker's shutdown grace ran out: the lease was released uncharged and refuses
    further writes."""


class CancelRequested(LeaseStopped):
    """An admin cancelled the run. The lease stays usable (a last checkpoint may be
    written); whatever the handler then does, the Worker completes the attempt as cancelled.
    Only check() raises it."""


def hex_sha256(b: bytes) -> str:
    """The lowercase hex SHA-256: the default hashes of checkpoints and calls."""
    return hashlib.sha256(b).hexdigest()


class Lease:
    """One claimed run's lease: the fencing token bound to the attempt, and the writes a
    holder makes under it. Safe to use from several threads. A Worker hands one to each
    handler and keeps it renewed; Lease(client, claim) makes one of a claim made by hand
    (then call heartbeat() often enough yourself).

    Python cannot interrupt a thread, so a handler checks between steps: ``check()`` raises
    LeaseLost once the lease is lost (CancelRequested once a cancel is pending,
    WorkerShutdown once the shutdown grace ran out), ``sleep()`` waits and checks, and every
    write raises once the lease is lost or ended.
    """

    def __init__(self, client: Client, claim: Claim) -> None:
        self.client = client
        self.claim = claim
        secs = claim.run.lease_seconds
        if secs and secs > 0:
            length = float(secs)
        else:
            # Both times are the service's clock, so their difference is the length
            # whatever this machine's clock says.
            length = (claim.lease.leased_until - claim.attempt.started_at).total_seconds()
        #: The lease's length in seconds: how long each renewal extends it.
        self.length = length if length > 0 else 30.0
        #: Set once the lease is lost.
        self.lost = threading.Event()
        #: Set once a heartbeat said the run was cancelled.
        self.cancelled = threading.Event()
        #: Set when the handler should stop: lost, cancelled or shut down.
        self.stopping = threading.Event()
        self._mu = threading.Lock()
        self._resume_mu = threading.Lock()
        self._ended: Optional[LeaseStopped] = None
        self._leased_until = claim.lease.leased_until
        self._resumed = False
        self._last: Optional[LastCheckpoint] = None
        self._next_seq = 0
        self._next_call_seq = 0
        # Completes and releases sent under the lease, and those in flight: a refusal that
        # races this holder's own ending is not a loss.
        self._settles = 0
        self._settling = 0
        self._on_end: Optional[Callable[[LeaseStopped], None]] = None
        # decide calls without a key so far: their keys are "#1", "#2", ... in call order.
        self._decides = 0
        #: How long decide and wait_children wait before they park, seconds (a Worker sets it).
        self.park_after = DEFAULT_PARK_AFTER
        #: Set when the Worker running this lease stops: decide and wait_children park at once.
        self.worker_stopping: Optional[threading.Event] = None

    # ---- what the claim said ----

    @property
    def run(self) -> Run:
        return self.claim.run

    @property
    def attempt(self) -> Attempt:
        return self.claim.attempt

    @property
    def run_id(self) -> str:
        return self.claim.run.run_id

    @property
    def attempt_id(self) -> str:
        return self.claim.attempt.attempt_id

    @property
    def fencing_token(self) -> int:
        return self.claim.lease.fencing_token

    @property
    def input(self) -> Any:
        """The run's input JSON (None when it has none)."""
        return self.claim.run.input

    @property
    def leased_until(self) -> Any:
        """When the lease passes unless renewed, as the service last said (a datetime)."""
        with self._mu:
            return self._leased_until

    @property
    def cancel_requested(self) -> bool:
        return self.cancelled.is_set()

    @property
    def err(self) -> Optional[LeaseStopped]:
        """None while the lease may be written under, else why not."""
        with self._mu:
            return self._ended

    # ---- stopping ----

    def check(self) -> None:
        """Raises LeaseLost (or WorkerShutdown, or LeaseEnded) once the lease may no longer be
        written under, and CancelRequested once the run was cancelled. Call it between
        steps."""
        e = self.err
        if e is not None:
            raise e
        if self.cancelled.is_set():
            raise CancelRequested("ledger: run %s: cancel requested" % self.run_id)

    def sleep(self, seconds: float) -> None:
        """Waits seconds, or less when the handler should stop, then check()s."""
        self.stopping.wait(seconds)
        self.check()

    def _end(self, cause: LeaseStopped) -> bool:
        """Makes the lease refuse further writes with cause, once; True when this call
        ended it."""
        with self._mu:
            if self._ended is not None:
                return False
            self._ended = cause
            on_end = self._on_end
        if isinstance(cause, LeaseLost):
            self.lost.set()
        if not isinstance(cause, LeaseEnded):
            self.stopping.set()
        if on_end is not None:
            on_end(cause)
        return True

    def _lose(self, message: str, problem: Optional[LedgerProblem] = None) -> LeaseStopped:
        """Ends the lease as lost and returns what a write raises; a lease that had ended
        already keeps its first cause."""
        lost = LeaseLost("ledger: lease lost: " + message, problem)
        if problem is not None:
            lost.__cause__ = problem
        if not self._end(lost):
            first = self.err
            if first is not None and not isinstance(first, LeaseLost):
                return first
        return lost

    def _send(self, fn: Callable[[], T], *, settle: bool = False,
              loss_codes: Tuple[str, ...] = LEASE_LOSS_CODES) -> T:
        """Sends one request under the lease unless it has ended. A refusal with one of
        loss_codes ends the lease as lost, unless this holder's own complete or release
        (other than this request, when settle says it is one) was sent meanwhile: then the
        refusal is that ending seen by a request that lost the race to it."""
        with self._mu:
            ended, before = self._ended, self._settles
            if settle:
                self._settles += 1
                self._settling += 1
                before += 1
        if ended is not None:
            raise ended
        try:
            return fn()
        except LedgerProblem as p:
            with self._mu:
                own = self._settles != before or self._settling > (1 if settle else 0)
            if p.code in loss_codes and not own:
                raise self._lose(str(p), p) from p
            raise
        finally:
            if settle:
                with self._mu:
                    self._settling -= 1

    # ---- writes ----

    def resume(self) -> Optional[LastCheckpoint]:
        """The last checkpoint of the run's chain from before this lease (this run's, or
        the run it continues, back the chain); None for a fresh run. A handler resumes from
        it; checkpoint() continues its sequence."""
        with self._resume_mu:
            with self._mu:
                if self._resumed:
                    return self._last
            last: Optional[LastCheckpoint] = None
            # A run's epoch moves only when it is claimed, from 0 at its enqueue, and a
            # continuation starts at its predecessor's: token 1 on a run that continues
            # none is the first attempt of a new chain, with no checkpoint to read.
            if self.fencing_token != 1 or self.claim.run.continued_from_run_id is not None:
                last = self.client._last_checkpoint(self.run_id, run_exists=True)
            with self._mu:
                self._last, self._resumed = last, True
                if last is not None:
                    self._next_seq = last.sequence + 1
            return last

    def checkpoint(self, phase: Phase, state_ref: str, *, hash: Optional[str] = None,
                   context_snapshot_ref: Optional[str] = None) -> Checkpoint:
        """Appends a checkpoint: where the adapter's state is (or the state itself when it is
        small), its hash (default: hex SHA-256 of state_ref). Sequences continue from the
        chain's last checkpoint. Retried safely."""
        self.resume()
        h = hash or hex_sha256(state_ref.encode("utf-8"))
        with self._mu:
            seq = self._next_seq
            self._next_seq += 1
        req = CheckpointRequest(fencing_token=self.fencing_token, sequence=seq, phase=phase,
                                adapter_state_ref=state_ref, adapter_version=self.claim.attempt.adapter_version,
                                hash=h, context_snapshot_ref=context_snapshot_ref)
        return self._send(lambda: self.client.append_checkpoint(self.attempt_id, req))

    def record_call(self, kind: CallKind, target: str, *, request_hash: Optional[str] = None,
                    policy_decision_id: Optional[str] = None, model: Optional[str] = None,
                    provider: Optional[str] = None, operation: Optional[str] = None) -> Call:
        """Records a started call (sequences count from 0 in each attempt); finish it with
        finish_call. model, provider and operation name a model call (gen_ai.request.model,
        gen_ai.provider.name, gen_ai.operation.name)."""
        with self._mu:
            seq = self._next_call_seq
            self._next_call_seq += 1
        req = CallRequest(fencing_token=self.fencing_token, sequence=seq, kind=kind, target=target,
                          request_hash=request_hash or hex_sha256(target.encode("utf-8")),
                          policy_decision_id=policy_decision_id, model=model, provider=provider,
                          operation=operation)
        return self._send(lambda: self.client.record_call(self.attempt_id, req)[0])

    def finish_call(self, call_id: str, status: CallFinishStatus, receipt_ref: Optional[str] = None, *,
                    usage: Optional[Usage] = None, response_model: Optional[str] = None,
                    finish_reasons: Optional[List[str]] = None, cost_micros: Optional[int] = None) -> Call:
        """Finishes a recorded call with its status and an optional receipt reference; a model
        call reports its tokens (usage), the model that answered, why it stopped and its cost
        (millionths of the tenant's currency unit, counted by the project's daily budget)."""
        req = FinishCallRequest(fencing_token=self.fencing_token, status=status, receipt_ref=receipt_ref,
                                usage=usage, response_model=response_model, finish_reasons=finish_reasons,
                                cost_micros=cost_micros)
        return self._send(lambda: self.client.finish_call(self.attempt_id, call_id, req))

    def call(self, kind: CallKind, target: str, do: Callable[[], Optional[str]], *,
             request_hash: Optional[str] = None) -> Optional[str]:
        """Records a call, runs do, and finishes the call: succeeded with do's return as the
        receipt, failed when do raises (the exception is raised again)."""
        c = self.record_call(kind, target, request_hash=request_hash)
        try:
            receipt = do()
        except BaseException:
            self.finish_call(c.call_id, CallFinishStatus.FAILED)
            raise
        self.finish_call(c.call_id, CallFinishStatus.SUCCEEDED, receipt or None)
        return receipt

    def _patch(self, req: PatchAttemptRequest) -> Attempt:
        return self._send(lambda: self.client.patch_attempt(self.attempt_id, req))

    def set_phase(self, phase: Phase) -> Attempt:
        """Moves the attempt to a non-final phase (a checkpoint's phase also becomes the
        attempt's)."""
        return self._patch(PatchAttemptRequest(fencing_token=self.fencing_token, phase=phase))

    def correct(self) -> Attempt:
        """Counts one correction (CorrectionLimit past the run's max_corrections); not
        retried once it may have reached the service."""
        return self._patch(PatchAttemptRequest(fencing_token=self.fencing_token, correction=True))

    def set_context_snapshot(self, ref: str) -> Attempt:
        return self._patch(PatchAttemptRequest(fencing_token=self.fencing_token, context_snapshot_ref=ref))

    def request_decision(self, kind: DecisionKind, *, options: Any = None,
                         recommendation: Optional[str] = None, proposal_hash: Optional[str] = None,
                         expires_in: Optional[float] = None, key: Optional[str] = None) -> Decision:
        """Asks a person to decide (the attempt's phase becomes awaiting_decision);
        expires_in closes it as expired that many seconds later. Without key it is not
        retried once it may have reached the service (a repeat would ask twice); with key it
        is sent under the idempotency key "decide:{step_id}:{key}", as the Go Lease does, so a
        retry or a resumed handler asking again gets the same decision (and its answer)."""
        req = DecisionRequest(fencing_token=self.fencing_token, kind=kind, options=options,
                              recommendation=recommendation, proposal_hash=proposal_hash,
                              idempotency_key=None if key is None else "decide:%s:%s" % (self.run.step_id, key))
        if expires_in:
            req.expires_in_seconds = max(1, int(round(expires_in)))
        return self._send(lambda: self.client.request_decision(self.attempt_id, req))

    def _poll_chunk(self) -> int:
        """One long poll's wait: short enough that a loss the heartbeat finds is noticed
        within about a renewal period."""
        return max(1, min(30, int(math.ceil(self.length / 3))))

    def wait_decision(self, decision_id: str, timeout: Optional[float] = None) -> Decision:
        """Waits until a decision is no longer pending and returns it (long polls of
        GET /v1/decisions/{id}?waitSeconds), checking the lease between polls: LeaseLost,
        CancelRequested or WorkerShutdown end the wait; WaitTimeout when timeout passes."""
        return self.client.wait_decision(decision_id, timeout, check=self.check, chunk=self._poll_chunk())

    def decide(self, kind: DecisionKind, *, options: Any = None, recommendation: Optional[str] = None,
               expires_in: Optional[float] = None, key: Optional[str] = None) -> Decision:
        """Asks for a decision under an idempotency key derived from the run's step (key, or
        the call's order in the handler: "#1", "#2", ..., which holds when the handler asks its
        decisions in the same order every time it runs) and waits for it to close. A decision
        the run already asked under that key is not asked again: a resumed handler gets its
        answer at once. Past park_after (the Worker's, default 30 s), or when the Worker is
        stopping (SIGTERM), it parks the run on the decision and raises Parked, which the
        handler lets through."""
        if key is None:
            with self._mu:
                self._decides += 1
                key = "#%d" % self._decides
        d = self.request_decision(kind, options=options, recommendation=recommendation, expires_in=expires_in,
                                  key=key)
        if d.status != DecisionStatus.PENDING:
            return d
        return self._wait_or_park(
            lambda timeout, check, chunk: self.client.wait_decision(d.decision_id, timeout, check=check, chunk=chunk),
            decision_ids=[d.decision_id])

    def wait_children(self, child_run_ids: List[str]) -> List[Run]:
        """Waits until every child run has ended and returns them as they then are; past
        park_after, or when the Worker is stopping, it parks the run on them and raises Parked
        (as decide does). A resumed handler that delegated with delegate_step finds the same
        children, already ended."""
        def wait(timeout: float, check: Callable[[], None], chunk: int) -> List[Run]:
            deadline = time.monotonic() + timeout
            return [self.client.wait_run(r, max(0.0, deadline - time.monotonic()), check=check, chunk=chunk)
                    for r in child_run_ids]
        return self._wait_or_park(wait, child_run_ids=list(child_run_ids))

    def _wait_or_park(self, wait: Callable[[float, Callable[[], None], int], T], *,
                      decision_ids: Optional[List[str]] = None, child_run_ids: Optional[List[str]] = None) -> T:
        """Runs wait(timeout, check, chunk) up to park_after, checking the lease and the Worker
        between long polls; past the bound, or once the Worker stops, it parks the run on the
        conditions and raises Parked."""
        stopping = self.worker_stopping

        def check() -> None:
            self.check()
            if stopping is not None and stopping.is_set():
                raise _ParkNow()

        why = "waited %gs" % self.park_after
        try:
            return wait(self.park_after, check, min(self._poll_chunk(), PARK_POLL_MAX))
        except WaitTimeout:
            pass
        except _ParkNow:
            why = "the worker is stopping"
        self.park(decision_ids, child_run_ids, why=why)
        raise Parked("ledger: run parked: " + why)

    def park(self, decision_ids: Optional[List[str]] = None, child_run_ids: Optional[List[str]] = None,
             due_at: Optional[datetime] = None, *, why: str = "parked") -> Attempt:
        """Ends the attempt parked: the run waits without a lease (no attempt spent) until
        every named decision is closed and every named child run has ended, or until due_at.
        The handler should return at once; afterwards the lease refuses writes with Parked
        (a LeaseEnded), and a Worker sends nothing more."""
        req = ParkAttemptRequest(fencing_token=self.fencing_token, decision_ids=decision_ids,
                                 child_run_ids=child_run_ids, due_at=due_at)
        out = self._send(lambda: self.client.park_attempt(self.attempt_id, req), settle=True)
        self._end(Parked("ledger: lease ended: run parked: " + why))
        return out

    def delegate_step(self, key: str, purpose: str, child: RunSpec) -> Delegation:
        """Delegates as delegate does, with the child's step_id, snapshot_id and idempotency
        key derived from the parent's lease (its run, step and key), so that a resumed handler
        delegating again sends exactly the same request and finds the same child: every other
        field of child, and purpose, must be the same as well."""
        run = self.run
        child = dataclasses.replace(
            child,
            step_id=str(uuid.uuid5(uuid.UUID(run.step_id), "step:" + key)),
            snapshot_id=str(uuid.uuid5(uuid.UUID(run.run_id), "snapshot:" + key)),
            idempotency_key="delegate:%s:%s" % (run.run_id, key))
        return self.delegate(purpose, child)

    def delegate(self, purpose: str, child: RunSpec) -> Delegation:
        """Enqueues a child run for a sub-agent and records the delegation. Give
        child.idempotency_key a value naming this delegation in the run's work, so that a
        retry, or a resumed run delegating again, finds the same child; without one the call
        is not retried."""
        req = DelegationRequest(fencing_token=self.fencing_token, purpose=purpose, child=child)
        return self._send(lambda: self.client.delegate(self.attempt_id, req))

    def wait_delegation(self, delegation_id: str, timeout: Optional[float] = None) -> Delegation:
        """Waits until a delegation's child run has ended and returns the delegation,
        checking the lease between long polls."""
        return self.client.wait_delegation(delegation_id, timeout, check=self.check, chunk=self._poll_chunk())

    def heartbeat(self) -> Heartbeat:
        """Renews the lease for its length and reports whether a cancel is pending. A Worker
        does this for its handlers."""
        e = self.err
        if e is not None:
            raise e
        secs = int(round(self.length))
        req = HeartbeatRequest(fencing_token=self.fencing_token, lease_seconds=secs if secs > 0 else None)
        hb = self._send(lambda: self.client.heartbeat(self.attempt_id, req), loss_codes=HEARTBEAT_LOSS_CODES)
        with self._mu:
            self._leased_until = hb.leased_until
        if hb.cancel_requested:
            self.cancelled.set()
            self.stopping.set()
        return hb

    def observe_cancellation(self) -> Attempt:
        """Records that the holder saw the cancel request."""
        req = FencedRequest(fencing_token=self.fencing_token)
        return self._send(lambda: self.client.observe_cancellation(self.attempt_id, req))

    def complete(self, state: CompletionState, outcome_hash: Optional[str] = None, *,
                 error: Optional[AttemptError] = None) -> Attempt:
        """Ends the attempt and its run in state (succeeded, failed or cancelled), with error
        saying why when it failed (see error_of). Afterwards the lease refuses writes with
        LeaseEnded; a Worker then sends nothing more."""
        req = CompleteAttemptRequest(fencing_token=self.fencing_token, state=state, outcome_hash=outcome_hash,
                                     error=error)
        out = self._send(lambda: self.client.complete_attempt(self.attempt_id, req), settle=True)
        self._end(LeaseEnded("ledger: lease ended: completed %s" % state))
        return out

    def release(self, charge: bool = False, retry_after: Optional[float] = None, *,
                error: Optional[AttemptError] = None) -> Attempt:
        """Gives the run back: charge spends one of its attempts; retry_after is when it is
        due again in seconds (0: at once; None: the service's backoff); error says why (see
        error_of). Afterwards the lease refuses writes with LeaseEnded."""
        req = ReleaseAttemptRequest(fencing_token=self.fencing_token, charge=charge, error=error)
        if retry_after is not None:
            req.retry_after_seconds = int(round(max(0.0, min(retry_after, 86400.0))))
        out = self._send(lambda: self.client.release_attempt(self.attempt_id, req), settle=True)
        self._end(LeaseEnded("ledger: lease ended: released"))
        return out
