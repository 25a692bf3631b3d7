"""The retry decisions against api/retry.json, the one retry table of the three SDKs: the
policy, the failure classes and every operation's rule, then the Client's behaviour for every
operation (and each of its rule's variants) and every failure class, against a scripted
server."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
import unittest
from typing import Any, Callable, Dict, List, Optional, Tuple

import ledger_client as lc
from ledger_client import _retry, _tables

from . import support as s

with open(s.REPO / "api" / "retry.json", encoding="utf-8") as _f:
    TABLE: Dict[str, Any] = json.load(_f)

ID = "0b7d3c1e-5f6a-4b8c-9d0e-1f2a3b4c5d6e"


def _spec(**kw: Any) -> lc.RunSpec:
    return lc.RunSpec(subject="s", kind="k", project_id="p", agent_id="a", step_id=ID, snapshot_id=ID, **kw)


def _enqueue(**kw: Any) -> lc.EnqueueRequest:
    return lc.EnqueueRequest(subject="s", kind="k", project_id="p", agent_id="a", step_id=ID, snapshot_id=ID, **kw)


_REFS, _HASH = lc.manifest_of("x")
_SCHEDULE = lc.PutScheduleRequest(cron="@hourly", run=_spec())
_WEBHOOK = lc.PutWebhookRequest(url="https://example.com/h", events=[lc.WebhookEvent.RUN_ENDED])
_CLAIM = lc.ClaimRequest(holder_id="h", release_id="r", adapter_version="v", model_profile_id="m")

#: One call of each operation through the Client, by operationId; each variant of an
#: operation's rule ("base", a whenBody member, "ifMatch") is a call of its own.
#: Operations the Python SDK deliberately has no Client call of, with the reason. Empty today.
NOT_IN_SDK: Dict[str, str] = {}

CALLS: Dict[Tuple[str, str], Callable[[lc.Client], Any]] = {
    ("acknowledgeCancellation", "base"): lambda c: c.observe_cancellation(ID, lc.FencedRequest(fencing_token=1)),
    ("acquireTaskLock", "base"): lambda c: c.acquire_lock("a", "t", lc.LockRequest(holder_id="h", ttl_seconds=5)),
    ("answerDecision", "base"): lambda c: c.answer_decision(ID, '"1"', lc.AnswerDecisionRequest(
        status=lc.AnswerStatus.APPROVED)),
    ("appendCheckpoint", "base"): lambda c: c.append_checkpoint(ID, lc.CheckpointRequest(
        fencing_token=1, sequence=0, phase=lc.Phase.ACTING, adapter_state_ref="s", adapter_version="v", hash="h")),
    ("cancelRun", "base"): lambda c: c.cancel_run(ID),
    ("claimRun", "base"): lambda c: c.claim_run(_CLAIM),
    ("completeAttempt", "base"): lambda c: c.complete_attempt(ID, lc.CompleteAttemptRequest(
        fencing_token=1, state=lc.CompletionState.SUCCEEDED)),
    ("continueRun", "base"): lambda c: c.continue_run(ID),
    ("createDelegation", "base"): lambda c: c.delegate(ID, lc.DelegationRequest(
        fencing_token=1, purpose="p", child=_spec())),
    ("createDelegation", "child.idempotencyKey"): lambda c: c.delegate(ID, lc.DelegationRequest(
        fencing_token=1, purpose="p", child=_spec(idempotency_key="k"))),
    ("enqueueRun", "base"): lambda c: c.enqueue_run(_enqueue()),
    ("enqueueRun", "idempotencyKey"): lambda c: c.enqueue_run(_enqueue(idempotency_key="k")),
    ("finishCall", "base"): lambda c: c.finish_call(ID, ID, lc.FinishCallRequest(
        fencing_token=1, status=lc.CallFinishStatus.SUCCEEDED)),
    ("finishCall", "ifMatch"): lambda c: c.finish_call(ID, ID, lc.FinishCallRequest(
        fencing_token=1, status=lc.CallFinishStatus.SUCCEEDED), if_match='"1"'),
    ("getAttempt", "base"): lambda c: c.get_attempt(ID),
    ("getAttemptTimeline", "base"): lambda c: c.timeline(ID),
    ("getCall", "base"): lambda c: c.get_call(ID, ID),
    ("getCheckpoint", "base"): lambda c: c.get_checkpoint(ID, ID),
    ("getDecision", "base"): lambda c: c.get_decision(ID),
    ("getDelegation", "base"): lambda c: c.get_delegation(ID),
    ("getHealth", "base"): lambda c: c.healthz(),
    ("getLastCheckpoint", "base"): lambda c: c.last_checkpoint(ID),
    ("getMetrics", "base"): lambda c: c.metrics(),
    ("getOpenAPI", "base"): lambda c: c.openapi(),
    ("getProject", "base"): lambda c: c.get_project("p"),
    ("getReadiness", "base"): lambda c: c.readyz(),
    ("getRelease", "base"): lambda c: c.get_release("r", "v"),
    ("getRun", "base"): lambda c: c.get_run(ID),
    ("heartbeatAttempt", "base"): lambda c: c.heartbeat(ID, lc.HeartbeatRequest(fencing_token=1)),
    ("listAttemptDecisions", "base"): lambda c: c.list_attempt_decisions(ID),
    ("listAttempts", "base"): lambda c: c.list_attempts(),
    ("listCalls", "base"): lambda c: c.list_calls(ID),
    ("listTenantCalls", "base"): lambda c: c.list_tenant_calls(),
    ("listCheckpoints", "base"): lambda c: c.list_checkpoints(ID),
    ("listDecisions", "base"): lambda c: c.list_decisions(),
    ("listDelegations", "base"): lambda c: c.list_delegations(ID),
    ("listProjects", "base"): lambda c: c.list_projects(),
    ("listReleases", "base"): lambda c: c.list_releases(),
    ("insightRunsEnded", "base"): lambda c: c.insight("runs", group_by="agent"),
    ("insightAttemptsEnded", "base"): lambda c: c.insight("attempts"),
    ("insightLeasesLost", "base"): lambda c: c.insight("leases-lost"),
    ("insightAttemptsPerRun", "base"): lambda c: c.insight("attempts-per-run"),
    ("insightClaimLatency", "base"): lambda c: c.insight("claim-latency"),
    ("insightCalls", "base"): lambda c: c.insight("calls"),
    ("insightDecisions", "base"): lambda c: c.insight("decisions"),
    ("listRuns", "base"): lambda c: c.list_runs(),
    ("patchAttempt", "base"): lambda c: c.patch_attempt(ID, lc.PatchAttemptRequest(
        fencing_token=1, phase=lc.Phase.ACTING)),
    ("patchAttempt", "correction"): lambda c: c.patch_attempt(ID, lc.PatchAttemptRequest(
        fencing_token=1, correction=True)),
    ("putProject", "base"): lambda c: c.put_project("p", lc.PutProjectRequest(active=True)),
    ("putProject", "ifMatch"): lambda c: c.put_project("p", lc.PutProjectRequest(active=True), if_match='"1"'),
    ("putRelease", "base"): lambda c: c.put_release("r", "v", lc.PutReleaseRequest(
        content_refs=_REFS, manifest_hash=_HASH, state=lc.ReleaseState.ACTIVE)),
    ("putRelease", "ifMatch"): lambda c: c.put_release("r", "v", lc.PutReleaseRequest(
        content_refs=_REFS, manifest_hash=_HASH, state=lc.ReleaseState.ACTIVE), if_match='"1"'),
    ("recordCall", "base"): lambda c: c.record_call(ID, lc.CallRequest(
        fencing_token=1, sequence=0, kind=lc.CallKind.TOOL, target="t", request_hash="h")),
    ("releaseAttempt", "base"): lambda c: c.release_attempt(ID, lc.ReleaseAttemptRequest(fencing_token=1)),
    ("releaseTaskLock", "base"): lambda c: c.release_lock("a", "t", "h"),
    ("requestDecision", "base"): lambda c: c.request_decision(ID, lc.DecisionRequest(
        fencing_token=1, kind=lc.DecisionKind.APPROVAL)),
    ("requestDecision", "idempotencyKey"): lambda c: c.request_decision(ID, lc.DecisionRequest(
        fencing_token=1, kind=lc.DecisionKind.APPROVAL, idempotency_key="k")),
    ("enqueueRunBatch", "base"): lambda c: c.enqueue_run_batch(lc.BatchEnqueueRequest(items=[_enqueue()])),
    ("forkRun", "base"): lambda c: c.fork_run(ID, lc.ForkRequest(checkpoint_id=ID)),
    ("forkRun", "idempotencyKey"): lambda c: c.fork_run(ID, lc.ForkRequest(checkpoint_id=ID, idempotency_key="k")),
    ("parkAttempt", "base"): lambda c: c.park_attempt(ID, lc.ParkAttemptRequest(fencing_token=1, decision_ids=[ID])),
    ("listRunDecisions", "base"): lambda c: c.list_run_decisions(ID),
    ("getAttemptUsage", "base"): lambda c: c.attempt_usage(ID),
    ("getRunUsage", "base"): lambda c: c.run_usage(ID),
    ("insightUsage", "base"): lambda c: c.insight("usage", group_by="model"),
    ("putSchedule", "base"): lambda c: c.put_schedule("s", _SCHEDULE),
    ("putSchedule", "ifMatch"): lambda c: c.put_schedule("s", _SCHEDULE, if_match='"1"'),
    ("getSchedule", "base"): lambda c: c.get_schedule("s"),
    ("deleteSchedule", "base"): lambda c: c.delete_schedule("s"),
    ("listSchedules", "base"): lambda c: c.list_schedules(),
    ("putWebhook", "base"): lambda c: c.put_webhook("w", _WEBHOOK),
    ("putWebhook", "ifMatch"): lambda c: c.put_webhook("w", _WEBHOOK, if_match='"1"'),
    ("getWebhook", "base"): lambda c: c.get_webhook("w"),
    ("deleteWebhook", "base"): lambda c: c.delete_webhook("w"),
    ("listWebhooks", "base"): lambda c: c.list_webhooks(),
    ("rotateWebhookSecret", "base"): lambda c: c.rotate_webhook_secret("w"),
    ("listWebhookDeliveries", "base"): lambda c: c.list_webhook_deliveries(status="failed"),
    ("redeliverWebhook", "base"): lambda c: c.redeliver_webhook(ID),
    ("bulkRuns", "base"): lambda c: c.bulk_runs(lc.BulkRunsRequest(action=lc.BulkAction.CANCEL, run_ids=[ID])),
    ("bulkRuns", "idempotencyKey"): lambda c: c.bulk_runs(lc.BulkRunsRequest(
        action=lc.BulkAction.CANCEL, run_ids=[ID], idempotency_key="k")),
    ("getOperation", "base"): lambda c: c.get_operation(ID),
}


def file_repeat(op: str, body: Any, if_match: bool) -> str:
    """The repeat class api/retry.json gives one call, by its rules as the file states them."""
    entry = TABLE["operations"][op]
    r = entry["repeat"]
    for path, cls in entry.get("whenBody", {}).items():
        v = body
        for part in path.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        if v not in (None, False, "", [], {}):
            r = cls
    if if_match and "whenIfMatch" in entry:
        r = entry["whenIfMatch"]
    return str(r)


def file_retried(failure: str, repeat: str) -> bool:
    when = TABLE["failures"][failure]
    return when == "always" or (when == "unlessOnce" and repeat != "once")


def sample(doc: Dict[str, Any], schema: Dict[str, Any]) -> Any:
    """A valid value of a schema of the document (its required members only)."""
    if "$ref" in schema:
        return sample(doc, doc["components"]["schemas"][schema["$ref"].split("/")[-1]])
    if "enum" in schema:
        return schema["enum"][0]
    if "oneOf" in schema:
        return sample(doc, schema["oneOf"][0])
    t = schema.get("type")
    if isinstance(t, list):
        return None if "null" in t else sample(doc, dict(schema, type=t[0]))
    if t == "string":
        return {"date-time": "2026-12-01T08:26:03.900Z", "uuid": ID}.get(schema.get("format", ""), "x")
    if t == "integer":
        return 1
    if t == "boolean":
        return False
    if t == "array":
        return []
    if t == "object":
        props = schema.get("properties", {})
        return {k: sample(doc, props[k]) for k in schema.get("required", [])}
    return None


class Scripted:
    """A server that answers each request with the next step of its script and records the
    requests (method, path, JSON body)."""

    def __init__(self) -> None:
        self.steps: List[Callable[[http.server.BaseHTTPRequestHandler], None]] = []
        self.seen: List[Tuple[str, str, Any, Optional[str]]] = []
        me = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def handle_one(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                me.seen.append((self.command, self.path, json.loads(raw) if raw else None,
                                self.headers.get("If-Match")))
                step = me.steps.pop(0) if me.steps else None
                if step is None:
                    self.send_response(418)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                step(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(status: int, body: bytes, ctype: str = "application/json",
           headers: Optional[Dict[str, str]] = None) -> Callable[[Any], None]:
    def step(h: Any) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return step


def problem(status: int, code: str, headers: Optional[Dict[str, str]] = None) -> Callable[[Any], None]:
    doc = {"type": "urn:ledger:problem:" + code, "title": "x", "status": status, "code": code, "detail": "scripted"}
    return answer(status, json.dumps(doc).encode(), "application/problem+json", headers)


def hang_up(h: Any) -> None:
    """Reads the request and closes the connection without answering."""
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


def truncated(h: Any) -> None:
    """A 200 whose body stops short: an answer that cannot be read."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "100")
    h.end_headers()
    h.wfile.write(b'{"items": [')
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


FAILURE_STEPS: Dict[str, Callable[[Any], None]] = {
    "status429": problem(429, "rate_limited", {"Retry-After": "0"}),
    "status502": answer(502, b"<html>bad gateway</html>", "text/html"),
    "status503": problem(503, "database_unavailable"),
    "status504": answer(504, b"gateway timeout", "text/plain"),
    "noAnswer": hang_up,
    "unreadableAnswer": truncated,
    "otherStatus": problem(409, "stale_lease"),
}


class RefusingFirst(lc.Client):
    """A client whose first connection is refused: nothing reaches the server."""

    refused = 0

    def _connection(self, timeout: float) -> Any:
        conn = super()._connection(timeout)
        if self.refused == 0:
            self.refused += 1

            def refuse() -> None:
                raise ConnectionRefusedError("scripted: connection refused")
            conn.connect = refuse  # type: ignore
        return conn


class TableAgreement(unittest.TestCase):
    def test_policy_and_failure_classes(self) -> None:
        p, d = TABLE["policy"], lc.RetryPolicy()
        self.assertEqual(d.max_attempts, p["maxAttempts"])
        self.assertAlmostEqual(d.base * 1000, p["baseMs"])
        self.assertAlmostEqual(d.max * 1000, p["maxMs"])
        self.assertAlmostEqual(d.max_retry_after * 1000, p["maxRetryAfterMs"])
        self.assertAlmostEqual(d.retry_after_jitter, p["retryAfterJitter"])
        self.assertEqual(_retry.FAILURES, TABLE["failures"])
        self.assertEqual(set(_retry.FAILURES), set(TABLE["failureClasses"]))
        self.assertEqual({_retry.ONCE, _retry.IDEMPOTENT, _retry.CONDITIONAL}, set(TABLE["repeatClasses"]))

    def test_every_operation_has_the_files_rule(self) -> None:
        ops = TABLE["operations"]
        self.assertEqual(set(_retry.OPERATIONS), set(ops))
        for op, e in ops.items():
            with self.subTest(op=op):
                r = _retry.OPERATIONS[op]
                self.assertEqual(r.repeat, e["repeat"])
                self.assertEqual(dict(r.when_body), e.get("whenBody", {}))
                self.assertEqual(r.when_if_match, e.get("whenIfMatch"))
                self.assertEqual(list(r.ambiguous), e.get("ambiguous", []))

    def test_the_generated_tables_are_the_files(self) -> None:
        self.assertEqual(_tables.RETRY_TABLE, TABLE)
        for op, e in _tables.OPERATIONS.items():
            with self.subTest(op=op):
                rule = {k: v for k, v in e.items() if k not in ("method", "path", "query", "public", "roles")}
                self.assertEqual(rule, TABLE["operations"][op])

    def test_every_operation_of_the_table_has_a_client_call(self) -> None:
        """The route coverage: every operation of the generated operation table (so every
        route the server registers) has a Client call in CALLS, or a reason in NOT_IN_SDK."""
        ops = set(_tables.OPERATIONS)
        called = {op for op, _ in CALLS}
        uncovered = sorted(ops - called - set(NOT_IN_SDK))
        self.assertEqual(uncovered, [], "operations the Python SDK does not call (add a Client method and a "
                         "CALLS entry, or a reason in NOT_IN_SDK)")
        self.assertEqual(sorted(called - ops), [], "CALLS names operations the table does not have")
        self.assertEqual(sorted(set(NOT_IN_SDK) & called), [], "NOT_IN_SDK names called operations")

    def test_calls_take_their_route_from_the_table(self) -> None:
        from ledger_client.client import _route
        self.assertEqual(_route("getRelease", ("r/1", "v 2")), ("GET", "/v1/releases/r%2F1/adapters/v%202"))
        self.assertEqual(_route("releaseTaskLock", ("a", "t")), ("DELETE", "/v1/locks/agents/a/tasks/t"))
        with self.assertRaisesRegex(TypeError, "getProject: projectId is required"):
            _route("getProject", ("",))
        with self.assertRaisesRegex(TypeError, "takes 2 path parameters"):
            _route("getRelease", ("r",))
        # Refused before anything is sent: nothing listens on port 9.
        c = lc.Client("http://127.0.0.1:9", key="k")
        with self.assertRaisesRegex(TypeError, "projectId is required"):
            c.get_project("")

    def test_when_body_presence(self) -> None:
        """api/retry.json's whenBody rule, the same cases in the three SDKs' tests."""
        cases = json.loads('''[[{"k": "x"}, "k", true], [{"k": ""}, "k", false], [{"k": 0}, "k", true], [{"k": false}, "k", false],
 [{"k": true}, "k", true], [{"k": []}, "k", false], [{"k": {}}, "k", false], [{"k": {"a": 1}}, "k", true],
 [{"k": null}, "k", false], [{}, "k", false], [{"a": {"k": "x"}}, "a.k", true], [{"a": "s"}, "a.k", false]]''')
        for body, member, want in cases:
            with self.subTest(body=body, member=member):
                self.assertEqual(_retry._present(body, member), want)

    def test_the_table_is_the_served_documents(self) -> None:
        doc = s.openapi_document()
        ids = {o["operationId"] for p in doc["paths"].values() for o in p.values() if isinstance(o, dict)}
        gets = {i for i in ids if not i.endswith("Head")}
        self.assertEqual(gets, set(_tables.OPERATIONS))
        for path, methods in doc["paths"].items():
            for method, o in methods.items():
                if isinstance(o, dict) and o["operationId"] in gets:
                    e = _tables.OPERATIONS[o["operationId"]]
                    self.assertEqual((e["method"], e["path"]), (method.upper(), path))
        for i in ids - gets:
            self.assertIn(i[:-4], gets)  # a HEAD takes its GET's entry


class Behaviour(unittest.TestCase):
    """Every operation and variant, every failure class: sent again exactly when the file
    says."""

    doc: Dict[str, Any]
    scripted: Scripted
    ok: Dict[str, Callable[[Any], None]]

    @classmethod
    def setUpClass(cls) -> None:
        cls.scripted = Scripted()
        cls.addClassCleanup(cls.scripted.close)
        cls.doc = s.openapi_document()
        cls.ok = {}
        for path in cls.doc["paths"].values():
            for o in path.values():
                if not isinstance(o, dict) or o["operationId"].endswith("Head"):
                    continue
                codes = sorted(k for k in o["responses"] if k.startswith("2"))
                code = int(codes[0])
                content = o["responses"][codes[0]].get("content", {})
                if "text/plain" in content:
                    step = answer(code, b"ledger_up 1\n", "text/plain")
                elif content:
                    body = sample(cls.doc, content["application/json"].get("schema", {"type": "object"}))
                    step = answer(code, json.dumps(body).encode())
                else:
                    step = answer(code, b"")
                cls.ok[o["operationId"]] = step

    def run_script(self, key: Tuple[str, str], steps: List[Callable[[Any], None]],
                   refuse_first: bool = False) -> Tuple[Optional[BaseException], Scripted]:
        sc = self.scripted
        sc.steps, sc.seen = list(steps), []
        cls = RefusingFirst if refuse_first else lc.Client
        c = cls(sc.url, "k", timeout=5)
        c.sleep = lambda d: None
        try:
            CALLS[key](c)
        except (lc.LedgerProblem, lc.TransportError) as e:
            return e, sc
        return None, sc

    def test_every_operation_and_failure_class(self) -> None:
        for key in CALLS:
            op = key[0]
            for failure in list(FAILURE_STEPS) + ["notSent"]:
                with self.subTest(op=key, failure=failure):
                    if failure == "notSent":
                        err, sc = self.run_script(key, [self.ok[op]], refuse_first=True)
                    else:
                        err, sc = self.run_script(key, [FAILURE_STEPS[failure], self.ok[op]])
                    self.assertTrue(sc.seen)
                    _, _, body, if_match = sc.seen[0]
                    repeat = file_repeat(op, body, bool(if_match))
                    if key[1] != "base":  # the variant takes the class its rule names
                        rule = TABLE["operations"][op]
                        want = rule["whenIfMatch"] if key[1] == "ifMatch" else rule["whenBody"][key[1]]
                        self.assertEqual(repeat, want)
                    want_retry = file_retried(failure, repeat)
                    tries = len(sc.seen)
                    if failure == "notSent":
                        # The refused try never reached the server: one try arrived after it.
                        self.assertEqual((tries, err is None), (1, True) if want_retry else (0, False))
                    else:
                        self.assertEqual(tries, 2 if want_retry else 1, "tries")
                        self.assertEqual(err is None, want_retry, err)

    def test_conditional_refusals_after_an_applied_try_are_maybe_applied(self) -> None:
        for op, e in TABLE["operations"].items():
            if e["repeat"] != "conditional" and e.get("whenIfMatch") != "conditional":
                continue
            key = (op, "base" if e["repeat"] == "conditional" else "ifMatch")
            for code in e["ambiguous"]:
                status = 412 if code == "precondition_failed" else 409
                with self.subTest(op=op, code=code):
                    err, sc = self.run_script(key, [hang_up, problem(status, code)])
                    self.assertIsInstance(err, lc.LedgerProblem)
                    assert isinstance(err, lc.LedgerProblem)
                    self.assertTrue(err.maybe_applied)
                    self.assertEqual(len(sc.seen), 2)
                    # Without an earlier try that may have applied, the refusal is just that.
                    err, sc = self.run_script(key, [problem(status, code)])
                    assert isinstance(err, lc.LedgerProblem)
                    self.assertFalse(err.maybe_applied)
                    # A 429 refused before anything ran: a refusal after it is not ambiguous.
                    err, sc = self.run_script(key, [FAILURE_STEPS["status429"], problem(status, code)])
                    assert isinstance(err, lc.LedgerProblem)
                    self.assertFalse(err.maybe_applied)

    def test_max_attempts_and_retry_after(self) -> None:
        sc = self.scripted
        sc.seen = []
        sc.steps = [problem(503, "database_unavailable", {"Retry-After": "2"})] * 10
        waits: List[float] = []
        c = lc.Client(sc.url, "k")
        c.sleep = waits.append
        with self.assertRaises(lc.DatabaseUnavailable) as cm:
            c.get_run(ID)
        self.assertEqual(len(sc.seen), TABLE["policy"]["maxAttempts"])
        self.assertEqual(cm.exception.retry_after, 2.0)
        for w in waits:
            self.assertTrue(2.0 <= w <= 2.0 * (1 + TABLE["policy"]["retryAfterJitter"]), w)
        # A Retry-After past maxRetryAfterMs fails at once instead of waiting.
        sc.steps, sc.seen = [problem(429, "rate_limited", {"Retry-After": "3600"}), self.ok["getRun"]], []
        with self.assertRaises(lc.RateLimited):
            c.get_run(ID)
        self.assertEqual(len(sc.seen), 1)
        # Backoff without Retry-After grows from base and stays under max.
        p = lc.RetryPolicy()
        for n in range(1, 12):
            w = p.backoff(n, None)
            self.assertLessEqual(w, min(p.max, p.base * 2 ** (n - 1)) + 0.001 + 1e-9)

    def test_timeouts(self) -> None:
        """A try that outlives the client's timeout is a lost answer: sent again when the
        call may be repeated, not when it may not; a long poll's wait extends the timeout."""
        sc = self.scripted

        def slow(step: Callable[[Any], None], delay: float) -> Callable[[Any], None]:
            def run(h: Any) -> None:
                time.sleep(delay)
                try:
                    step(h)
                except OSError:
                    pass  # the client gave up on this try
            return run

        c = lc.Client(sc.url, "k", timeout=0.3)
        c.sleep = lambda d: None
        sc.steps, sc.seen = [slow(self.ok["getRun"], 1.0), self.ok["getRun"]], []
        c.get_run(ID)
        self.assertEqual(len(sc.seen), 2)
        sc.steps, sc.seen = [slow(self.ok["claimRun"], 1.0)], []
        with self.assertRaises(lc.TransportError) as te:
            c.claim_run(_CLAIM)
        self.assertEqual(te.exception.kind, "no_answer")
        self.assertEqual(len(sc.seen), 1)
        sc.steps, sc.seen = [slow(self.ok["claimRun"], 0.8)], []
        self.assertIsNotNone(c.claim_run(lc.ClaimRequest(holder_id="h", release_id="r", adapter_version="v",
                                                         model_profile_id="m", wait_seconds=1)))
        self.assertEqual(len(sc.seen), 1)

    def test_waits_pause_after_early_answers(self) -> None:
        """A wait the service answered at once without the decision closed (its cap of waiting
        reads, or its shutdown) is followed by a doubling pause, never a busy loop; the wait
        sends waitSeconds and ends when the decision closes."""
        sc = self.scripted
        pending = sample(self.doc, {"$ref": "#/components/schemas/Decision"})
        self.assertEqual(pending["status"], "pending")
        approved = dict(pending, status="approved")
        sc.steps, sc.seen = [answer(200, json.dumps(pending).encode())] * 3 + [answer(200, json.dumps(approved).encode())], []
        waits: List[float] = []
        c = lc.Client(sc.url, "k", poll_min=0.25, poll_max=5.0)
        c.sleep = waits.append
        d = c.wait_decision(ID, timeout=100)
        self.assertEqual(d.status, lc.DecisionStatus.APPROVED)
        self.assertEqual(len(waits), 3)
        for w, most in zip(waits, [0.25, 0.5, 1.0]):
            self.assertTrue(most / 2 <= w <= most, waits)
        self.assertTrue(all("waitSeconds=30" in path for _, path, _, _ in sc.seen), sc.seen)

    def test_retry_after_http_date(self) -> None:
        import email.utils
        import time as _t
        v = lc.parse_retry_after(email.utils.formatdate(_t.time() + 5, usegmt=True))
        assert v is not None
        self.assertTrue(3.5 <= v <= 5.0, v)
        self.assertEqual(lc.parse_retry_after("7"), 7.0)
        self.assertIsNone(lc.parse_retry_after("soon"))


if __name__ == "__main__":
    unittest.main()
