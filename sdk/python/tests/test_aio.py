"""The asyncio variant: a coroutine handler's run completes as a thread handler's does, and a
cancel interrupts the coroutine at its next await (a thread handler must check)."""

from __future__ import annotations

import asyncio
import threading
import time
import unittest
from typing import List

import ledger_client as lc

from . import support as s


def run_worker(w: lc.Worker, results: List[lc.Result], n: int) -> None:
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    try:
        s.eventually(lambda: len(results) >= n, 20)
    finally:
        w.stop()
        t.join(30)


class Async(unittest.TestCase):
    def test_coroutine_handler_succeeds(self) -> None:
        rt = s.server().client()
        kind = s.unique("aio")
        rt.enqueue_run(s.spec(kind, input={"n": 2}))
        results: List[lc.Result] = []

        async def handle(lease: lc.AsyncLease) -> None:
            last = await lease.resume()
            self.assertIsNone(last)
            for i in range(lease.input["n"]):
                await asyncio.sleep(0.01)
                await lease.checkpoint(lc.Phase.ACTING, "step-%d" % i)

        w = lc.async_worker(rt, handle, **s.worker_options(kind, on_finished=results.append))
        run_worker(w, results, 1)
        self.assertEqual(results[0].outcome, lc.Outcome.SUCCEEDED)
        self.assertEqual([c.adapter_state_ref for c in rt.checkpoints(results[0].lease.attempt_id)],
                         ["step-0", "step-1"])

    def test_cancel_interrupts_the_coroutine(self) -> None:
        srv = s.server()
        rt, admin = srv.client(), srv.client(admin=True)
        kind = s.unique("aio-cancel")
        run = rt.enqueue_run(s.spec(kind))
        results: List[lc.Result] = []
        started = threading.Event()
        interrupted: List[float] = []

        async def handle(lease: lc.AsyncLease) -> None:
            started.set()
            t0 = time.monotonic()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                interrupted.append(time.monotonic() - t0)
                await lease.checkpoint(lc.Phase.FINALIZING, "partial")  # still usable after a cancel
                raise

        w = lc.async_worker(rt, handle, **s.worker_options(kind, lease_seconds=3, on_finished=results.append))
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        try:
            self.assertTrue(started.wait(20))
            admin.cancel_run(run.run_id)
            s.eventually(lambda: len(results) >= 1, 20)
        finally:
            w.stop()
            t.join(30)
        self.assertEqual(results[0].outcome, lc.Outcome.CANCELLED)
        self.assertIsInstance(results[0].error, lc.CancelRequested)
        self.assertLess(interrupted[0], 30)
        self.assertEqual(rt.get_run(run.run_id).outcome, lc.RunOutcome.CANCELLED)
        self.assertEqual([c.adapter_state_ref for c in rt.checkpoints(results[0].lease.attempt_id)], ["partial"])


if __name__ == "__main__":
    unittest.main()
