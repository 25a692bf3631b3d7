"""The Worker against the real server: every handler outcome, cancel, lease loss (found by
the heartbeat and by a write), shutdown (the grace, SIGTERM), and a worker process killed with
SIGKILL whose run a second worker resumes with a greater epoch."""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
from typing import Dict, List, Optional, Tuple

import ledger_client as lc

from . import support as s


class Running:
    """A Worker running on a thread, its results collected."""

    def __init__(self, c: lc.Client, handler: lc.Handler, kind: str, **kw: object) -> None:
        self.results: List[lc.Result] = []
        self.done = threading.Event()
        self.w = s.worker(c, handler, kind, on_finished=self._finished, **kw)
        self.err: Optional[BaseException] = None
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _finished(self, r: lc.Result) -> None:
        self.results.append(r)

    def _run(self) -> None:
        try:
            self.w.run()
        except BaseException as e:  # noqa: BLE001 (reported to the test)
            self.err = e

    def wait_results(self, n: int, timeout: float = 20) -> List[lc.Result]:
        s.eventually(lambda: len(self.results) >= n, timeout)
        return self.results

    def stop(self) -> None:
        self.w.stop()
        self.t.join(30)
        assert not self.t.is_alive(), "the worker did not stop"


class Outcomes(unittest.TestCase):
    def setUp(self) -> None:
        srv = s.server()
        self.rt, self.admin = srv.client(), srv.client(admin=True)

    def run_one(self, handler: lc.Handler, **kw: object) -> lc.Result:
        kind = s.unique("outcome")
        run = self.rt.enqueue_run(s.spec(kind, max_attempts=3))
        w = Running(self.rt, handler, kind, **kw)
        try:
            (r,) = w.wait_results(1)
        finally:
            w.stop()
        self.assertIsNone(w.err)
        self.assertEqual(r.lease.run_id, run.run_id)
        return r

    def test_return_completes_succeeded(self) -> None:
        seen = []

        def h(lease: lc.Lease) -> None:
            seen.append(lease.input)
            lease.checkpoint(lc.Phase.ACTING, "done")

        r = self.run_one(h)
        self.assertEqual(r.outcome, lc.Outcome.SUCCEEDED)
        self.assertIsNone(r.error)
        run = self.rt.get_run(r.lease.run_id)
        self.assertEqual(run.outcome, lc.RunOutcome.SUCCEEDED)

    def test_permanent_completes_failed(self) -> None:
        def h(lease: lc.Lease) -> None:
            try:
                int("x")
            except ValueError as e:
                raise lc.Permanent("bad input") from e

        r = self.run_one(h)
        self.assertEqual(r.outcome, lc.Outcome.FAILED)
        self.assertIsInstance(r.error, lc.Permanent)
        self.assertEqual(self.rt.get_run(r.lease.run_id).outcome, lc.RunOutcome.FAILED)
        # The ledger keeps the cause under the marker, with its traceback.
        a, _ = self.rt.get_attempt(r.lease.attempt_id)
        assert a.error is not None
        self.assertEqual((a.error.code, a.error.message), ("valueerror", "invalid literal for int() with base 10: 'x'"))
        self.assertTrue(a.error.details["stack"])

    def test_other_errors_release_charged(self) -> None:
        def h(lease: lc.Lease) -> None:
            raise RuntimeError("flaky tool")

        r = self.run_one(h)
        self.assertEqual(r.outcome, lc.Outcome.RELEASED)
        run = self.rt.get_run(r.lease.run_id)
        self.assertEqual(run.state, lc.RunState.QUEUED)
        self.assertEqual(run.attempts_spent, r.lease.run.attempts_spent + 1)
        a, _ = self.rt.get_attempt(r.lease.attempt_id)
        self.assertEqual(a.state, lc.AttemptState.RELEASED)
        assert a.error is not None
        self.assertEqual((a.error.code, a.error.message), ("runtimeerror", "flaky tool"))

    def test_retry_after_releases_charged_due_then(self) -> None:
        def h(lease: lc.Lease) -> None:
            raise lc.RetryAfter(120, "rate limited by the model")

        before = dt.datetime.now(dt.timezone.utc)
        r = self.run_one(h)
        self.assertEqual(r.outcome, lc.Outcome.RELEASED)
        run = self.rt.get_run(r.lease.run_id)
        self.assertEqual(run.attempts_spent, r.lease.run.attempts_spent + 1)
        due = (run.due_at - before).total_seconds()
        self.assertTrue(115 <= due <= 135, due)

    def test_a_keyed_decision_is_asked_once_and_parking_waits_for_it(self) -> None:
        seen: List[Tuple[str, str, str]] = []

        def h(lease: lc.Lease) -> None:
            d = lease.request_decision(lc.DecisionKind.APPROVAL, key="ship")
            again = lease.request_decision(lc.DecisionKind.APPROVAL, key="ship")
            seen.append((d.decision_id, again.decision_id, str(d.status)))
            if d.status == lc.DecisionStatus.PENDING:
                lease.park(decision_ids=[d.decision_id])

        kind = s.unique("park")
        run = self.rt.enqueue_run(s.spec(kind, max_attempts=3))
        w = Running(self.rt, h, kind)
        try:
            parked = w.wait_results(1)[0]
            self.assertEqual(parked.outcome, lc.Outcome.PARKED)
            self.assertEqual(self.rt.get_attempt(parked.lease.attempt_id)[0].state, lc.AttemptState.PARKED)
            self.assertEqual(seen[0][0], seen[0][1], "the same key answers the same decision")
            self.assertEqual(self.rt.get_run(run.run_id).state, lc.RunState.QUEUED)
            self.admin.answer_pending(seen[0][0], lc.AnswerDecisionRequest(status=lc.AnswerStatus.APPROVED))
            resumed = w.wait_results(2)[1]
        finally:
            w.stop()
        self.assertEqual(resumed.outcome, lc.Outcome.SUCCEEDED)
        self.assertEqual(seen[1], (seen[0][0], seen[0][0], "approved"))

    def test_handler_may_settle_itself(self) -> None:
        def h(lease: lc.Lease) -> None:
            lease.complete(lc.CompletionState.SUCCEEDED, outcome_hash="h1")

        r = self.run_one(h)
        self.assertEqual(r.outcome, lc.Outcome.SETTLED_BY_HANDLER)
        a, _ = self.rt.get_attempt(r.lease.attempt_id)
        self.assertEqual(a.outcome_hash, "h1")

    def test_heartbeats_keep_a_long_handler_leased(self) -> None:
        def h(lease: lc.Lease) -> None:
            first = lease.leased_until
            time.sleep(2.6)  # past the 2 s lease: renewed every third of it meanwhile
            self.assertGreater(lease.leased_until, first)
            lease.checkpoint(lc.Phase.ACTING, "still mine")

        r = self.run_one(h, lease_seconds=2)
        self.assertEqual(r.outcome, lc.Outcome.SUCCEEDED, r.error)

    def test_a_settle_that_fails_is_unsettled(self) -> None:
        proxy = s.DroppingProxy(s.server().url)
        self.addCleanup(proxy.close)
        proxy.drop_first("POST", "/complete", times=100)
        c = lc.Client(proxy.url, s.server().runtime_key, retry=lc.RetryPolicy(max_attempts=1))
        kind = s.unique("unsettled")
        run = self.rt.enqueue_run(s.spec(kind))
        w = Running(c, lambda lease: None, kind)
        try:
            (r,) = w.wait_results(1)
        finally:
            w.stop()
        self.assertEqual(r.outcome, lc.Outcome.UNSETTLED)
        self.assertIsInstance(r.settle_error, lc.TransportError)
        self.assertEqual(self.rt.get_run(run.run_id).outcome, lc.RunOutcome.SUCCEEDED)  # it had applied

    def test_cancel_completes_cancelled(self) -> None:
        started = threading.Event()
        raised: List[BaseException] = []

        def h(lease: lc.Lease) -> None:
            started.set()
            try:
                while True:
                    lease.sleep(0.05)
            except lc.CancelRequested as e:
                raised.append(e)
                lease.checkpoint(lc.Phase.FINALIZING, "partial")  # the lease stays usable
                raise

        kind = s.unique("cancel")
        run = self.rt.enqueue_run(s.spec(kind))
        w = Running(self.rt, h, kind, lease_seconds=3)
        try:
            self.assertTrue(started.wait(20))
            self.admin.cancel_run(run.run_id)
            (r,) = w.wait_results(1)
        finally:
            w.stop()
        self.assertEqual(r.outcome, lc.Outcome.CANCELLED)
        self.assertTrue(raised)
        self.assertTrue(r.lease.cancelled.is_set())
        ended = self.rt.get_run(run.run_id)
        self.assertEqual(ended.outcome, lc.RunOutcome.CANCELLED)
        a, _ = self.rt.get_attempt(r.lease.attempt_id)
        self.assertIsNotNone(a.cancellation_observed_at)
        self.assertEqual([c.adapter_state_ref for c in self.rt.checkpoints(a.attempt_id)], ["partial"])


class FatalClaim(unittest.TestCase):
    def test_a_claim_that_cannot_succeed_stops_the_worker(self) -> None:
        srv = s.server()
        failed: List[BaseException] = []
        w = s.worker(lc.Client(srv.url, "ldg_0000000000000000_wrong"), lambda lease: None, s.unique("fatal"),
                     on_claim_failed=failed.append)
        with self.assertRaises(lc.Unauthorized):
            w.run()
        self.assertIsInstance(failed[0], lc.Unauthorized)
        admin_worker = s.worker(srv.client(admin=True), lambda lease: None, s.unique("fatal"))
        with self.assertRaises(lc.Forbidden):  # claiming needs the runtime role
            admin_worker.run()


class LeaseLoss(unittest.TestCase):
    def setUp(self) -> None:
        srv = s.server()
        self.rt = srv.client()

    def test_heartbeat_finds_the_loss(self) -> None:
        """Another holder's write ends the attempt: the next heartbeat is refused, lease.lost
        is set, and every write under the lease raises LeaseLost without being sent."""
        kind = s.unique("lost-hb")
        self.rt.enqueue_run(s.spec(kind))
        got: List[lc.Lease] = []
        after: List[BaseException] = []
        claimed = threading.Event()

        def h(lease: lc.Lease) -> None:
            got.append(lease)
            claimed.set()
            self.assertTrue(lease.lost.wait(20))
            try:
                lease.checkpoint(lc.Phase.ACTING, "too late")
            except lc.LeaseLost as e:
                after.append(e)
            lease.check()

        w = Running(self.rt, h, kind, lease_seconds=3)
        try:
            self.assertTrue(claimed.wait(20))
            lease = got[0]
            # Someone else with the token gives the run back: the holder's lease is gone.
            self.rt.release_attempt(lease.attempt_id, lc.ReleaseAttemptRequest(
                fencing_token=lease.fencing_token, charge=False, retry_after_seconds=3600))
            (r,) = w.wait_results(1)
        finally:
            w.stop()
        self.assertEqual(r.outcome, lc.Outcome.LEASE_LOST)
        self.assertIsInstance(r.error, lc.LeaseLost)
        self.assertIsInstance(after[0], lc.LeaseLost)
        problem = getattr(r.lease.err, "problem", None)
        self.assertIsInstance(problem, lc.LedgerProblem)
        self.assertIn(problem.code, ("attempt_ended", "stale_lease", "lease_expired"))  # type: ignore[union-attr]
        self.assertEqual(list(self.rt.checkpoints(lease.attempt_id)), [])
        self.assertTrue(r.lease.stopping.is_set())

    def test_a_write_finds_the_loss(self) -> None:
        """Renewals stop, the lease passes and the reaper takes the run back: the handler's
        next write is refused and raises LeaseLost; nothing is sent after."""
        kind = s.unique("lost-write")
        self.rt.enqueue_run(s.spec(kind, max_attempts=1))  # taken back once, it ends: no second claim
        errs: List[BaseException] = []

        def h(lease: lc.Lease) -> None:
            lease.checkpoint(lc.Phase.ACTING, "first")
            time.sleep(2.0)  # past the 1 s lease, with no renewal
            try:
                lease.checkpoint(lc.Phase.ACTING, "second")
            except lc.LeaseLost as e:
                errs.append(e)
                self.assertTrue(lease.lost.is_set())
            try:
                lease.set_phase(lc.Phase.FINALIZING)
            except lc.LeaseLost as e:
                errs.append(e)

        w = Running(self.rt, h, kind, lease_seconds=1, heartbeat_every=60.0)
        try:
            (r,) = w.wait_results(1, timeout=30)
        finally:
            w.stop()
        self.assertEqual(len(errs), 2, errs)
        self.assertIsNotNone(errs[0].problem)  # type: ignore[attr-defined]
        self.assertIs(errs[1], errs[0])  # the second write was refused locally, with the first cause
        self.assertEqual(r.outcome, lc.Outcome.LEASE_LOST)
        self.assertEqual([c.adapter_state_ref for c in self.rt.checkpoints(r.lease.attempt_id)], ["first"])


class Shutdown(unittest.TestCase):
    def setUp(self) -> None:
        srv = s.server()
        self.srv = srv
        self.rt = srv.client()

    def test_grace_lets_handlers_finish_then_releases_uncharged(self) -> None:
        kind = s.unique("grace")
        quick_run = self.rt.enqueue_run(s.spec(kind))
        slow_run = self.rt.enqueue_run(s.spec(kind))
        started = threading.Barrier(3)
        shutdown_seen: List[BaseException] = []

        def h(lease: lc.Lease) -> None:
            started.wait(20)
            if lease.run_id == quick_run.run_id:
                time.sleep(0.2)  # finishes within the grace
                return
            try:
                while True:
                    lease.sleep(0.05)
            except lc.WorkerShutdown as e:
                shutdown_seen.append(e)
                raise

        w = Running(self.rt, h, kind, concurrency=2, shutdown_grace=1.0)
        started.wait(20)
        t0 = time.monotonic()
        w.stop()
        self.assertLess(time.monotonic() - t0, 10)
        by_run = {r.lease.run_id: r for r in w.results}
        self.assertEqual(by_run[quick_run.run_id].outcome, lc.Outcome.SUCCEEDED)
        self.assertEqual(by_run[slow_run.run_id].outcome, lc.Outcome.SHUTDOWN_RELEASED)
        self.assertTrue(shutdown_seen)
        slow = self.rt.get_run(slow_run.run_id)
        self.assertEqual(slow.state, lc.RunState.QUEUED)
        self.assertEqual(slow.attempts_spent, by_run[slow_run.run_id].lease.run.attempts_spent)  # uncharged
        self.assertEqual(self.rt.get_run(quick_run.run_id).outcome, lc.RunOutcome.SUCCEEDED)

    def test_sigterm_releases_uncharged(self) -> None:
        kind = s.unique("sigterm")
        run = self.rt.enqueue_run(s.spec(kind))
        p = spawn(self.srv, kind, lease_seconds=5)
        self.addCleanup(p.kill)
        line = read_until(p, "checkpointed")
        attempt_id = line.split()[1]
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("finished shutdown_released", out)
        self.assertIn("stopped", out)
        a, _ = self.rt.get_attempt(attempt_id)
        self.assertEqual(a.state, lc.AttemptState.RELEASED)
        got = self.rt.get_run(run.run_id)
        self.assertEqual((got.state, got.attempts_spent), (lc.RunState.QUEUED, 0))


class Crash(unittest.TestCase):
    def test_sigkill_then_resume_with_a_greater_epoch(self) -> None:
        srv = s.server()
        rt = srv.client()
        kind = s.unique("crash")
        run = rt.enqueue_run(s.spec(kind))
        p = spawn(srv, kind, lease_seconds=2)
        line = read_until(p, "checkpointed")
        _, first_attempt, first_token = line.split()
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        assert p.stdout is not None
        p.stdout.close()

        resumed: List[Optional[lc.LastCheckpoint]] = []

        def h(lease: lc.Lease) -> None:
            resumed.append(lease.resume())
            lease.checkpoint(lc.Phase.FINALIZING, "step-2")

        said: List[str] = []

        class Said(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                said.append(record.getMessage())

        log = logging.getLogger("test.crash." + kind)
        log.propagate = False
        log.addHandler(Said())
        w = Running(rt, h, kind, logger=log)
        try:
            (r,) = w.wait_results(1, timeout=30)  # after the reaper takes the lease back
        finally:
            w.stop()
        self.assertEqual(r.outcome, lc.Outcome.SUCCEEDED)
        self.assertEqual(r.lease.run_id, run.run_id)
        # The restarted worker says which attempt of how many it resumes (the kill spent one).
        self.assertIn("resuming run %s: attempt 2 of %d" % (run.run_id, run.max_attempts),
                      " | ".join(said))
        self.assertGreater(r.lease.fencing_token, int(first_token))
        last = resumed[0]
        assert last is not None
        self.assertEqual((last.sequence, last.attempt_id), (1, first_attempt))
        self.assertEqual([c.sequence for c in rt.checkpoints(r.lease.attempt_id)], [2])
        # The first worker's late write, with its token, is refused and changes nothing.
        with self.assertRaises(lc.LedgerProblem) as late:
            rt.append_checkpoint(first_attempt, lc.CheckpointRequest(
                fencing_token=int(first_token), sequence=2, phase=lc.Phase.ACTING,
                adapter_state_ref="late", adapter_version=s.ADAPTER, hash="h"))
        self.assertEqual(late.exception.status, 409)
        self.assertIn(late.exception.code, ("stale_lease", "attempt_ended"))
        self.assertEqual([c.sequence for c in rt.checkpoints(first_attempt)], [0, 1])
        self.assertEqual(rt.get_run(run.run_id).outcome, lc.RunOutcome.SUCCEEDED)


def spawn(srv: s.Server, kind: str, lease_seconds: int) -> "subprocess.Popen[str]":
    return subprocess.Popen([sys.executable, str(s.HERE / "worker_proc.py"), srv.url, srv.runtime_key, kind,
                             "checkpoint-and-hang", str(lease_seconds)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))


def read_until(p: "subprocess.Popen[str]", prefix: str, timeout: float = 30) -> str:
    assert p.stdout is not None
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        line: str = p.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError("no %r line from the worker process: %s" % (prefix, "".join(lines)))


if __name__ == "__main__":
    unittest.main()


class ErrorOf(unittest.TestCase):
    """What error_of makes of an exception, without a server."""

    def test_codes_messages_and_bounds(self) -> None:
        class Busy(Exception):
            error_code = "upstream.busy"

        class Bad(Exception):
            error_code = "Not A Code"

        cases = [
            (Busy("try later"), "upstream.busy", "try later"),
            (Bad("x"), "tests.test_worker.bad", "x"),
            (lc.RetryAfter(5), "ledger_client.worker.retryafter", "retry after 5s"),
            (KeyError(), "keyerror", "KeyError"),
            (ValueError("a\x00b" + "\U0001F600" * 1500), "valueerror", None),
        ]
        for exc, code, message in cases:
            with self.subTest(exc=type(exc).__name__):
                e = lc.error_of(exc)
                self.assertEqual(e.code, code)
                if message is not None:
                    self.assertEqual(e.message, message)
        # The bound is the one the served document states (api.MaxErrorMessage in Go).
        bound = s.openapi_document()["components"]["schemas"]["AttemptError"]["properties"]["message"]["maxLength"]
        long = lc.error_of(cases[-1][0]).message or ""
        self.assertTrue(long.startswith("a b") and long.endswith("\u2026"))
        self.assertEqual(sum(2 if ord(c) > 0xFFFF else 1 for c in long), bound)
        self.assertEqual(lc.error_of(ValueError("x" * bound)).message, "x" * bound)

    def test_markers_keep_what_the_handler_said(self) -> None:
        # raise Permanent("bad input") from e: the cause's type and message, and the
        # handler's own words first in the chain (they were dropped).
        try:
            try:
                int("x")
            except ValueError as e:
                raise lc.Permanent("bad input") from e
        except lc.Permanent as marker:
            got = lc.error_of(marker)
        self.assertEqual((got.code, got.message), ("valueerror", "invalid literal for int() with base 10: 'x'"))
        assert got.details is not None
        self.assertEqual(got.details["chain"], ["bad input", "invalid literal for int() with base 10: 'x'"])
        # raise Permanent("bad input") inside the except, without "from": the exception
        # being handled is the cause all the same.
        try:
            try:
                empty: Dict[str, int] = {}
                empty["k"]
            except KeyError:
                raise lc.Permanent("no such key")
        except lc.Permanent as marker:
            got = lc.error_of(marker)
        self.assertEqual((got.code, got.message), ("keyerror", "'k'"))
        assert got.details is not None
        self.assertEqual(got.details["chain"], ["no such key", "'k'"])

    def test_a_script_s_own_exception_is_named_without_main(self) -> None:
        class UpstreamBusy(Exception):
            pass

        UpstreamBusy.__module__ = "__main__"  # as a class of the script run is
        UpstreamBusy.__qualname__ = "UpstreamBusy"
        got = lc.error_of(UpstreamBusy("503"))
        self.assertEqual((got.code, got.message), ("upstreambusy", "503"))
        assert got.details is not None
        self.assertEqual(got.details["type"], "UpstreamBusy")
