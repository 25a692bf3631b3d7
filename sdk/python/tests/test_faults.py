"""Faults in user code are contained (issue 34 item 2): the handler and every hook raise an
Exception, SystemExit and KeyboardInterrupt; each is logged, the run ends as the Worker's
rules say (a handler's fault releases it charged, its lease no longer renewed; a hook's
changes nothing), and the Worker goes on claiming."""

from __future__ import annotations

import logging
import threading
import unittest
from typing import Any, Callable, Dict, List, Optional, Tuple

import ledger_client as lc

from . import support as s


RAISERS: List[Callable[[], BaseException]] = [
    lambda: ValueError("boom"),
    lambda: SystemExit(3),
    lambda: KeyboardInterrupt(),
]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def hook_failures(self) -> List[str]:
        return [r.getMessage() for r in self.records if r.getMessage().startswith("a hook failed")]


class _Flaky(lc.Client):
    """A client whose first claim fails and whose second is held back."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.claims = 0

    def claim_run(self, req: lc.ClaimRequest) -> Optional[lc.Claim]:
        self.claims += 1
        if self.claims == 1:
            raise lc.TransportError("not_sent", "POST", "/v1/runs/claim", ConnectionRefusedError())
        if self.claims == 2:
            raise lc.ClaimHeld(0.01)
        return super().claim_run(req)


class Faults(unittest.TestCase):
    def setUp(self) -> None:
        self.srv = s.server()
        self.rt = self.srv.client()

    def work(self, handler: lc.Handler, client: Optional[lc.Client] = None,
             **hooks: Any) -> Tuple[List[lc.Run], _Records]:
        kind = s.unique("fault")
        ids = [self.rt.enqueue_run(s.spec(kind, max_attempts=5)).run_id for _ in range(2)]
        log = logging.getLogger("test.faults." + kind)
        log.propagate = False
        rec = _Records()
        log.addHandler(rec)
        log.setLevel(logging.DEBUG)
        w = s.worker(client or self.rt, handler, kind, logger=log, lease_seconds=3, heartbeat_every=0.1, **hooks)
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        try:
            def settled() -> bool:
                rs = [self.rt.get_run(i) for i in ids]
                return all(r.state == lc.RunState.ENDED or (r.state == lc.RunState.QUEUED and r.attempts_spent > 0)
                           for r in rs)
            s.eventually(settled, 20)
        finally:
            w.stop()
            t.join(30)
        self.assertFalse(t.is_alive(), "the worker did not stop")
        self.assertEqual(w.running, 0)
        return [self.rt.get_run(i) for i in ids], rec

    def test_the_handler_raising_releases_charged(self) -> None:
        for make in RAISERS:
            with self.subTest(type(make()).__name__):
                def handler(lease: lc.Lease, make: Callable[[], BaseException] = make) -> None:
                    raise make()
                runs, _ = self.work(handler)
                for r in runs:
                    # Released charged: queued again with one attempt spent, its lease gone
                    # (a heartbeat still renewing it would keep it leased).
                    self.assertEqual((r.state, r.attempts_spent), (lc.RunState.QUEUED, 1), r)

    def test_hooks_raising_change_nothing(self) -> None:
        for make in RAISERS:
            for hook in ("on_claimed", "on_finished"):
                with self.subTest(type(make()).__name__ + " " + hook):
                    def raiser(*_: Any, make: Callable[[], BaseException] = make) -> None:
                        raise make()
                    hooks: Dict[str, Any] = {hook: raiser}
                    runs, rec = self.work(lambda lease: None, None, **hooks)
                    for r in runs:
                        self.assertEqual(r.outcome, lc.RunOutcome.SUCCEEDED, r)
                    s.eventually(lambda: len(rec.hook_failures()) >= 2, 5)
                    self.assertEqual(len(rec.hook_failures()), 2, rec.hook_failures())

    def test_claim_hooks_raising_change_nothing(self) -> None:
        for make in RAISERS:
            with self.subTest(type(make()).__name__):
                def raiser(*_: Any, make: Callable[[], BaseException] = make) -> None:
                    raise make()
                c = _Flaky(self.srv.url, self.srv.runtime_key)
                runs, rec = self.work(lambda lease: None, client=c, concurrency=1,
                                      on_claim_failed=raiser, on_held=raiser)
                for r in runs:
                    self.assertEqual(r.outcome, lc.RunOutcome.SUCCEEDED, r)
                got = sorted(m.split(" ")[3] for m in rec.hook_failures())
                self.assertEqual(got, ["on_claim_failed", "on_held"])

    def test_on_error_raising_releases_as_by_default(self) -> None:
        def on_error(lease: lc.Lease, err: BaseException) -> lc.Retry:
            raise RuntimeError("bad on_error")

        def handler(lease: lc.Lease) -> None:
            raise ValueError("handler")
        runs, rec = self.work(handler, on_error=on_error)
        for r in runs:
            self.assertEqual((r.state, r.attempts_spent), (lc.RunState.QUEUED, 1), r)
        self.assertTrue(any("on_error" in m for m in rec.hook_failures()))
