"""api/worker.json is the Workers' one behaviour table: the SDK's table is that file, the
Worker's defaults are its values, and an idle Worker's claim slots wait on a condition
instead of polling."""

from __future__ import annotations

import json
import threading
import time
import unittest
from typing import Any, List

import ledger_client as lc

from . import support as s

from ledger_client import _behaviour as B


def _strip(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if k != "$comment"}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


class Table(unittest.TestCase):
    def test_the_table_is_api_worker_json(self) -> None:
        with open(s.REPO / "api" / "worker.json", encoding="utf-8") as f:
            table = _strip(json.load(f))
        self.assertEqual(B.BEHAVIOUR, table)
        self.assertEqual(lc.lease.LEASE_LOSS_CODES, tuple(table["refusalClasses"]["leaseLost"]))
        self.assertEqual(lc.lease.HEARTBEAT_LOSS_CODES, tuple(table["refusalClasses"]["heartbeatLost"]))

    def test_the_worker_defaults_are_the_tables(self) -> None:
        w = lc.Worker(lc.Client("http://127.0.0.1:1"), lambda lease: None, release_id="r", adapter_version="1",
                      model_profile_id="m", concurrency=8)
        self.assertEqual(w.wait_seconds, B.BEHAVIOUR["claim"]["waitSeconds"])
        self.assertEqual(w.long_polls, B.BEHAVIOUR["claim"]["longPolls"])
        self.assertEqual(w.idle_wait * 1000, B.BEHAVIOUR["claim"]["idleWaitMs"])
        self.assertEqual(w.shutdown_grace * 1000, B.BEHAVIOUR["shutdown"]["graceMs"])
        from ledger_client.worker import _fatal_claim, _refused_claim
        for code in B.BEHAVIOUR["refusalClasses"]["fatal"]:
            self.assertTrue(_fatal_claim(lc.problem_codes.BY_CODE[code](status=400, code=code)), code)
        for status, want in ((400, True), (404, True), (409, True), (408, False), (429, False), (500, False)):
            self.assertEqual(_refused_claim(lc.LedgerProblem(status=status, code="x")), want, status)


class IdleSlots(unittest.TestCase):
    def test_idle_slots_wait_without_polling(self) -> None:
        """Slots without a long-poll turn sleep on a condition until woken: over an idle
        second they wait a handful of times, where polling every 50 ms waits about 20 times
        a second per slot."""
        srv = s.server()
        kind = s.unique("idle")
        w = s.worker(srv.client(), lambda lease: None, kind, concurrency=4, long_polls=1, wait_seconds=2)
        waits: List[str] = []
        real_wait = threading.Condition.wait

        def counting(self: threading.Condition, timeout: Any = None) -> bool:
            name = threading.current_thread().name
            if name.startswith("ledger-worker-"):
                waits.append(name)
            return real_wait(self, timeout)

        t = threading.Thread(target=w.run, daemon=True)
        setattr(threading.Condition, "wait", counting)
        try:
            t.start()
            time.sleep(1.0)
        finally:
            setattr(threading.Condition, "wait", real_wait)
            w.stop()
            t.join(10)
        self.assertFalse(t.is_alive())
        self.assertLess(len(waits), 12, "idle slots woke %d times in a second" % len(waits))
