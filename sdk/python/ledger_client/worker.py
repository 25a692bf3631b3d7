"""Worker: claims runs and runs a handler for each on its own thread, keeping the lease
renewed, then settles the lease as the handler's outcome says (the Go SDK's client.Worker)."""

from __future__ import annotations

import enum
import logging
import os
import secrets
import signal
import socket
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, cast

from . import _behaviour as B
from ._problem import ClaimHeld, LedgerProblem
from ._retry import doubled
from .client import Client
from .errors import error_of
from .lease import DEFAULT_PARK_AFTER, Lease, LeaseLost, LeaseStopped, Parked, WorkerShutdown
from .wire import ClaimRequest, CompletionState, ReleaseAttemptRequest

#: A handler does the work of one claimed run. How it ends decides how the attempt ends:
#: returning completes it succeeded; raising Permanent completes it failed (the run is not
#: tried again); raising RetryAfter releases it charged, due after that many seconds; raising
#: anything else releases it charged, due after the service's backoff (or as on_error says);
#: any end after the run was cancelled completes it cancelled. After the lease is lost nothing
#: is sent, whatever the end. A handler may also settle its lease itself (lease.complete with an
#: outcome hash, lease.release); the Worker then sends nothing more.
Handler = Callable[[Lease], None]


class Permanent(Exception):
    """Raise it (``raise Permanent("bad input") from e``) to complete the attempt as failed
    instead of releasing the run for another try."""


class RetryAfter(Exception):
    """Raise it to release the run charged, due again after ``seconds`` (whole seconds, up to
    a day)."""

    def __init__(self, seconds: float, message: str = "") -> None:
        super().__init__(message or "retry after %gs" % seconds)
        self.seconds = seconds


@dataclass
class Retry:
    """How a run whose handler raised is released."""

    charge: bool = True  #: spend one of the run's attempts (at max_attempts it ends exhausted)
    after: Optional[float] = None  #: seconds until it is due again (None: the service's backoff)


class Outcome(str, enum.Enum):
    """How a claimed run's lease was settled."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RELEASED = "released"  #: released after the handler raised
    LEASE_LOST = "lease_lost"  #: nothing was sent after the loss
    SHUTDOWN_RELEASED = "shutdown_released"  #: released uncharged at shutdown
    SETTLED_BY_HANDLER = "settled_by_handler"
    UNSETTLED = "unsettled"  #: the complete or release failed; the reaper takes the run back
    PARKED = "parked"  #: the handler parked the run (decide, wait_children, lease.park) to wait without a lease


@dataclass
class Result:
    """What became of one claimed run."""

    lease: Lease
    outcome: Outcome
    error: Optional[BaseException] = None  #: what the handler raised
    duration: float = 0.0  #: seconds the handler ran
    settle_error: Optional[BaseException] = None  #: why the complete or release failed


def default_holder_id() -> str:
    host = socket.gethostname() or "worker"
    return ("%s-%d-%s" % (host, os.getpid(), secrets.token_hex(4)))[-128:]


def default_on_error(lease: Lease, err: BaseException) -> Retry:
    if isinstance(err, RetryAfter):
        return Retry(charge=True, after=err.seconds)
    return Retry(charge=True)


def _fatal_claim(err: BaseException) -> bool:
    """A claim error that will not pass by trying again: the key, the role or the claim."""
    return isinstance(err, LedgerProblem) and err.code in B.FATAL_CODES


def _refused_claim(err: BaseException) -> bool:
    """The service refused a claim for what it asks (an inactive release, an unknown
    project), which an operator may fix while the worker waits: it keeps trying, slowly."""
    return isinstance(err, LedgerProblem) and B.refused_status(err.status)


def _describe(e: BaseException) -> str:
    try:
        return "%s: %s" % (type(e).__name__, e)
    except Exception:  # a __str__ that raises
        return type(e).__name__


class _Turns:
    """The long-poll turns and the kick of a Worker's claim loops, on one condition: an idle
    slot sleeps until a turn is free, a kick comes (another slot found a run: there may be
    more) or the worker stops, with no polling."""

    def __init__(self, long_polls: int) -> None:
        self._cv = threading.Condition()
        self._free = long_polls
        self._kicked = False

    def take(self, stop: threading.Event) -> Optional[bool]:
        """True: a long-poll turn (give it back); False: a kick; None: the worker stops."""
        with self._cv:
            while True:
                if stop.is_set():
                    return None
                if self._free > 0:
                    self._free -= 1
                    return True
                if self._kicked:
                    self._kicked = False
                    return False
                self._cv.wait()

    def give(self) -> None:
        with self._cv:
            self._free += 1
            self._cv.notify()

    def kick(self) -> None:
        with self._cv:
            self._kicked = True
            self._cv.notify()

    def wake_all(self) -> None:
        with self._cv:
            self._cv.notify_all()


class Worker:
    """Claims runs and runs handler(lease) for each on a thread, keeping the lease renewed
    (heartbeats at a third of its length). ``run()`` blocks until ``stop()`` (or SIGTERM with
    ``run_until_signal()``), then shuts down: it stops claiming, lets running handlers finish
    within shutdown_grace (a run claimed while stopping is released uncharged at once), then
    releases the remaining leases uncharged (their handlers' checks and writes raise
    WorkerShutdown) and returns once every handler has returned."""

    def __init__(self, client: Client, handler: Handler, *, release_id: str, adapter_version: str,
                 model_profile_id: str, holder_id: Optional[str] = None, lease_seconds: int = 0,
                 kinds: Optional[Sequence[str]] = None, agent_ids: Optional[Sequence[str]] = None,
                 project_ids: Optional[Sequence[str]] = None, concurrency: int = 1,
                 long_polls: int = B.LONG_POLLS, wait_seconds: int = B.WAIT_SECONDS,
                 idle_wait: float = B.IDLE_WAIT, heartbeat_every: Optional[float] = None,
                 shutdown_grace: float = B.SHUTDOWN_GRACE, park_after: float = DEFAULT_PARK_AFTER,
                 on_error: Callable[[Lease, BaseException], Retry] = default_on_error,
                 on_claimed: Optional[Callable[[Lease], None]] = None,
                 on_held: Optional[Callable[[float], None]] = None,
                 on_claim_failed: Optional[Callable[[BaseException], None]] = None,
                 on_finished: Optional[Callable[[Result], None]] = None,
                 logger: Optional[logging.Logger] = None) -> None:
        if not (release_id and adapter_version and model_profile_id):
            raise ValueError("ledger worker: release_id, adapter_version and model_profile_id are required")
        if not 0 <= lease_seconds <= 3600:
            raise ValueError("ledger worker: lease_seconds %d is outside 0..3600" % lease_seconds)
        if not 0 <= wait_seconds <= 30:
            raise ValueError("ledger worker: wait_seconds %d is outside 0..30" % wait_seconds)
        self.client = client
        self.handler = handler
        self.holder_id = holder_id or default_holder_id()
        self.release_id, self.adapter_version, self.model_profile_id = release_id, adapter_version, model_profile_id
        self.lease_seconds = lease_seconds
        self.kinds, self.agent_ids, self.project_ids = kinds, agent_ids, project_ids
        self.concurrency = max(1, concurrency)
        self.long_polls = max(1, min(long_polls, self.concurrency))
        self.wait_seconds = wait_seconds
        self.idle_wait = idle_wait if idle_wait > 0 else B.IDLE_WAIT
        self.heartbeat_every = heartbeat_every
        self.shutdown_grace = shutdown_grace
        #: How long a handler's decide or wait_children waits before it parks the run, seconds
        #: (while the worker stops they park at once).
        self.park_after = park_after if park_after > 0 else DEFAULT_PARK_AFTER
        self.on_error = on_error
        self.on_claimed, self.on_held = on_claimed, on_held
        self.on_claim_failed, self.on_finished = on_claim_failed, on_finished
        self.log = logger or logging.getLogger("ledger_client.worker")
        self._stop = threading.Event()
        self._mu = threading.Lock()
        self._running: Set[Lease] = set()
        self._forced = False
        self._fatal: Optional[BaseException] = None
        self._turns = _Turns(self.long_polls)
        self._refusals: Dict[str, Tuple[float, int]] = {}

    @property
    def running(self) -> int:
        """How many handlers are running now."""
        with self._mu:
            return len(self._running)

    def stop(self) -> None:
        """Starts the shutdown: safe from any thread and from a signal handler."""
        self._stop.set()
        self._turns.wake_all()

    def _hook(self, name: str, fn: Optional[Callable[..., None]], *args: object) -> None:
        """Calls one of the user's hooks, containing whatever it raises (SystemExit and
        KeyboardInterrupt included): logged once, and the run goes on as if it had returned."""
        if fn is None:
            return
        try:
            fn(*args)
        except BaseException as e:  # noqa: B036 - a hook must not take the worker down
            self.log.error("a hook failed: %s raised %s", name, _describe(e))

    def run_until_signal(self, signals: Sequence[int] = (signal.SIGTERM, signal.SIGINT)) -> None:
        """run(), with SIGTERM and SIGINT starting the shutdown (call from the main thread)."""
        old = {s: signal.signal(s, lambda *_: self.stop()) for s in signals}
        try:
            self.run()
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def run(self) -> None:
        """Claims and handles runs until stop(), then shuts down. Raises the claim error that
        stopped claiming for good (Unauthorized, Forbidden, InvalidRequest) after shutting
        down the same way."""
        with self._mu:
            self._forced = False
        self._fatal = None
        threads = [threading.Thread(target=self._slot, name="ledger-worker-%d" % i, daemon=True)
                   for i in range(self.concurrency)]
        for t in threads:
            t.start()
        self._stop.wait()
        self.log.info("worker stopping", extra={"grace": self.shutdown_grace, "running": self.running})
        deadline = time.monotonic() + self.shutdown_grace
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in threads):
            self._force_release()
            for t in threads:
                t.join()
        self._stop.clear()
        if self._fatal is not None:
            raise self._fatal

    # ---- claiming ----

    def _claim_request(self, wait: int) -> ClaimRequest:
        return ClaimRequest(holder_id=self.holder_id, release_id=self.release_id,
                            adapter_version=self.adapter_version, model_profile_id=self.model_profile_id,
                            lease_seconds=self.lease_seconds or None, wait_seconds=wait,
                            kinds=list(self.kinds) if self.kinds else None,
                            agent_ids=list(self.agent_ids) if self.agent_ids else None,
                            project_ids=list(self.project_ids) if self.project_ids else None)

    def _slot(self) -> None:
        """One slot: claims a run, handles it, and again, until the worker stops."""
        failures = [0, 0]  # failed claims in a row, refused claims in a row
        while not self._stop.is_set():
            try:
                got = self._claim_one(failures)
            except BaseException as e:  # a fatal claim error
                self._fatal = self._fatal or e
                self.stop()
                return
            if got is None:
                return
            lease, sent = got
            if self._stop.is_set():
                lease._end(WorkerShutdown("ledger: worker shutting down: claimed while stopping"))
                self._release_uncharged(lease, "claimed while stopping")
                self._finished(Result(lease, Outcome.SHUTDOWN_RELEASED))
                return
            self._handle(lease, sent)

    def _claim_one(self, failures: List[int]) -> Optional[Tuple[Lease, float]]:
        """Claims until it leases a run (returned with the time its claim was sent), or None
        once the worker stops. It claims at once first; after a claim that found nothing it
        waits for a long-poll turn (or a kick, for one more claim at once)."""
        waiting = False
        while not self._stop.is_set():
            wait, long = 0, False
            if waiting and self.wait_seconds > 0:
                turn = self._turns.take(self._stop)
                if turn is None:
                    return None
                if turn:
                    wait, long = self.wait_seconds, True
            sent = time.monotonic()
            try:
                claim = self.client.claim_run(self._claim_request(wait))
            except ClaimHeld as held:
                failures[0] = failures[1] = 0
                self._hook("on_held", self.on_held, held.retry_after)
                jitter = min(held.retry_after / B.HELD_JITTER_DIVISOR, B.HELD_JITTER_MAX)
                self._stop.wait(held.retry_after + jitter * secrets.randbelow(1000) / 1000)
                continue
            except Exception as e:
                self._hook("on_claim_failed", self.on_claim_failed, e)
                if _fatal_claim(e):
                    self.log.error("claim refused; the worker stops: %s", e)
                    raise
                if _refused_claim(e):
                    failures[0] = 0
                    failures[1] += 1
                    d = doubled(B.REFUSED_BASE, B.REFUSED_MAX, failures[1])
                    pause = d / 2 + d / 2 * secrets.randbelow(1001) / 1000  # equal jitter
                    self._log_refusal(cast(LedgerProblem, e), pause)
                    self._stop.wait(pause)
                    continue
                failures[1] = 0
                failures[0] += 1
                pause = doubled(B.FAILED_BASE, B.FAILED_MAX, failures[0]) * (secrets.randbelow(1000) + 1) / 1000
                if isinstance(e, LedgerProblem) and e.retry_after and e.retry_after > pause:
                    pause = e.retry_after
                self.log.warning("claim failed; trying again in %.2fs: %s", pause, e)
                self._stop.wait(pause)
                continue
            finally:
                if long:
                    self._turns.give()
            failures[0] = failures[1] = 0
            if claim is None:
                waiting = True
                if self.wait_seconds == 0:
                    self._stop.wait(self.idle_wait)
                continue
            self._turns.kick()  # where there was a run there may be more
            return Lease(self.client, claim), sent
        return None

    def _log_refusal(self, err: LedgerProblem, pause: float) -> None:
        """Logs a refused claim unless its cause was logged less than a minute ago (the
        table's refusalLogEveryMs): a worker refused for an hour says so once a minute."""
        cause = "%d %s" % (err.status, err.code)
        now = time.monotonic()
        with self._mu:
            last = self._refusals.get(cause)
            if last is not None and now - last[0] < B.REFUSAL_LOG_EVERY:
                self._refusals[cause] = (last[0], last[1] + 1)
                return
            self._refusals[cause] = (now, 0)
        self.log.error("claim refused: check the worker's configuration (release, project, kinds); "
                       "trying again in %.2fs (%d refusals unlogged since the last): %s",
                       pause, last[1] if last else 0, err)

    # ---- handling ----

    def _handle(self, lease: Lease, sent: float) -> None:
        with self._mu:
            forced = self._forced
            if not forced:
                self._running.add(lease)
        if forced:  # the grace ran out between the claim and now
            lease._end(WorkerShutdown("ledger: worker shutting down: the grace ran out"))
            self._release_uncharged(lease, "shutdown grace ran out")
            self._finished(Result(lease, Outcome.SHUTDOWN_RELEASED))
            return
        lease.park_after, lease.worker_stopping = self.park_after, self._stop
        try:
            self._log_resumed(lease)
            self._hook("on_claimed", self.on_claimed, lease)
            stop_hb = threading.Event()
            hb = threading.Thread(target=self._heartbeat, args=(lease, sent, stop_hb),
                                  name="ledger-heartbeat-" + lease.run_id[:8], daemon=True)
            hb.start()
            start = time.monotonic()
            err: Optional[BaseException] = None
            try:
                try:
                    self.handler(lease)
                except BaseException as e:  # noqa: B036 - SystemExit and the like end the run, not the worker
                    err = e
                    if not isinstance(e, (LeaseStopped, Permanent, RetryAfter)):
                        self.log.warning("handler raised %s\n%s", _describe(e), traceback.format_exc())
            finally:
                # Whatever the handler did, its lease is renewed no longer.
                stop_hb.set()
                hb.join()
            duration = time.monotonic() - start
            r = self._settle(lease, err)
            r.duration = duration
            self._finished(r)
        finally:
            with self._mu:
                self._running.discard(lease)

    def _log_resumed(self, lease: Lease) -> None:
        """Says so when a run was claimed before (its epoch is past 1): a worker killed mid-run
        costs the run one of its attempts, and a run out of attempts ends exhausted."""
        run = lease.run
        if lease.fencing_token <= 1:
            return
        self.log.warning("resuming run %s: attempt %d of %d (epoch %d; a run whose attempts are "
                         "all spent ends exhausted)", lease.run_id, run.attempts_spent + 1,
                         run.max_attempts, lease.fencing_token)

    def _heartbeat(self, lease: Lease, sent: float, stop: threading.Event) -> None:
        """Renews the lease every heartbeat_every (default a third of its length) until stop.
        A refusal that means the lease is gone ends it; so do renewals that keep failing until
        the lease has passed by this machine's clock, counted from when the claim or the last
        good renewal was sent. A pending cancel is acknowledged once."""
        every = max(self.heartbeat_every or lease.length / B.HEARTBEAT_DIVISOR, B.HEARTBEAT_MIN)
        deadline = sent + lease.length
        acked = False
        wait = every
        while not stop.wait(wait):
            if lease.err is not None:
                return
            hb_sent = time.monotonic()
            try:
                hb = lease.heartbeat()
            except Exception as e:
                if lease.err is not None:
                    if isinstance(lease.err, LeaseLost):
                        self.log.warning("lease lost: %s", e)
                    return
                if time.monotonic() >= deadline:
                    lease._lose("renewals failed until the lease passed by this machine's clock: %s" % e)
                    self.log.warning("lease lost: renewals failed until it passed: %s", e)
                    return
                wait = min(every, max((deadline - time.monotonic()) / 3, 0.01))
                self.log.warning("renewing the lease failed; trying again in %.2fs: %s", wait, e)
                continue
            deadline = hb_sent + lease.length
            wait = every
            if hb.cancel_requested and not acked:
                acked = True
                try:
                    lease.observe_cancellation()
                except LeaseLost:
                    pass
                except Exception as e:
                    self.log.warning("acknowledging the cancel request failed: %s", e)
                self.log.info("run cancel requested")

    def _settle(self, lease: Lease, herr: Optional[BaseException]) -> Result:
        """Ends the attempt as the handler's end says, unless the lease already ended."""
        r = Result(lease, Outcome.UNSETTLED, error=None if isinstance(herr, Parked) else herr)
        ended = lease.err
        if ended is not None:
            if isinstance(ended, Parked):
                r.outcome = Outcome.PARKED
                self.log.info("run %s parked: %s", lease.run_id, ended)
            elif isinstance(ended, LeaseLost):
                r.outcome = Outcome.LEASE_LOST
            elif isinstance(ended, WorkerShutdown):
                r.outcome = Outcome.SHUTDOWN_RELEASED
            else:
                r.outcome = Outcome.SETTLED_BY_HANDLER
            return r
        try:
            if lease.cancel_requested:
                r.outcome = Outcome.CANCELLED
                lease.complete(CompletionState.CANCELLED, error=None if herr is None else error_of(herr))
            elif herr is None:
                r.outcome = Outcome.SUCCEEDED
                lease.complete(CompletionState.SUCCEEDED)
            elif isinstance(herr, Permanent):
                r.outcome = Outcome.FAILED
                lease.complete(CompletionState.FAILED, error=error_of(herr))
            else:
                r.outcome = Outcome.RELEASED
                try:
                    retry = self.on_error(lease, herr)
                except BaseException as e:  # noqa: B036 - contained like a hook
                    self.log.error("a hook failed: on_error raised %s", _describe(e))
                    retry = default_on_error(lease, herr)
                lease.release(retry.charge, retry.after, error=error_of(herr))
        except LeaseLost as e:
            r.outcome, r.settle_error = Outcome.LEASE_LOST, e
            self.log.warning("lease lost before it was settled: %s", e)
        except Exception as e:
            if isinstance(lease.err, WorkerShutdown):
                r.outcome = Outcome.SHUTDOWN_RELEASED
            else:
                r.outcome, r.settle_error = Outcome.UNSETTLED, e
                self.log.error("settling the lease failed; the reaper takes the run back: %s", e)
        return r

    # ---- shutdown ----

    def _force_release(self) -> None:
        """Ends every running lease with WorkerShutdown and releases it uncharged, due at
        once."""
        with self._mu:
            self._forced = True
            leases = list(self._running)
        threads = []
        for lease in leases:
            if not lease._end(WorkerShutdown("ledger: worker shutting down: the grace of %gs ran out"
                                             % self.shutdown_grace)):
                continue  # settled or lost meanwhile
            t = threading.Thread(target=self._release_uncharged, args=(lease, "shutdown grace ran out"), daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join()

    def _release_uncharged(self, lease: Lease, why: str) -> None:
        """Gives a run back as it was, due at once, bypassing the lease's local refusal."""
        try:
            self.client.release_attempt(lease.attempt_id, ReleaseAttemptRequest(
                fencing_token=lease.fencing_token, charge=False, retry_after_seconds=0))
        except Exception as e:
            self.log.warning("releasing the lease failed (%s); the reaper takes the run back: %s", why, e)
            return
        self.log.info("released the lease uncharged: %s", why)

    def _finished(self, r: Result) -> None:
        self._hook("on_finished", self.on_finished, r)
