"""The Client against the real server: a run's whole life by hand, problems, iterators,
ETag helpers, waits, 429 retried, and lost answers applied once."""

from __future__ import annotations

import threading
import time
import unittest
import uuid
from typing import List, Sequence

import ledger_client as lc

from . import support as s


class WholeLife(unittest.TestCase):
    """Every write of a run's life by hand, then read back through every history route."""

    def test_whole_life(self) -> None:
        srv = s.server()
        rt, admin = srv.client(), srv.client(admin=True)
        kind = s.unique("life")
        key = s.unique("event")
        req = s.spec(kind, input={"ticket": 42, "title": "naïve ☃"}, idempotency_key=key,
                     band=lc.Band.INTERACTIVE, max_attempts=2)
        run = rt.enqueue_run(req)
        self.assertEqual(run.state, lc.RunState.QUEUED)
        self.assertIsInstance(run.state, lc.RunState)
        self.assertEqual(run.band, lc.Band.INTERACTIVE)
        # An exact repeat under the key answers the same run; another request under it is refused.
        self.assertEqual(rt.enqueue_run(req).run_id, run.run_id)
        with self.assertRaises(lc.IdempotencyKeyReused):
            rt.enqueue_run(s.spec(kind, idempotency_key=key))
        cl = s.claim(rt, kind, lease_seconds=30)
        self.assertEqual(cl.run.run_id, run.run_id)
        lease = lc.Lease(rt, cl)
        self.assertEqual(lease.input, {"ticket": 42, "title": "naïve ☃"})
        self.assertEqual(lease.fencing_token, 1)
        self.assertEqual(lease.length, 30.0)
        self.assertIsNone(lease.resume())
        cp0 = lease.checkpoint(lc.Phase.PLANNING, "state-0")
        cp1 = lease.checkpoint(lc.Phase.ACTING, "state-1", context_snapshot_ref="ctx-1")
        self.assertEqual((cp0.sequence, cp1.sequence), (0, 1))
        self.assertEqual(lease.set_phase(lc.Phase.OBSERVING).phase, lc.Phase.OBSERVING)
        self.assertEqual(lease.correct().correction_count, 1)
        receipt = lease.call(lc.CallKind.TOOL, "search", lambda: "receipt-1")
        self.assertEqual(receipt, "receipt-1")
        with self.assertRaises(ValueError):
            lease.call(lc.CallKind.HTTP, "https://example.com", _raise)
        calls = list(rt.calls(lease.attempt_id))
        self.assertEqual([(c.sequence, c.status) for c in calls],
                         [(0, lc.CallStatus.SUCCEEDED), (1, lc.CallStatus.FAILED)])
        self.assertEqual(calls[0].receipt_ref, "receipt-1")
        call, etag = rt.get_call(lease.attempt_id, calls[0].call_id)
        self.assertEqual(call.call_id, calls[0].call_id)
        self.assertTrue(etag)
        # A call finished with If-Match: the ETag its record answered, then a stale one refused.
        c3, etag3 = rt.record_call(lease.attempt_id, lc.CallRequest(
            fencing_token=lease.fencing_token, sequence=2, kind=lc.CallKind.OTHER, target="policy", request_hash="p"))
        assert etag3 is not None
        fin = lc.FinishCallRequest(fencing_token=lease.fencing_token, status=lc.CallFinishStatus.DENIED)
        self.assertEqual(rt.finish_call(lease.attempt_id, c3.call_id, fin, if_match=etag3).status, lc.CallStatus.DENIED)
        c4, etag4 = rt.record_call(lease.attempt_id, lc.CallRequest(
            fencing_token=lease.fencing_token, sequence=3, kind=lc.CallKind.OTHER, target="policy2", request_hash="p"))
        with self.assertRaises(lc.PreconditionFailed):
            rt.finish_call(lease.attempt_id, c4.call_id, fin, if_match=etag3)

        # A decision, answered by an admin while the holder waits on it.
        d = lease.request_decision(lc.DecisionKind.CHOICE, options=["ship", "hold"], recommendation="ship")
        self.assertEqual(d.status, lc.DecisionStatus.PENDING)
        inbox = [x.decision_id for x in admin.decisions(status="pending", project_id=s.PROJECT)]
        self.assertIn(d.decision_id, inbox)
        t = threading.Timer(0.3, lambda: admin.answer_pending(
            d.decision_id, lc.AnswerDecisionRequest(status=lc.AnswerStatus.APPROVED, answer="ship")))
        t.start()
        got = lease.wait_decision(d.decision_id, timeout=20)
        t.join()
        self.assertEqual(got.status, lc.DecisionStatus.APPROVED)
        self.assertEqual(got.answer, "ship")
        with self.assertRaises(lc.DecisionClosed) as closed:
            admin.answer_pending(d.decision_id, lc.AnswerDecisionRequest(status=lc.AnswerStatus.REJECTED))
        self.assertEqual(closed.exception.status, 409)
        self.assertFalse(closed.exception.maybe_applied)

        # A delegation: the child run is worked by another lease while the parent waits.
        child_kind = s.unique("child")
        dg = lease.delegate("summarise", s.run_spec(child_kind, idempotency_key=s.unique("child")))
        self.assertEqual(dg.status, lc.DelegationStatus.PENDING)

        def work_child() -> None:
            ccl = s.claim(rt, child_kind)
            lc.Lease(rt, ccl).complete(lc.CompletionState.SUCCEEDED)

        child = threading.Thread(target=work_child)
        child.start()
        done = lease.wait_delegation(dg.delegation_id, timeout=20)
        child.join()
        self.assertEqual(done.status, lc.DelegationStatus.SUCCEEDED)

        hb = lease.heartbeat()
        self.assertFalse(hb.cancel_requested)
        with self.assertRaises(lc.NoCancelRequested):
            lease.observe_cancellation()
        att = lease.complete(lc.CompletionState.SUCCEEDED, outcome_hash="abc")
        self.assertEqual(att.state, lc.AttemptState.SUCCEEDED)
        with self.assertRaises(lc.LeaseEnded):
            lease.checkpoint(lc.Phase.FINALIZING, "late")
        ended = rt.get_run(run.run_id)
        self.assertEqual((ended.state, ended.outcome), (lc.RunState.ENDED, lc.RunOutcome.SUCCEEDED))

        # History through every read.
        a, aetag = rt.get_attempt(lease.attempt_id)
        self.assertEqual(a.outcome_hash, "abc")
        self.assertEqual(a.correction_count, 1)
        self.assertTrue(aetag)
        self.assertEqual([c.sequence for c in rt.checkpoints(lease.attempt_id)], [0, 1])
        self.assertEqual(rt.get_checkpoint(lease.attempt_id, cp1.checkpoint_id).context_snapshot_ref, "ctx-1")
        last = rt.last_checkpoint(run.run_id)
        assert last is not None
        self.assertEqual(last.sequence, 1)
        kinds = [e.kind for e in rt.timeline_entries(lease.attempt_id)]
        for k in (lc.TimelineKind.CHECKPOINT, lc.TimelineKind.CALL, lc.TimelineKind.DECISION,
                  lc.TimelineKind.DELEGATION):
            self.assertIn(k, kinds)
        items = [e.item for e in rt.timeline_entries(lease.attempt_id)]
        self.assertTrue(any(isinstance(i, lc.Decision) for i in items))
        self.assertTrue(any(isinstance(i, lc.Checkpoint) for i in items))
        self.assertEqual([x.decision_id for x in rt.list_attempt_decisions(lease.attempt_id).items], [d.decision_id])
        self.assertEqual([x.delegation_id for x in rt.delegations(lease.attempt_id)], [dg.delegation_id])
        self.assertEqual(rt.get_delegation(dg.delegation_id).child_run_id, done.child_run_id)
        self.assertIn(run.run_id, [r.run_id for r in rt.runs(kind=kind)])
        self.assertIn(lease.attempt_id, [x.attempt_id for x in rt.attempts(run_id=run.run_id)])

        # The ended run continues on a new run whose first claim resumes after checkpoint 1.
        cont = rt.continue_run(run.run_id)
        self.assertEqual(cont.continued_from_run_id, run.run_id)
        self.assertEqual(rt.continue_run(run.run_id).run_id, cont.run_id)  # a repeat: the same
        cl2 = s.claim(rt, kind)
        self.assertEqual(cl2.run.run_id, cont.run_id)
        self.assertGreater(cl2.lease.fencing_token, cl.lease.fencing_token)
        l2 = lc.Lease(rt, cl2)
        r = l2.resume()
        assert r is not None
        self.assertEqual(r.sequence, 1)
        self.assertEqual(l2.checkpoint(lc.Phase.FINALIZING, "state-2").sequence, 2)
        l2.release(charge=False, retry_after=0)
        with self.assertRaises(lc.LeaseEnded):
            l2.check()

    def test_iterators_follow_next_cursor(self) -> None:
        srv = s.server()
        rt = srv.client()
        kind = s.unique("pages")
        ids = [rt.enqueue_run(s.spec(kind)).run_id for _ in range(5)]
        first = rt.list_runs(kind=kind, limit=2)
        self.assertEqual(len(first.items), 2)
        self.assertTrue(first.next_cursor)
        self.assertEqual(sorted(r.run_id for r in rt.runs(kind=kind, limit=2)), sorted(ids))
        # The change feed reaches the end and every item carries its ETag.
        feed = list(rt.changes())
        self.assertTrue(feed)
        self.assertTrue(all(i.etag for i in feed))
        self.assertEqual(list(rt.changes(feed[-1].etag or "")), [])
        self.assertIn(s.PROJECT, [p.project_id for p in srv.client(admin=True).projects()])
        self.assertIn(s.RELEASE, [r.release_id for r in rt.releases(state="active")])

    def test_filters_for_an_absent_value(self) -> None:
        """hasError, hasModel and the inbox's insight filters reach the server as it reads them."""
        srv = s.server()
        rt, admin = srv.client(), srv.client(admin=True)
        kind = s.unique("absent")
        run = rt.enqueue_run(s.spec(kind))
        self.assertEqual([r.run_id for r in rt.runs(kind=kind, hasError=False)], [run.run_id])
        self.assertEqual(list(rt.runs(kind=kind, hasError=True)), [])
        self.assertEqual(rt.list_attempts(has_error=True, kind=kind).items, [])
        self.assertEqual(rt.list_tenant_calls(has_model=False, kind=kind).items, [])
        self.assertEqual(admin.list_decisions(kind="approval", run_kind=kind).items, [])

    def test_list_filters_go_as_repeated_parameters(self) -> None:
        """A not* list reaches the server as the parameter repeated, every item of it."""
        srv = s.server()
        rt = srv.client()
        kind = s.unique("notlist")
        run = rt.enqueue_run(s.spec(kind))

        def listed(agents: Sequence[str]) -> List[str]:
            return [r.run_id for r in rt.runs(kind=kind, notAgentId=agents)]

        self.assertEqual(listed(["nobody"]), [run.run_id])
        self.assertEqual(listed(["nobody", run.agent_id]), [])
        self.assertEqual(listed((run.agent_id, "nobody")), [])
        self.assertEqual(listed([]), [run.run_id])
        self.assertEqual([r.run_id for r in rt.runs(kind=kind, hasRelease=False)], [run.run_id])
        self.assertEqual(rt.list_attempts(kind=kind, not_error_code=["busy", "late"]).items, [])
        self.assertEqual(rt.list_tenant_calls(kind=kind, not_target=["tool://x", "model://y"]).items, [])

    def test_run_wait_answers_when_the_run_ends(self) -> None:
        srv = s.server()
        rt, admin = srv.client(), srv.client(admin=True)
        kind = s.unique("wait")
        run = rt.enqueue_run(s.spec(kind))
        t0 = time.monotonic()
        with self.assertRaises(lc.WaitTimeout) as to:
            rt.wait_run(run.run_id, timeout=1)
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)
        self.assertEqual(to.exception.last.state, lc.RunState.QUEUED)
        threading.Timer(0.3, lambda: admin.cancel_run(run.run_id)).start()
        ended = rt.wait_run(run.run_id, timeout=20)
        self.assertEqual(ended.outcome, lc.RunOutcome.CANCELLED)


def _raise() -> str:
    raise ValueError("the tool failed")


class Problems(unittest.TestCase):
    def test_problem_fields_and_subclasses(self) -> None:
        srv = s.server()
        rt = srv.client()
        with self.assertRaises(lc.InvalidRequest) as bad:
            rt.enqueue_run(lc.EnqueueRequest(subject=" ", kind="", project_id=s.PROJECT, agent_id="a",
                                             step_id="not-a-uuid", snapshot_id=str(uuid.uuid4())))
        p = bad.exception
        self.assertIsInstance(p, lc.LedgerProblem)
        self.assertEqual((p.status, p.code), (400, lc.ProblemCode.INVALID_REQUEST))
        self.assertEqual(p.code_value, lc.ProblemCode.INVALID_REQUEST)
        fields = {e.field for e in p.errors}
        self.assertTrue({"subject", "kind", "stepId"} <= fields, fields)
        self.assertTrue(p.request_id)
        self.assertTrue(p.detail)
        self.assertIn("400 invalid_request", str(p))
        with self.assertRaises(lc.NotFound) as nf:
            rt.get_run(str(uuid.uuid4()))
        self.assertEqual(nf.exception.status, 404)
        with self.assertRaises(lc.Unauthorized):
            lc.Client(srv.url, "ldg_nope_nope").get_run(str(uuid.uuid4()))
        with self.assertRaises(lc.Forbidden):
            rt.cancel_run(str(uuid.uuid4()))
        with self.assertRaises(lc.UnknownProject):
            rt.enqueue_run(lc.EnqueueRequest(subject="x", kind="k", project_id="nope", agent_id="a",
                                             step_id=str(uuid.uuid4()), snapshot_id=str(uuid.uuid4())))
        # lock_held carries held_until.
        holder = s.unique("h")
        rt.acquire_lock("py-agent", s.unique("task"), lc.LockRequest(holder_id=holder, ttl_seconds=30))
        task = s.unique("task")
        rt.acquire_lock("py-agent", task, lc.LockRequest(holder_id="a", ttl_seconds=30))
        with self.assertRaises(lc.LockHeld) as held:
            rt.acquire_lock("py-agent", task, lc.LockRequest(holder_id="b", ttl_seconds=30))
        self.assertIsNotNone(held.exception.held_until)
        rt.release_lock("py-agent", task, "a")
        rt.acquire_lock("py-agent", task, lc.LockRequest(holder_id="b", ttl_seconds=30))

    def test_service_routes(self) -> None:
        srv = s.server()
        rt = srv.client()
        self.assertEqual(rt.healthz().status, "ok")
        self.assertEqual(rt.readyz().status, "ok")
        self.assertEqual(rt.openapi()["openapi"][:3], "3.1")
        self.assertIn("ledger_", rt.metrics())


class ETags(unittest.TestCase):
    def test_update_helpers_read_change_and_write_with_the_etag(self) -> None:
        srv = s.server()
        admin, rt = srv.client(admin=True), srv.client()
        pid = s.unique("proj")
        p, etag = admin.put_project(pid, lc.PutProjectRequest(active=True, retention_days=30))
        self.assertEqual(p.retention_days, 30)
        self.assertTrue(etag and etag.startswith('"'))
        with self.assertRaises(lc.PreconditionRequired):
            admin.put_project(pid, lc.PutProjectRequest(active=False))
        with self.assertRaises(lc.PreconditionFailed) as stale:
            admin.put_project(pid, lc.PutProjectRequest(active=False), if_match='"0000000000000000"')
        self.assertFalse(stale.exception.maybe_applied)

        def deactivate(req: lc.PutProjectRequest) -> None:
            req.active = False

        self.assertFalse(admin.update_project(pid, deactivate).active)
        _, etag2 = admin.get_project(pid)
        self.assertNotEqual(etag, etag2)

        rid = s.unique("rel")
        refs, h = lc.manifest_of("oci://x@sha256:1", "oci://y@sha256:2")
        rel, retag = rt.put_release(rid, "v1", lc.PutReleaseRequest(content_refs=refs, manifest_hash=h,
                                                                     state=lc.ReleaseState.VERIFIED))
        self.assertEqual(rel.state, lc.ReleaseState.VERIFIED)

        def activate(req: lc.PutReleaseRequest) -> None:
            req.state = lc.ReleaseState.ACTIVE

        self.assertEqual(rt.update_release(rid, "v1", activate).state, lc.ReleaseState.ACTIVE)
        with self.assertRaises(lc.PreconditionFailed):
            rt.put_release(rid, "v1", lc.PutReleaseRequest(content_refs=refs, manifest_hash=h,
                                                           state=lc.ReleaseState.RETIRED), if_match=retag)


    def test_cost_budget_absent_keeps_and_null_removes(self) -> None:
        admin = s.server().client(admin=True)
        pid = s.unique("budget")
        p, etag = admin.put_project(pid, lc.PutProjectRequest(daily_cost_budget_micros=5000))
        self.assertEqual(p.daily_cost_budget_micros, 5000)
        p, etag = admin.put_project(pid, lc.PutProjectRequest(retention_days=40), if_match=etag)
        self.assertEqual((p.daily_cost_budget_micros, p.retention_days), (5000, 40))
        self.assertEqual(lc.PutProjectRequest(daily_cost_budget_micros=lc.NULL).to_json(),
                         {"dailyCostBudgetMicros": None})
        p, _ = admin.put_project(pid, lc.PutProjectRequest(daily_cost_budget_micros=lc.NULL), if_match=etag)
        self.assertIsNone(p.daily_cost_budget_micros)
        self.assertEqual(admin.get_project(pid)[0].cost_today_micros, 0)


class Usage(unittest.TestCase):
    def test_a_model_call_reports_usage_summed_by_attempt_and_run(self) -> None:
        rt = s.server().client()
        kind = s.unique("usage")
        run = rt.enqueue_run(s.spec(kind))
        lease = lc.Lease(rt, s.claim(rt, kind, lease_seconds=30))
        c = lease.record_call(lc.CallKind.MODEL, "chat", model="m-1", provider="openai", operation="chat")
        self.assertEqual((c.model, c.provider, c.operation), ("m-1", "openai", "chat"))
        done = lease.finish_call(c.call_id, lc.CallFinishStatus.SUCCEEDED, usage=lc.Usage(
            input_tokens=10, output_tokens=4), response_model="m-1-2026", finish_reasons=["stop"], cost_micros=1500)
        self.assertEqual((done.response_model, done.cost_micros), ("m-1-2026", 1500))
        for totals in (rt.attempt_usage(lease.attempt_id), rt.run_usage(run.run_id)):
            self.assertEqual((totals.calls, totals.input_tokens, totals.output_tokens, totals.cost_micros),
                             (1, 10, 4, 1500))
        lease.complete(lc.CompletionState.SUCCEEDED)


class RateLimited(unittest.TestCase):
    def test_429_is_retried_after_retry_after(self) -> None:
        main = s.server()
        # A second replica on the same database whose tenant rate is one request a second.
        lim = s.start_server(main.db, main, "--rate-limit", "1", "--rate-burst", "1")
        try:
            waits: List[float] = []
            c = lim.client()
            real_sleep = c.sleep

            def sleep(d: float) -> None:
                waits.append(d)
                real_sleep(d)

            c.sleep = sleep
            kind = s.unique("rl")
            c.enqueue_run(s.spec(kind))
            run = c.enqueue_run(s.spec(kind))  # refused with 429 first, then sent again
            self.assertEqual(run.state, lc.RunState.QUEUED)
            self.assertTrue(waits, "the 429 was not retried")
            self.assertGreaterEqual(waits[0], 1.0)  # the server's Retry-After, at least
            self.assertLessEqual(waits[0], 1.25 * 60)
            no_retry = lim.client(retry=lc.RetryPolicy(max_attempts=1))
            with self.assertRaises(lc.RateLimited) as rl:
                no_retry.get_run(run.run_id)
                no_retry.get_run(run.run_id)
            self.assertEqual(rl.exception.status, 429)
            self.assertIsNotNone(rl.exception.retry_after)
        finally:
            lim.stop()


class LostAnswers(unittest.TestCase):
    """Every retried call whose answer is dropped after it applied applies once; a call that
    is never sent again reports the lost answer instead."""

    def setUp(self) -> None:
        self.srv = s.server()
        self.proxy = s.DroppingProxy(self.srv.url)
        self.addCleanup(self.proxy.close)
        self.rt = lc.Client(self.proxy.url, self.srv.runtime_key)
        self.admin = lc.Client(self.proxy.url, self.srv.admin_key)
        self.direct = self.srv.client()
        for c in (self.rt, self.admin):
            c.sleep = lambda d: None

    def dropped(self, method: str, part: str, do):  # type: ignore[no-untyped-def]
        """Runs do with the first answer of method on a path containing part dropped, and
        checks the call was sent twice."""
        self.proxy.drop_first(method, part)
        before = len(self.proxy.seen)
        out = do()
        sent = [x for x in self.proxy.seen[before:] if x.startswith(method) and part in x]
        self.assertEqual(len(sent), 2, self.proxy.seen[before:])
        self.assertEqual(len(self.proxy.dropped), 1)
        self.proxy.dropped.clear()
        return out

    def test_retried_calls_apply_once(self) -> None:
        rt, kind = self.rt, s.unique("lost")
        key = s.unique("key")
        run = self.dropped("POST", "/v1/runs", lambda: rt.enqueue_run(s.spec(kind, idempotency_key=key)))
        self.assertEqual(len(list(self.direct.runs(kind=kind))), 1)
        cl = s.claim(self.direct, kind)
        self.assertEqual(cl.run.run_id, run.run_id)
        lease = lc.Lease(rt, cl)
        self.dropped("POST", "/checkpoints", lambda: lease.checkpoint(lc.Phase.ACTING, "s0"))
        self.assertEqual(len(list(self.direct.checkpoints(lease.attempt_id))), 1)
        c = self.dropped("POST", "/calls", lambda: lease.record_call(lc.CallKind.MODEL, "gpt"))
        self.dropped("PATCH", "/calls/", lambda: lease.finish_call(c.call_id, lc.CallFinishStatus.SUCCEEDED, "r"))
        self.assertEqual([(x.sequence, x.status) for x in self.direct.calls(lease.attempt_id)],
                         [(0, lc.CallStatus.SUCCEEDED)])
        self.dropped("PATCH", "/v1/attempts/", lambda: lease.set_phase(lc.Phase.OBSERVING))
        self.dropped("POST", "/heartbeat", lease.heartbeat)
        child_key = s.unique("child")
        ckind = s.unique("lostchild")
        self.dropped("POST", "/delegations",
                     lambda: lease.delegate("p", s.run_spec(ckind, idempotency_key=child_key)))
        self.assertEqual(len(list(self.direct.delegations(lease.attempt_id))), 1)
        self.assertEqual(len(list(self.direct.runs(kind=ckind))), 1)
        task = s.unique("task")
        self.dropped("PUT", "/v1/locks/", lambda: rt.acquire_lock("py-agent", task, lc.LockRequest(
            holder_id="h", ttl_seconds=30)))
        self.dropped("DELETE", "/v1/locks/", lambda: rt.release_lock("py-agent", task, "h"))
        rid = s.unique("rel")
        refs, h = lc.manifest_of("x")
        self.dropped("PUT", "/v1/releases/", lambda: rt.put_release(rid, "v1", lc.PutReleaseRequest(
            content_refs=refs, manifest_hash=h, state=lc.ReleaseState.VERIFIED)))
        # A cancel applied once; the holder's acknowledgement too.
        self.dropped("POST", "/cancel", lambda: self.admin.cancel_run(run.run_id))
        self.assertTrue(lease.heartbeat().cancel_requested)
        ack = self.dropped("POST", "/cancellation", lease.observe_cancellation)
        self.assertIsNotNone(ack.cancellation_observed_at)
        att = self.dropped("POST", "/complete", lambda: lease.complete(lc.CompletionState.CANCELLED))
        self.assertEqual(att.state, lc.AttemptState.CANCELLED)
        # The run ended once, and its continuation is made once.
        cont = self.dropped("POST", "/continue", lambda: rt.continue_run(run.run_id))
        self.assertEqual([r.run_id for r in self.direct.runs(kind=kind, state="queued")], [cont.run_id])
        cl2 = s.claim(self.direct, kind)
        l2 = lc.Lease(rt, cl2)
        self.dropped("POST", "/release", lambda: l2.release(charge=True, retry_after=0))
        self.assertEqual(self.direct.get_run(cont.run_id).attempts_spent, cl2.run.attempts_spent + 1)

    def test_conditional_update_reports_maybe_applied(self) -> None:
        pid = s.unique("proj")
        _, etag = srv_admin(self.srv).put_project(pid, lc.PutProjectRequest(active=True))
        self.proxy.drop_first("PUT", "/v1/projects/")
        with self.assertRaises(lc.PreconditionFailed) as pf:
            self.admin.put_project(pid, lc.PutProjectRequest(active=False), if_match=etag)
        self.assertTrue(pf.exception.maybe_applied)
        self.assertIn("may have applied", str(pf.exception))
        self.assertFalse(srv_admin(self.srv).get_project(pid)[0].active)  # it had applied, once
        # A decision's answer: applied by the first try, so the repeat is refused as maybe-applied.
        kind = s.unique("lost-answer")
        self.direct.enqueue_run(s.spec(kind))
        lease = lc.Lease(self.direct, s.claim(self.direct, kind))
        d = lease.request_decision(lc.DecisionKind.APPROVAL)
        self.proxy.drop_first("POST", "/answer")
        with self.assertRaises(lc.LedgerProblem) as closed:
            self.admin.answer_pending(d.decision_id, lc.AnswerDecisionRequest(status=lc.AnswerStatus.APPROVED))
        self.assertTrue(closed.exception.maybe_applied)
        self.assertIn(closed.exception.code, ("precondition_failed", "decision_closed"))
        got, _ = self.direct.get_decision(d.decision_id)
        self.assertEqual(got.status, lc.DecisionStatus.APPROVED)

    def test_calls_never_repeated_report_the_lost_answer(self) -> None:
        rt, kind = self.rt, s.unique("once")
        self.proxy.drop_first("POST", "/v1/runs")
        with self.assertRaises(lc.TransportError) as te:
            rt.enqueue_run(s.spec(kind))  # no idempotency key: a repeat could queue twice
        self.assertEqual(te.exception.kind, "no_answer")
        self.assertEqual(len(list(self.direct.runs(kind=kind))), 1)
        self.proxy.drop_first("POST", "/claim")
        with self.assertRaises(lc.TransportError):
            rt.claim_run(s.claim_request(kind))
        self.assertEqual(self.direct.list_runs(kind=kind).items[0].state, lc.RunState.LEASED)
        self.assertEqual(self.proxy.seen.count("POST /v1/runs/claim"), 1)


def srv_admin(srv: s.Server) -> lc.Client:
    return srv.client(admin=True)


if __name__ == "__main__":
    unittest.main()
