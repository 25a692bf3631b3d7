"""A worker process stopped with SIGTERM or killed with SIGKILL while its handler waits on a
decision or a child run: the decision stays pending and answerable, the run waits without a
lease and spends no attempt for the wait, and once the condition closes a new worker process
resumes the handler, whose same decide (or delegate_step and wait_children) gets the answer
(or the child's outcome) at once. And decide past the Worker's park_after parks in-process."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import unittest
import uuid
from typing import Any, Dict, List

from . import support as s
from .test_worker import Running

import ledger_client as lc


class Proc:
    """A park_proc.py worker process and its JSON lines, read on a thread."""

    def __init__(self, srv: s.Server, kind: str, mode: str, child_kind: str = "") -> None:
        self.p = subprocess.Popen([sys.executable, str(s.HERE / "park_proc.py"), srv.url, srv.runtime_key, kind, mode,
                                   child_kind], stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, PYTHONUNBUFFERED="1"))
        self.lines: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))

    def next(self, event: str, timeout: float = 30) -> Dict[str, Any]:
        for e in self.seen:
            if e["event"] == event:
                return e
        while True:
            try:
                e = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError("no %r line from the worker process (exit %s); saw %r"
                                     % (event, self.p.poll(), self.seen)) from None
            self.seen.append(e)
            if e["event"] == event:
                return e

    def stop(self, sig: int) -> int:
        self.p.send_signal(sig)
        code = self.p.wait(30)
        self.t.join(5)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)
        self.t.join(5)
        if self.p.stdout is not None:
            self.p.stdout.close()


class Park(unittest.TestCase):
    def setUp(self) -> None:
        srv = s.server()
        self.srv = srv
        self.rt, self.admin = srv.client(), srv.client(admin=True)

    def proc(self, kind: str, mode: str, child_kind: str = "") -> Proc:
        p = Proc(self.srv, kind, mode, child_kind)
        self.addCleanup(p.kill)
        return p

    def states(self, run_id: str) -> List[str]:
        return [a.state.value for a in reversed(list(self.rt.attempts(run_id=run_id)))]

    def decision_survives(self, sig: int) -> None:
        kind = s.unique("decide")
        run = self.rt.enqueue_run(s.spec(kind, max_attempts=5))
        w1 = self.proc(kind, "decide")
        self.assertEqual(w1.next("waiting")["runId"], run.run_id)
        s.eventually(lambda: len(list(self.admin.run_decisions(run.run_id))) == 1)
        (asked,) = list(self.admin.run_decisions(run.run_id))
        self.assertEqual(asked.status, lc.DecisionStatus.PENDING)
        decision_id = asked.decision_id

        code = w1.stop(sig)
        # Parked at once (SIGTERM), or by the reaper once the 2 s lease passes (SIGKILL): that
        # attempt ends lost, uncharged, and the run waits on the decision it awaited.
        first = "parked" if sig == signal.SIGTERM else "lost"
        if sig == signal.SIGTERM:
            self.assertEqual(code, 0)
            self.assertEqual(w1.next("finished", timeout=1)["outcome"], "parked")
        s.eventually(lambda: self.states(run.run_id) == [first], timeout=20)
        parked = self.rt.get_run(run.run_id)
        self.assertEqual((parked.state, parked.attempts_spent), (lc.RunState.QUEUED, 0), "the wait spent no attempt")
        self.assertEqual(self.admin.get_decision(decision_id)[0].status, lc.DecisionStatus.PENDING,
                         "the decision outlives the attempt")

        w2 = self.proc(kind, "decide")
        self.admin.answer_pending(decision_id, lc.AnswerDecisionRequest(status=lc.AnswerStatus.APPROVED,
                                                                        answer={"note": "go"}))
        done = w2.next("done")
        self.assertEqual((done["decisionId"], done["status"], done["answer"]), (decision_id, "approved", {"note": "go"}),
                         "the resumed handler's same decide call got the answer")
        self.assertEqual(w2.next("finished")["outcome"], "succeeded")
        ended = self.rt.get_run(run.run_id)
        self.assertEqual((ended.outcome, ended.attempts_spent), (lc.RunOutcome.SUCCEEDED, 0))
        self.assertEqual(self.states(run.run_id), [first, "succeeded"])
        self.assertEqual(len(list(self.admin.run_decisions(run.run_id))), 1, "the person was asked once")
        w2.stop(signal.SIGTERM)

    def test_decision_survives_sigterm(self) -> None:
        self.decision_survives(signal.SIGTERM)

    def test_decision_survives_sigkill(self) -> None:
        self.decision_survives(signal.SIGKILL)

    def child_survives(self, sig: int) -> None:
        kind, child_kind = s.unique("parent"), s.unique("child")
        run = self.rt.enqueue_run(s.spec(kind, max_attempts=5))
        w1 = self.proc(kind, "delegate", child_kind)
        waiting = w1.next("waiting")
        self.assertEqual(waiting["runId"], run.run_id)
        w1.stop(sig)
        if sig == signal.SIGTERM:
            self.assertEqual(w1.next("finished", timeout=1)["outcome"], "parked")
            parked = self.rt.get_run(run.run_id)
            self.assertEqual((parked.state, parked.attempts_spent), (lc.RunState.QUEUED, 0), "the wait spent no attempt")
            self.assertEqual(self.states(run.run_id), ["parked"])

        # A second parent worker: after SIGTERM the run waits on its child and is claimed once
        # the child worker below ends it; after SIGKILL it is claimed once the lease passes,
        # and its repeated delegation (the same request) finds the same child.
        w2 = self.proc(kind, "delegate", child_kind)
        if sig == signal.SIGKILL:
            self.assertEqual(w2.next("waiting")["childRunId"], waiting["childRunId"],
                             "the repeated delegation found the same child")
        ran: List[str] = []
        cw = Running(self.rt, lambda lease: ran.append(lease.run_id), child_kind)
        try:
            (r,) = cw.wait_results(1, timeout=30)
        finally:
            cw.stop()
        self.assertEqual((r.outcome, ran), (lc.Outcome.SUCCEEDED, [waiting["childRunId"]]))
        done = w2.next("done")
        self.assertEqual((done["childRunId"], done["outcome"]), (waiting["childRunId"], "succeeded"))
        self.assertEqual(w2.next("finished")["outcome"], "succeeded")
        ended = self.rt.get_run(run.run_id)
        self.assertEqual(ended.outcome, lc.RunOutcome.SUCCEEDED)
        children = {d.child_run_id for a in self.rt.attempts(run_id=run.run_id) for d in self.rt.delegations(a.attempt_id)}
        self.assertEqual(children, {waiting["childRunId"]}, "one child, however often the parent delegated")
        # A parent killed while it waited on a child loses its lease (the reaper parks only a
        # run awaiting a decision): that attempt is charged, the wait never is.
        self.assertEqual(ended.attempts_spent, 0 if sig == signal.SIGTERM else 1)
        w2.stop(signal.SIGTERM)

    def test_child_survives_sigterm(self) -> None:
        self.child_survives(signal.SIGTERM)

    def test_child_survives_sigkill(self) -> None:
        self.child_survives(signal.SIGKILL)

    def test_decide_parks_past_park_after(self) -> None:
        kind = s.unique("bound")
        run = self.rt.enqueue_run(s.spec(kind))
        answers: List[str] = []
        asked: List[str] = []

        def handler(lease: lc.Lease) -> None:
            first = lease.decide(lc.DecisionKind.APPROVAL, key="ship")
            asked.append(first.decision_id)
            answers.append(first.status.value)
            second = lease.decide(lc.DecisionKind.INPUT)  # no key: "#1", the first unkeyed call
            answers.append(second.status.value)

        w = Running(self.rt, handler, kind, park_after=0.1)
        try:
            (r1,) = w.wait_results(1)
            self.assertEqual((r1.outcome, r1.error), (lc.Outcome.PARKED, None))
            (d1,) = list(self.admin.run_decisions(run.run_id))
            self.assertEqual(d1.status, lc.DecisionStatus.PENDING)
            self.admin.answer_pending(d1.decision_id, lc.AnswerDecisionRequest(status=lc.AnswerStatus.APPROVED))
            w.wait_results(2)
            self.assertEqual(w.results[1].outcome, lc.Outcome.PARKED)
            self.assertEqual(asked, [d1.decision_id], "the resumed handler's decide found the answered decision")
            (d2,) = [d for d in self.admin.run_decisions(run.run_id) if d.decision_id != d1.decision_id]
            self.admin.answer_pending(d2.decision_id, lc.AnswerDecisionRequest(status=lc.AnswerStatus.APPROVED,
                                                                               answer="text"))
            w.wait_results(3)
        finally:
            w.stop()
        self.assertEqual(w.results[2].outcome, lc.Outcome.SUCCEEDED)
        self.assertEqual(answers, ["approved", "approved", "approved"])
        self.assertEqual(len(list(self.admin.run_decisions(run.run_id))), 2, "each decision was asked once")
        self.assertEqual(self.rt.get_run(run.run_id).attempts_spent, 0)

    def test_delegate_step_ids_are_go_s(self) -> None:
        # The same name-based UUIDs as Go's uuid.NewSHA1 and the TypeScript SDK's uuidV5.
        self.assertEqual(str(uuid.uuid5(uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8"), "python.org")),
                         "886313e1-3b8a-5372-9b90-0c9aee199e5d")


if __name__ == "__main__":
    unittest.main()
