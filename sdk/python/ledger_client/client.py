"""Client: every route of the ledger service, with retries as api/retry.json says."""

from __future__ import annotations

import http.client
import io
import json
import math
import re
import socket
import time
import urllib.parse
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Generic, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    TypeVar, Union, cast)

from . import _retry
from ._tables import OPERATIONS
from ._codec import DecodeError, encode, from_json
from ._deepjson import loads as _json_loads
from ._problem import (MAX_ERROR_BODY, ClaimHeld, LedgerProblem, TransportError, parse_retry_after,
                       problem_of)
from .jcs import manifest_hash
from .problem_codes import BY_CODE, NotFound, PreconditionFailed
from .wire import (AnswerDecisionRequest, Attempt, AttemptItem, AttemptItemPage, Call,
                   CallItem, CallItemPage, CallPage, CallRequest, Checkpoint, CheckpointPage, CheckpointRequest, Claim,
                   ClaimRequest, CompleteAttemptRequest, ContinueRequest, Decision,
                   DecisionItemPage, DecisionRequest, DecisionStatus, Delegation, DelegationPage,
                   DelegationRequest, DelegationStatus, EnqueueRequest, FencedRequest,
                   FinishCallRequest, Health, Heartbeat, HeartbeatRequest, LastCheckpoint,
                   LockRequest, PatchAttemptRequest, Project, ProjectItemPage, PutProjectRequest,
                   PutReleaseRequest, Release, ReleaseAttemptRequest, ReleaseItemPage, Run,
                   RunItem, RunItemPage, RunState, TaskLock, TimelineEntryPage, TimelineEntry)
from .wire import (BatchEnqueueRequest, BatchEnqueueResponse, BulkRunsRequest, Operation, DecisionItem, ForkRequest,
                   ParkAttemptRequest, PutScheduleRequest, PutWebhookRequest, Schedule, ScheduleItem, ScheduleItemPage,
                   UsageTotals, Webhook, WebhookDelivery, WebhookDeliveryPage, WebhookItem,
                   WebhookItemPage)

T = TypeVar("T")

#: Where a Client sends requests unless told otherwise: a `ledger serve` on this machine.
DEFAULT_BASE_URL = "http://localhost:8080"
DEFAULT_USER_AGENT = "ledger-python-client/1"
#: The changedSince that starts the change feed at the beginning.
FEED_START = "0000000000000000"
#: The longest wait the service's long polls take (claims, decision and run waits).
MAX_WAIT_SECONDS = 30
#: Bounds the read, change and write rounds of an update helper that keeps losing races.
MAX_UPDATE_TRIES = 8
#: The largest answer body a Client reads unless told otherwise: 8 times the service's
#: largest page (1 MiB).
MAX_RESPONSE_BYTES = 8 << 20
#: How long one try may take, from connecting to the answer's last byte, unless told
#: otherwise (a long poll's wait is added).
DEFAULT_DEADLINE = 60.0

_ENDED_DELEGATION = (DelegationStatus.SUCCEEDED, DelegationStatus.FAILED, DelegationStatus.CANCELLED)


@dataclass
class Answer(Generic[T]):
    """One answer: its status, headers and decoded body (None for 204, 304 and HEAD)."""

    status: int
    headers: Dict[str, str]
    body: T

    @property
    def etag(self) -> Optional[str]:
        return self.headers.get("ETag")


class _DeadlineSocket:
    """A connected socket whose every send and receive ends by one deadline: an answer that
    trickles in a byte at a time fails when the try's time is up, not when the server stops.
    http.client reads through makefile(), so its chunked decoding goes through here too."""

    def __init__(self, sock: socket.socket, deadline: float, per_op: float) -> None:
        self._sock = sock
        self._deadline = deadline
        self._per_op = per_op
        # As a socket's own: closed only once every file made of it is closed too
        # (http.client closes the connection while the answer is still being read).
        self._io_refs = 0
        self._closed = False

    def _arm(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("no whole answer within the try's deadline")
        self._sock.settimeout(min(left, self._per_op))

    def sendall(self, data: bytes) -> None:
        self._arm()
        self._sock.sendall(data)

    def recv_into(self, buf: memoryview, n: int = 0) -> int:
        self._arm()
        try:
            return self._sock.recv_into(buf, n)
        except socket.timeout:
            if time.monotonic() >= self._deadline:
                raise socket.timeout("no whole answer within the try's deadline") from None
            raise

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        self._io_refs += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"))  # type: ignore[arg-type]

    def _decref_socketios(self) -> None:
        self._io_refs -= 1
        if self._closed and self._io_refs <= 0:
            self._sock.close()

    def fileno(self) -> int:
        return self._sock.fileno()

    def settimeout(self, t: Optional[float]) -> None:
        self._sock.settimeout(t)

    def close(self) -> None:
        self._closed = True
        if self._io_refs <= 0:
            self._sock.close()


class _Secret:
    """Holds a key where repr, vars() and JSON serialisation cannot reach it: in a closure,
    on an object without a __dict__."""

    __slots__ = ("_get",)

    _get: Callable[[], str]

    def __init__(self, value: str) -> None:
        object.__setattr__(self, "_get", lambda: value)

    def reveal(self) -> str:
        return self._get()

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a key is not pickled")


class _Failed(Exception):
    """One try that failed in a way api/retry.json names."""

    def __init__(self, failure: str, error: Exception, sent: bool) -> None:
        self.failure = failure
        self.error = error
        self.sent = sent


def _status_failure(status: int) -> str:
    return "status%d" % status if status in (429, 502, 503, 504) else "otherStatus"


def _json_object(v: Any) -> Dict[str, Any]:
    """The answer of an insight: a JSON object, kept as decoded."""
    if not isinstance(v, dict):
        raise ValueError("an insight answers a JSON object")
    return v


#: The run listing's filters beyond list_runs' named ones, by wire name.
_RUN_FILTERS = frozenset({"agentId", "band", "queuedFrom", "queuedTo", "outcome", "errorCode", "releaseId",
                          "endedFrom", "endedTo", "tag", "attemptsMin", "attemptsMax",
                          "firstReleaseId", "hasError", "hasRelease", "notProjectId", "notAgentId",
                          "notKind", "notReleaseId", "notErrorCode", "notFirstReleaseId"})

#: The insight routes by their path's last segment (runs, leases-lost, …), with their
#: operation ids, from the operation table.
_INSIGHT_OPS = {e["path"].rsplit("/", 1)[1]: op for op, e in OPERATIONS.items()
                if e["path"].startswith("/v1/insights/")}


class Client:
    """Calls the ledger service. Safe to share between threads: make one per service and
    key.

    ``timeout`` bounds each try's connect and each read in seconds, ``deadline`` the whole
    try from connecting to the answer's last byte (a long poll's wait is added to both);
    ``max_response_bytes`` is the largest answer body read (a larger one fails the try);
    ``retry`` says how failed calls are sent again (``RetryPolicy(max_attempts=1)`` turns
    retries off). Redirects are never followed: a 3xx is a LedgerProblem like a 4xx. The key
    is kept out of reach of repr, vars() and JSON.
    """

    def __init__(self, base_url: str = DEFAULT_BASE_URL, key: Optional[str] = None, *,
                 timeout: float = 30.0, retry: Optional[_retry.RetryPolicy] = None,
                 user_agent: str = DEFAULT_USER_AGENT, poll_min: float = 0.25,
                 poll_max: float = 5.0, deadline: float = DEFAULT_DEADLINE,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("base URL %r: want http(s)://host[:port][/prefix]" % base_url)
        if not 0 < poll_min <= poll_max:
            raise ValueError("polling: want 0 < poll_min <= poll_max")
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self._key = _Secret(key) if key else None
        self.timeout = timeout
        self.deadline = deadline
        self.max_response_bytes = max_response_bytes
        self.retry = retry or _retry.RetryPolicy()
        self.user_agent = user_agent
        self.poll_min, self.poll_max = poll_min, poll_max
        #: Waits between tries; tests replace it to observe the waits.
        self.sleep: Callable[[float], None] = time.sleep

    @property
    def base_url(self) -> str:
        host = self._host if ":" not in self._host else "[%s]" % self._host
        port = ":%d" % self._port if self._port else ""
        return "%s://%s%s%s" % (self._scheme, host, port, self._prefix)

    def __repr__(self) -> str:
        return "Client(%r)" % self.base_url

    # ---- transport ----

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _try(self, method: str, path: str, target: str, body: Optional[bytes],
             headers: Dict[str, str], timeout: float,
             decode: Callable[[bytes], T], deadline: float = DEFAULT_DEADLINE) -> Answer[T]:
        """Sends one try on a connection of its own, so that a failure to connect certainly
        sent nothing. Everything after the connect ends by the try's deadline."""
        conn = self._connection(timeout)
        ends = time.monotonic() + deadline
        try:
            try:
                conn.connect()
            except (OSError, http.client.HTTPException) as e:
                raise _Failed("notSent", TransportError("not_sent", method, path, e), False)
            conn.sock = _DeadlineSocket(conn.sock, ends, timeout)
            try:
                conn.request(method, target, body=body, headers=headers)
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                raise _Failed("noAnswer", TransportError("no_answer", method, path, e), True)
            hdrs: Dict[str, str] = _Headers(resp.getheaders())
            status = resp.status
            if status in (204, 304) or (200 <= status < 300 and method == "HEAD"):
                # No body: the caller reads the status (a claim's 204).
                return Answer(status, hdrs, cast(T, None))
            if 200 <= status < 300:
                try:
                    raw = resp.read(self.max_response_bytes + 1)
                    if len(raw) > self.max_response_bytes:
                        raise ValueError("the answer's body exceeds %d bytes" % self.max_response_bytes)
                    if resp.length:  # a read of a size stops short silently: an answer cut off
                        raise http.client.IncompleteRead(raw, resp.length)
                    value = decode(raw)
                except (OSError, http.client.HTTPException, ValueError, DecodeError) as e:
                    raise _Failed("unreadableAnswer",
                                  TransportError("unreadable_answer", method, path, e, status), True)
                return Answer(status, hdrs, value)
            try:
                raw = resp.read(MAX_ERROR_BODY)
            except (OSError, http.client.HTTPException):
                raw = b""
            p = problem_of(method, path, status, hdrs, raw, BY_CODE)
            raise _Failed(_status_failure(status), p, True)
        finally:
            conn.close()

    def _call(self, op: str, *params: str, query: Optional[Mapping[str, Any]] = None,
              body: Any = None, if_match: Optional[str] = None, decode: Callable[[Any], T], text: bool = False, wait: float = 0) -> Answer[T]:
        """Sends one call of operation op, its method and path template read from the
        operation table, params filling the template's parameters in order, retrying as its
        repeat class and the policy allow; raises a LedgerProblem or TransportError for the
        last failed try. decode makes the answer's value of its JSON (text: of its UTF-8 text)."""
        method, path = _route(op, params)
        def raw_decode(raw: bytes) -> T:
            text_value = raw.decode("utf-8")
            return decode(text_value if text else (_json_loads(text_value) if raw else None))
        payload = None if body is None else encode(body)
        data = None if payload is None else json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        repeat = _retry.repeat_class(op, payload, if_match)
        target = self._prefix + path
        # A list (the not* filters) goes as the parameter repeated, one item each, in order;
        # an empty one is left out.
        q = {k: [_query_text(x) for x in v] if isinstance(v, (list, tuple)) else _query_text(v)
             for k, v in (query or {}).items() if v is not None and v != [] and v != ()}
        if q:
            target += "?" + urllib.parse.urlencode(q, doseq=True)
        headers = {"Accept": "application/json, application/problem+json", "User-Agent": self.user_agent}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._key is not None:
            headers["Authorization"] = "Bearer " + self._key.reveal()
        if if_match:
            headers["If-Match"] = if_match
        rule = _retry.OPERATIONS[op]
        may_have_applied = False
        n = 0
        while True:
            n += 1
            try:
                return self._try(method, path, target, data, headers, self.timeout + wait, raw_decode,
                                 self.deadline + wait)
            except _Failed as f:
                err = f.error
                retry_after = err.retry_after if isinstance(err, LedgerProblem) else None
                if (isinstance(err, LedgerProblem) and repeat == _retry.CONDITIONAL and may_have_applied
                        and err.code in rule.ambiguous):
                    err.maybe_applied = True
                    raise err from None
                if (not _retry.retried(f.failure, repeat) or n >= self.retry.max_attempts
                        or (retry_after or 0) > self.retry.max_retry_after):
                    raise err from None
                if f.sent and f.failure != "status429":
                    may_have_applied = True
                self.sleep(self.retry.backoff(n, retry_after))

    # ---- runs ----

    def enqueue_run(self, req: EnqueueRequest) -> Run:
        """Queues a run (POST /v1/runs). Retried only when the request carries an
        idempotency_key: a repeat under the same key answers the existing run, where without
        one a lost answer could mean a run queued twice."""
        return self._call("enqueueRun", body=req, decode=Run.from_json).body

    def claim_run(self, req: ClaimRequest) -> Optional[Claim]:
        """Leases one due run and starts its attempt (POST /v1/runs/claim), waiting up to
        req.wait_seconds. None when nothing is due; ClaimHeld when the service held the claim
        back. Never sent again once it may have reached the service (a lost answer may hold a
        lease, which passes and the reaper takes back). Use a Worker rather than claiming by
        hand."""
        a = self._call("claimRun", body=req, decode=Claim.from_json,
                       wait=req.wait_seconds or 0)
        if a.status == 204:
            ra = parse_retry_after(a.headers.get("Retry-After"))
            if ra:
                raise ClaimHeld(ra)
            return None
        return a.body

    def get_run(self, run_id: str, *, wait_seconds: Optional[int] = None) -> Run:
        """Reads a run (GET /v1/runs/{runId}); with wait_seconds (0..30) the service answers
        as soon as the run has ended, or at the timeout with its current state."""
        return self._call("getRun", run_id, query={"waitSeconds": wait_seconds},
                          decode=Run.from_json, wait=wait_seconds or 0).body

    def wait_run(self, run_id: str, timeout: Optional[float] = None, *,
                 check: Optional[Callable[[], None]] = None, chunk: int = MAX_WAIT_SECONDS) -> Run:
        """Waits until a run has ended and returns it (long polls of GET /v1/runs/{id});
        WaitTimeout (holding the last state read) when timeout seconds pass first. check, when
        given, runs before each poll (a Lease's check), and chunk bounds each poll's wait."""
        def read(w: int) -> Run:
            return self.get_run(run_id, wait_seconds=w)

        def ended(r: Run) -> bool:
            return r.state == RunState.ENDED

        return self.long_poll(read, ended, timeout, check=check, chunk=chunk)

    def insight(self, name: str, *, from_: Optional[str] = None, to: Optional[str] = None,
                bucket: Optional[str] = None, group_by: Optional[str] = None, project_id: Optional[str] = None,
                agent_id: Optional[str] = None, release_id: Optional[str] = None,
                kind: Optional[str] = None) -> Dict[str, Any]:
        """An insight of the tenant's history (admin; GET /v1/insights/{name}): name is one of
        runs, attempts, leases-lost, attempts-per-run, claim-latency (these take group_by),
        calls, decisions or usage (group_by model, agent, release or project). The answer is the insight's JSON object (see the OpenAPI document)."""
        op = _INSIGHT_OPS[name]
        return self._call(op, query={
            "from": from_, "to": to, "bucket": bucket, "groupBy": group_by, "projectId": project_id,
            "agentId": agent_id, "releaseId": release_id, "kind": kind}, decode=_json_object).body

    def list_runs(self, *, state: Optional[str] = None, subject: Optional[str] = None,
                  project_id: Optional[str] = None, kind: Optional[str] = None,
                  limit: Optional[int] = None, cursor: Optional[str] = None,
                  **filters: Any) -> RunItemPage:
        """One page of the tenant's runs, newest first (GET /v1/runs). filters are the
        listing's other query parameters by their wire names (agentId, band, queuedFrom,
        queuedTo, outcome, errorCode, releaseId, endedFrom, endedTo, tag, attemptsMin,
        attemptsMax, firstReleaseId, hasError: False for the runs without an error, hasRelease:
        False for the runs never claimed; and the lists notProjectId, notAgentId, notKind,
        notReleaseId, notErrorCode, notFirstReleaseId, each a list of values to leave out)."""
        unknown = set(filters) - _RUN_FILTERS
        if unknown:
            raise TypeError("list_runs: no filter " + ", ".join(sorted(unknown)))
        return self._call("listRuns", query={
            "state": state, "subject": subject, "projectId": project_id, "kind": kind,
            "limit": limit, "cursor": cursor, **filters}, decode=RunItemPage.from_json).body

    def runs(self, *, state: Optional[str] = None, subject: Optional[str] = None,
             project_id: Optional[str] = None, kind: Optional[str] = None,
             limit: Optional[int] = None, **filters: Any) -> Iterator[RunItem]:
        """Every run matching the filters, newest first, following nextCursor."""
        return _pages(lambda c: self.list_runs(state=state, subject=subject, project_id=project_id,
                                               kind=kind, limit=limit, cursor=c, **filters))

    def cancel_run(self, run_id: str) -> Run:
        """Cancels a run (admin; POST /v1/runs/{runId}/cancel): a queued run ends cancelled at
        once, a leased one is asked to stop. Idempotent, so retried."""
        return self._call("cancelRun", run_id, decode=Run.from_json).body

    def continue_run(self, run_id: str, req: Optional[ContinueRequest] = None) -> Run:
        """Continues an ended run on a new run (POST /v1/runs/{runId}/continue). A repeat
        answers the existing continuation, so it is retried."""
        return self._call("continueRun", run_id, body=req,
                          decode=Run.from_json).body

    def last_checkpoint(self, run_id: str) -> Optional[LastCheckpoint]:
        """A run's last checkpoint, or when it has none that of the run it continues, back the
        chain (GET /v1/runs/{runId}/checkpoints/last); None when the chain has none, NotFound
        only when the run does not exist."""
        return self._last_checkpoint(run_id, run_exists=False)

    def _last_checkpoint(self, run_id: str, run_exists: bool) -> Optional[LastCheckpoint]:
        try:
            return self._call("getLastCheckpoint", run_id,
                              decode=LastCheckpoint.from_json).body
        except NotFound:
            if run_exists:
                return None
            self.get_run(run_id)  # NotFound when the run itself is missing
            return None

    # ---- attempts ----

    def get_attempt(self, attempt_id: str) -> Tuple[Attempt, Optional[str]]:
        """Reads an attempt and its ETag."""
        a = self._call("getAttempt", attempt_id, decode=Attempt.from_json)
        return a.body, a.etag

    def list_attempts(self, *, run_id: Optional[str] = None, agent_id: Optional[str] = None,
                      project_id: Optional[str] = None, state: Optional[str] = None,
                      started_from: Any = None, started_to: Any = None,
                      changed_since: Optional[str] = None, limit: Optional[int] = None,
                      cursor: Optional[str] = None, ended_from: Any = None, ended_to: Any = None,
                      release_id: Optional[str] = None, kind: Optional[str] = None,
                      error_code: Optional[str] = None, has_error: Optional[bool] = None,
                      not_project_id: Optional[Sequence[str]] = None, not_agent_id: Optional[Sequence[str]] = None,
                      not_kind: Optional[Sequence[str]] = None, not_release_id: Optional[Sequence[str]] = None,
                      not_error_code: Optional[Sequence[str]] = None) -> AttemptItemPage:
        """One page of attempts (GET /v1/attempts): newest first with the filters; with
        ended_from or ended_to the attempts ended in that window, newest end first (as the
        attempt insights count them); or the change feed with changed_since. The not_* lists
        leave out the attempts with one of their values."""
        return self._call("listAttempts", query={
            "runId": run_id, "agentId": agent_id, "projectId": project_id, "state": state,
            "startedFrom": started_from, "startedTo": started_to, "changedSince": changed_since,
            "limit": limit, "cursor": cursor, "endedFrom": ended_from, "endedTo": ended_to,
            "releaseId": release_id, "kind": kind, "errorCode": error_code, "hasError": has_error,
            "notProjectId": not_project_id, "notAgentId": not_agent_id, "notKind": not_kind,
            "notReleaseId": not_release_id, "notErrorCode": not_error_code},
            decode=AttemptItemPage.from_json).body

    def attempts(self, *, run_id: Optional[str] = None, agent_id: Optional[str] = None,
                 project_id: Optional[str] = None, state: Optional[str] = None,
                 started_from: Any = None, started_to: Any = None,
                 limit: Optional[int] = None, ended_from: Any = None, ended_to: Any = None,
                 release_id: Optional[str] = None, kind: Optional[str] = None,
                 error_code: Optional[str] = None, has_error: Optional[bool] = None,
                 not_project_id: Optional[Sequence[str]] = None, not_agent_id: Optional[Sequence[str]] = None,
                 not_kind: Optional[Sequence[str]] = None, not_release_id: Optional[Sequence[str]] = None,
                 not_error_code: Optional[Sequence[str]] = None) -> Iterator[AttemptItem]:
        """Every attempt matching the filters, newest first (newest end first with
        ended_from or ended_to)."""
        return _pages(lambda c: self.list_attempts(
            run_id=run_id, agent_id=agent_id, project_id=project_id, state=state,
            started_from=started_from, started_to=started_to, limit=limit, cursor=c,
            ended_from=ended_from, ended_to=ended_to, release_id=release_id, kind=kind,
            error_code=error_code, has_error=has_error, not_project_id=not_project_id,
            not_agent_id=not_agent_id, not_kind=not_kind, not_release_id=not_release_id,
            not_error_code=not_error_code))

    def changes(self, since: str = FEED_START) -> Iterator[AttemptItem]:
        """The change feed: attempts changed after since (an attempt's ETag; FEED_START for the
        beginning), oldest change first, until it has caught up. Keep the last item's etag
        and pass it as since to read later changes."""
        since = since or FEED_START
        return _pages(lambda c: self.list_attempts(changed_since=None if c else since, limit=500, cursor=c))

    def patch_attempt(self, attempt_id: str, req: PatchAttemptRequest) -> Attempt:
        """Changes an attempt's phase, counts a correction or records its context snapshot
        (PATCH /v1/attempts/{attemptId}). Retried unless it counts a correction."""
        return self._call("patchAttempt", attempt_id, body=req, decode=Attempt.from_json).body

    def heartbeat(self, attempt_id: str, req: HeartbeatRequest) -> Heartbeat:
        """Renews a lease and says whether a cancel is pending. Retried."""
        return self._call("heartbeatAttempt", attempt_id, body=req,
                          decode=Heartbeat.from_json).body

    def release_attempt(self, attempt_id: str, req: ReleaseAttemptRequest) -> Attempt:
        """Gives a leased run back. A repeat answers as the first did, so it is retried."""
        return self._call("releaseAttempt", attempt_id, body=req,
                          decode=Attempt.from_json).body

    def complete_attempt(self, attempt_id: str, req: CompleteAttemptRequest) -> Attempt:
        """Ends an attempt and its run. An exact repeat answers as the first did: retried."""
        return self._call("completeAttempt", attempt_id, body=req,
                          decode=Attempt.from_json).body

    def observe_cancellation(self, attempt_id: str, req: FencedRequest) -> Attempt:
        """Records that the holder saw its run's cancel request (NoCancelRequested when none
        is pending). Recorded once, so retried."""
        return self._call("acknowledgeCancellation", attempt_id, body=req,
                          decode=Attempt.from_json).body

    def timeline(self, attempt_id: str, *, limit: Optional[int] = None,
                 cursor: Optional[str] = None) -> TimelineEntryPage:
        """One page of an attempt's timeline: checkpoints, calls, decisions and delegations
        merged by time."""
        return self._call("getAttemptTimeline", attempt_id,
                          query={"limit": limit, "cursor": cursor}, decode=TimelineEntryPage.from_json).body

    def timeline_entries(self, attempt_id: str) -> Iterator[TimelineEntry]:
        """An attempt's whole timeline."""
        return _pages(lambda c: self.timeline(attempt_id, cursor=c))

    # ---- checkpoints and calls ----

    def append_checkpoint(self, attempt_id: str, req: CheckpointRequest) -> Checkpoint:
        """Appends a checkpoint under the lease. A repeat of a sequence with the same hash
        answers the stored checkpoint (so it is retried); another hash is SequenceConflict."""
        return self._call("appendCheckpoint", attempt_id, body=req,
                          decode=Checkpoint.from_json).body

    def list_checkpoints(self, attempt_id: str, *, limit: Optional[int] = None,
                         cursor: Optional[str] = None) -> CheckpointPage:
        return self._call("listCheckpoints", attempt_id,
                          query={"limit": limit, "cursor": cursor}, decode=CheckpointPage.from_json).body

    def checkpoints(self, attempt_id: str) -> Iterator[Checkpoint]:
        """An attempt's checkpoints in sequence order."""
        return _pages(lambda c: self.list_checkpoints(attempt_id, cursor=c))

    def get_checkpoint(self, attempt_id: str, checkpoint_id: str) -> Checkpoint:
        return self._call("getCheckpoint", attempt_id, checkpoint_id,
                          decode=Checkpoint.from_json).body

    def record_call(self, attempt_id: str, req: CallRequest) -> Tuple[Call, Optional[str]]:
        """Records a started call under the lease and returns it with its ETag. A repeat of
        a sequence with the same request_hash answers the stored call (so it is retried)."""
        a = self._call("recordCall", attempt_id, body=req, decode=Call.from_json)
        return a.body, a.etag

    def finish_call(self, attempt_id: str, call_id: str, req: FinishCallRequest,
                    if_match: Optional[str] = None) -> Call:
        """Finishes a call under the lease; if_match, when given, is sent as If-Match (and the
        call is then retried as a conditional update: see LedgerProblem.maybe_applied)."""
        return self._call("finishCall", attempt_id, call_id, body=req,
                          if_match=if_match, decode=Call.from_json).body

    def list_calls(self, attempt_id: str, *, limit: Optional[int] = None,
                   cursor: Optional[str] = None) -> CallPage:
        return self._call("listCalls", attempt_id,
                          query={"limit": limit, "cursor": cursor}, decode=CallPage.from_json).body

    def list_tenant_calls(self, *, started_from: Any = None, started_to: Any = None,
                          ended_from: Any = None, ended_to: Any = None,
                          target: Optional[str] = None, model: Optional[str] = None,
                          reported_usage: Optional[bool] = None, project_id: Optional[str] = None,
                          agent_id: Optional[str] = None, release_id: Optional[str] = None,
                          kind: Optional[str] = None, limit: Optional[int] = None,
                          cursor: Optional[str] = None, has_model: Optional[bool] = None,
                          not_target: Optional[Sequence[str]] = None,
                          not_model: Optional[Sequence[str]] = None) -> CallItemPage:
        """One page of the tenant's calls (GET /v1/calls): started in a window, newest start
        first, or with ended_from/ended_to finished in one, newest end first (as the calls and
        usage insights count them). not_target and not_model leave out the calls with one of
        their values (a call without a model is kept)."""
        return self._call("listTenantCalls", query={
            "startedFrom": started_from, "startedTo": started_to, "endedFrom": ended_from,
            "endedTo": ended_to, "target": target, "model": model, "hasModel": has_model,
            "notTarget": not_target, "notModel": not_model,
            "reportedUsage": reported_usage,
            "projectId": project_id, "agentId": agent_id, "releaseId": release_id, "kind": kind,
            "limit": limit, "cursor": cursor}, decode=CallItemPage.from_json).body

    def tenant_calls(self, **filters: Any) -> Iterator[CallItem]:
        """Every call of the tenant's listing (list_tenant_calls' filters), newest first."""
        return _pages(lambda c: self.list_tenant_calls(cursor=c, **filters))

    def calls(self, attempt_id: str) -> Iterator[Call]:
        """An attempt's calls in sequence order."""
        return _pages(lambda c: self.list_calls(attempt_id, cursor=c))

    def get_call(self, attempt_id: str, call_id: str) -> Tuple[Call, Optional[str]]:
        """Reads one call and its ETag."""
        a = self._call("getCall", attempt_id, call_id, decode=Call.from_json)
        return a.body, a.etag

    # ---- decisions and delegations ----

    def request_decision(self, attempt_id: str, req: DecisionRequest) -> Decision:
        """Asks a person to decide, under the lease. Never sent again once it may have
        reached the service: a repeat would ask twice."""
        return self._call("requestDecision", attempt_id, body=req,
                          decode=Decision.from_json).body

    def list_attempt_decisions(self, attempt_id: str, *, limit: Optional[int] = None,
                               cursor: Optional[str] = None) -> DecisionItemPage:
        return self._call("listAttemptDecisions", attempt_id,
                          query={"limit": limit, "cursor": cursor}, decode=DecisionItemPage.from_json).body

    def list_decisions(self, *, status: Optional[str] = None, project_id: Optional[str] = None,
                       limit: Optional[int] = None, cursor: Optional[str] = None,
                       kind: Optional[str] = None, requested_from: Any = None, requested_to: Any = None,
                       agent_id: Optional[str] = None, release_id: Optional[str] = None,
                       run_kind: Optional[str] = None) -> DecisionItemPage:
        """One page of the decision inbox (admin), oldest request first; kind, the requested
        window, agent, release and run kind narrow as the decisions insight counts."""
        return self._call("listDecisions", query={
            "status": status, "projectId": project_id, "limit": limit, "cursor": cursor,
            "kind": kind, "requestedFrom": requested_from, "requestedTo": requested_to,
            "agentId": agent_id, "releaseId": release_id, "runKind": run_kind},
            decode=DecisionItemPage.from_json).body

    def decisions(self, *, status: Optional[str] = None, project_id: Optional[str] = None,
                  kind: Optional[str] = None, requested_from: Any = None, requested_to: Any = None,
                  agent_id: Optional[str] = None, release_id: Optional[str] = None,
                  run_kind: Optional[str] = None) -> Iterator[Decision]:
        """The whole decision inbox (admin) matching the filters."""
        return _pages(lambda c: self.list_decisions(
            status=status, project_id=project_id, cursor=c, kind=kind, requested_from=requested_from,
            requested_to=requested_to, agent_id=agent_id, release_id=release_id, run_kind=run_kind))

    def get_decision(self, decision_id: str, *, wait_seconds: Optional[int] = None) -> Tuple[Decision, Optional[str]]:
        """Reads a decision and its ETag; with wait_seconds (0..30) the service answers as
        soon as the decision is closed, or at the timeout with its current state."""
        a = self._call("getDecision", decision_id,
                       query={"waitSeconds": wait_seconds}, decode=Decision.from_json, wait=wait_seconds or 0)
        return a.body, a.etag

    def wait_decision(self, decision_id: str, timeout: Optional[float] = None, *,
                      check: Optional[Callable[[], None]] = None, chunk: int = MAX_WAIT_SECONDS) -> Decision:
        """Waits until a decision is no longer pending (approved, rejected, expired or
        cancelled) and returns it, with long polls of GET /v1/decisions/{id}?waitSeconds.
        WaitTimeout (holding the last state read) when timeout seconds pass first."""
        def read(w: int) -> Decision:
            return self.get_decision(decision_id, wait_seconds=w)[0]

        def closed(d: Decision) -> bool:
            return d.status != DecisionStatus.PENDING

        return self.long_poll(read, closed, timeout, check=check, chunk=chunk)

    def answer_decision(self, decision_id: str, etag: str, req: AnswerDecisionRequest) -> Decision:
        """Answers a pending decision (admin) with the ETag it was read with: PreconditionFailed
        when it changed since, DecisionClosed when it is no longer pending. Retried; a retry
        refused either way after an earlier try may have reached the service has
        maybe_applied set (read the decision to see how it closed)."""
        return self._call("answerDecision", decision_id, body=req,
                          if_match=etag, decode=Decision.from_json).body

    def answer_pending(self, decision_id: str, req: AnswerDecisionRequest) -> Decision:
        """Reads a decision and answers it with the ETag it read."""
        _, etag = self.get_decision(decision_id)
        return self.answer_decision(decision_id, etag or "", req)

    def delegate(self, attempt_id: str, req: DelegationRequest) -> Delegation:
        """Enqueues a child run and records the delegation under the lease. Retried only when
        req.child.idempotency_key is set (a repeat then answers the existing delegation)."""
        return self._call("createDelegation", attempt_id, body=req,
                          decode=Delegation.from_json).body

    def list_delegations(self, attempt_id: str, *, limit: Optional[int] = None,
                         cursor: Optional[str] = None) -> DelegationPage:
        return self._call("listDelegations", attempt_id,
                          query={"limit": limit, "cursor": cursor}, decode=DelegationPage.from_json).body

    def delegations(self, attempt_id: str) -> Iterator[Delegation]:
        return _pages(lambda c: self.list_delegations(attempt_id, cursor=c))

    def get_delegation(self, delegation_id: str) -> Delegation:
        """Reads a delegation (its status follows the child run)."""
        return self._call("getDelegation", delegation_id,
                          decode=Delegation.from_json).body

    def wait_delegation(self, delegation_id: str, timeout: Optional[float] = None, *,
                        check: Optional[Callable[[], None]] = None, chunk: int = MAX_WAIT_SECONDS) -> Delegation:
        """Waits until a delegation's child run has ended (status succeeded, failed or
        cancelled) and returns the delegation: it long-polls the child run
        (GET /v1/runs/{id}?waitSeconds) and reads the delegation after each poll (its status
        moves in the same transaction as the child run, and follows a continued child's
        continuation). WaitTimeout when timeout seconds pass first."""
        d = self.get_delegation(delegation_id)
        if d.status in _ENDED_DELEGATION:
            return d
        child = {"run": d.child_run_id}

        def read(w: int) -> Delegation:
            run = self.get_run(child["run"], wait_seconds=w)
            got = self.get_delegation(delegation_id)
            if got.status not in _ENDED_DELEGATION and run.state == RunState.ENDED:
                # The child ended and was continued: the delegation follows the chain's newest
                # run, so wait on that one from now on.
                child["run"] = _newest_continuation(self, run)
            return got

        def ended(x: Delegation) -> bool:
            return x.status in _ENDED_DELEGATION

        return self.long_poll(read, ended, timeout, check=check, chunk=chunk)

    def long_poll(self, read: Callable[[int], T], done: Callable[[T], bool], timeout: Optional[float], *,
                  check: Optional[Callable[[], None]] = None, chunk: int = MAX_WAIT_SECONDS) -> T:
        """Reads with read(wait_seconds) until done says so. A poll answered well before its
        wait without being done (the service could not hold it: its cap of waiting reads, or
        its shutdown) is followed by a pause of half to all of a wait doubling from poll_min
        to poll_max (as the Go SDK's), so that such answers never make a busy loop."""
        deadline = None if timeout is None else time.monotonic() + timeout
        early = 0
        while True:
            if check is not None:
                check()
            left = None if deadline is None else deadline - time.monotonic()
            w = min(chunk, _wait_seconds(left))
            started = time.monotonic()
            cur = read(w)
            if done(cur):
                return cur
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise WaitTimeout("still waiting after %gs" % (timeout or 0), cur)
            if now - started < w / 2:
                early += 1
                pause = _retry.equal_jitter(self.poll_min, self.poll_max, early)
                if deadline is not None:
                    pause = min(pause, max(0.0, deadline - now))
                self.sleep(pause)
            else:
                early = 0

    # ---- locks ----

    def acquire_lock(self, agent_id: str, task_id: str, req: LockRequest) -> TaskLock:
        """Takes, or renews for the same holder, a task run lock; LockHeld (with held_until)
        while another holder has it. Retried: a repeat renews."""
        return self._call("acquireTaskLock", agent_id, task_id, body=req, decode=TaskLock.from_json).body

    def release_lock(self, agent_id: str, task_id: str, holder_id: str) -> None:
        """Releases a task run lock held by holder_id; LockHeld when another holds it."""
        self._call("releaseTaskLock", agent_id, task_id, query={"holderId": holder_id},
                   decode=_nothing)

    # ---- projects ----

    def put_project(self, project_id: str, req: PutProjectRequest,
                    if_match: Optional[str] = None) -> Tuple[Project, Optional[str]]:
        """Creates a project (if_match None) or updates it with the ETag it was read with
        (admin), and returns it with its new ETag. A create is not retried once it may have
        reached the service; an update is (see maybe_applied). update_project does the read,
        change and write."""
        a = self._call("putProject", project_id, body=req, if_match=if_match,
                       decode=Project.from_json)
        return a.body, a.etag

    def get_project(self, project_id: str) -> Tuple[Project, Optional[str]]:
        a = self._call("getProject", project_id, decode=Project.from_json)
        return a.body, a.etag

    def list_projects(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> ProjectItemPage:
        return self._call("listProjects", query={"limit": limit, "cursor": cursor},
                          decode=ProjectItemPage.from_json).body

    def projects(self) -> Iterator[Project]:
        return _pages(lambda c: self.list_projects(cursor=c))

    def update_project(self, project_id: str, change: Callable[[PutProjectRequest], None]) -> Project:
        """Reads a project, lets change edit a request filled with its current values, and
        writes it with the ETag it read; when another writer got there first (412) it reads
        and changes again, so change must say what the project should become."""
        for _ in range(MAX_UPDATE_TRIES):
            cur, etag = self.get_project(project_id)
            req = PutProjectRequest(active=cur.active, retention_days=cur.retention_days,
                                    daily_cost_budget_micros=cur.daily_cost_budget_micros)
            change(req)
            try:
                return self.put_project(project_id, req, etag or "*")[0]
            except PreconditionFailed:
                continue
        raise PreconditionFailed(status=412, code="precondition_failed", method="PUT",
                                 path="/v1/projects/" + project_id,
                                 detail="it kept changing under %d tries" % MAX_UPDATE_TRIES)

    # ---- releases ----

    def put_release(self, release_id: str, adapter_version: str, req: PutReleaseRequest,
                    if_match: Optional[str] = None) -> Tuple[Release, Optional[str]]:
        """Registers a verified release adapter (if_match None) or moves its state or in-flight
        policy with the ETag it was read with, and returns it with its ETag. manifest_hash
        computes the request's manifest_hash."""
        a = self._call("putRelease", release_id, adapter_version, body=req, if_match=if_match,
                       decode=Release.from_json)
        return a.body, a.etag

    def get_release(self, release_id: str, adapter_version: str) -> Tuple[Release, Optional[str]]:
        a = self._call("getRelease", release_id, adapter_version, decode=Release.from_json)
        return a.body, a.etag

    def list_releases(self, *, state: Optional[str] = None, limit: Optional[int] = None,
                      cursor: Optional[str] = None) -> ReleaseItemPage:
        return self._call("listReleases", query={"state": state, "limit": limit, "cursor": cursor},
                          decode=ReleaseItemPage.from_json).body

    def releases(self, *, state: Optional[str] = None) -> Iterator[Release]:
        return _pages(lambda c: self.list_releases(state=state, cursor=c))

    def update_release(self, release_id: str, adapter_version: str,
                       change: Callable[[PutReleaseRequest], None]) -> Release:
        """Reads a release adapter, lets change edit a request filled with its current values
        (only state and in_flight_policy may differ), and writes it with the ETag it read,
        reading and changing again when another writer got there first."""
        for _ in range(MAX_UPDATE_TRIES):
            cur, etag = self.get_release(release_id, adapter_version)
            req = PutReleaseRequest(content_refs=cur.content_refs, manifest_hash=cur.manifest_hash,
                                    state=cur.state, in_flight_policy=cur.in_flight_policy)
            change(req)
            try:
                return self.put_release(release_id, adapter_version, req, etag or "*")[0]
            except PreconditionFailed:
                continue
        raise PreconditionFailed(status=412, code="precondition_failed", method="PUT",
                                 path=_route("putRelease", (release_id, adapter_version))[1],
                                 detail="it kept changing under %d tries" % MAX_UPDATE_TRIES)

    @staticmethod
    def manifest_hash(content_refs: List[Any]) -> str:
        """A release's manifestHash (see jcs.manifest_hash)."""
        return manifest_hash(content_refs)

    # ---- batches, forks, parking and usage ----

    def enqueue_run_batch(self, req: BatchEnqueueRequest) -> BatchEnqueueResponse:
        """Queues many runs in one request (POST /v1/runs/batch); each item answers on its
        own. Never sent again once it may have reached the service."""
        return self._call("enqueueRunBatch", body=req,
                          decode=BatchEnqueueResponse.from_json).body

    def bulk_runs(self, req: BulkRunsRequest) -> Operation:
        """Applies an action to runs named or matched by a filter as a background operation
        (admin; POST /v1/runs/bulk); retried only when req carries an idempotency_key.
        Follow it with get_operation."""
        return self._call("bulkRuns", body=req, decode=Operation.from_json).body

    def get_operation(self, operation_id: str) -> Operation:
        """A background operation's progress and result."""
        return self._call("getOperation", operation_id,
                          decode=Operation.from_json).body

    def fork_run(self, run_id: str, req: ForkRequest) -> Run:
        """Starts a new run from one of a run's checkpoints (POST /v1/runs/{runId}/fork);
        retried only when req carries an idempotency_key."""
        return self._call("forkRun", run_id, body=req,
                          decode=Run.from_json).body

    def park_attempt(self, attempt_id: str, req: ParkAttemptRequest) -> Attempt:
        """Ends an attempt as parked under the lease: the run waits for its decisions,
        children or due time without holding a lease."""
        return self._call("parkAttempt", attempt_id, body=req,
                          decode=Attempt.from_json).body

    def list_run_decisions(self, run_id: str, *, limit: Optional[int] = None,
                           cursor: Optional[str] = None) -> DecisionItemPage:
        """One page of the decisions every attempt of a run asked for."""
        return self._call("listRunDecisions", run_id,
                          query={"limit": limit, "cursor": cursor}, decode=DecisionItemPage.from_json).body

    def run_decisions(self, run_id: str) -> Iterator[DecisionItem]:
        return _pages(lambda c: self.list_run_decisions(run_id, cursor=c))

    def attempt_usage(self, attempt_id: str) -> UsageTotals:
        """The totals (tokens, cost) of the calls an attempt reported."""
        return self._call("getAttemptUsage", attempt_id,
                          decode=UsageTotals.from_json).body

    def run_usage(self, run_id: str) -> UsageTotals:
        """The totals (tokens, cost) of the calls every attempt of a run reported."""
        return self._call("getRunUsage", run_id,
                          decode=UsageTotals.from_json).body

    # ---- schedules ----

    def put_schedule(self, schedule_id: str, req: PutScheduleRequest,
                     if_match: Optional[str] = None) -> Tuple[Schedule, Optional[str]]:
        """Creates a schedule (if_match None, not retried once it may have arrived) or
        replaces it with the ETag it was read with (admin); returns it with its new ETag."""
        a = self._call("putSchedule", schedule_id, body=req,
                       if_match=if_match, decode=Schedule.from_json)
        return a.body, a.etag

    def get_schedule(self, schedule_id: str) -> Tuple[Schedule, Optional[str]]:
        a = self._call("getSchedule", schedule_id, decode=Schedule.from_json)
        return a.body, a.etag

    def delete_schedule(self, schedule_id: str) -> None:
        """Deletes a schedule; a NotFound after a retried try may mean the first try deleted it
        (LedgerProblem.maybe_applied)."""
        self._call("deleteSchedule", schedule_id, decode=_nothing)

    def list_schedules(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> ScheduleItemPage:
        return self._call("listSchedules", query={"limit": limit, "cursor": cursor},
                          decode=ScheduleItemPage.from_json).body

    def schedules(self) -> Iterator[ScheduleItem]:
        return _pages(lambda c: self.list_schedules(cursor=c))

    # ---- webhooks ----

    def put_webhook(self, name: str, req: PutWebhookRequest,
                    if_match: Optional[str] = None) -> Tuple[Webhook, Optional[str]]:
        """Creates a webhook (if_match None; the answer carries its signing secret once) or
        updates it with the ETag it was read with (admin)."""
        a = self._call("putWebhook", name, body=req, if_match=if_match,
                       decode=Webhook.from_json)
        return a.body, a.etag

    def get_webhook(self, name: str) -> Tuple[Webhook, Optional[str]]:
        a = self._call("getWebhook", name, decode=Webhook.from_json)
        return a.body, a.etag

    def delete_webhook(self, name: str) -> None:
        self._call("deleteWebhook", name, decode=_nothing)

    def list_webhooks(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> WebhookItemPage:
        return self._call("listWebhooks", query={"limit": limit, "cursor": cursor},
                          decode=WebhookItemPage.from_json).body

    def webhooks(self) -> Iterator[WebhookItem]:
        return _pages(lambda c: self.list_webhooks(cursor=c))

    def rotate_webhook_secret(self, name: str) -> Webhook:
        """Makes a new signing secret (the answer carries it once); not retried."""
        return self._call("rotateWebhookSecret", name,
                          decode=Webhook.from_json).body

    def list_webhook_deliveries(self, *, status: Optional[str] = None, event: Optional[str] = None,
                                webhook: Optional[str] = None, limit: Optional[int] = None,
                                cursor: Optional[str] = None) -> WebhookDeliveryPage:
        return self._call("listWebhookDeliveries", query={
            "status": status, "event": event, "webhook": webhook, "limit": limit, "cursor": cursor},
            decode=WebhookDeliveryPage.from_json).body

    def webhook_deliveries(self, *, status: Optional[str] = None, event: Optional[str] = None,
                           webhook: Optional[str] = None) -> Iterator[WebhookDelivery]:
        return _pages(lambda c: self.list_webhook_deliveries(status=status, event=event, webhook=webhook,
                                                             cursor=c))

    def redeliver_webhook(self, delivery_id: str) -> WebhookDelivery:
        """Sends a delivery again as a new delivery; not retried."""
        return self._call("redeliverWebhook", delivery_id,
                          decode=WebhookDelivery.from_json).body

    # ---- service ----

    def healthz(self) -> Health:
        """Checks the process answers (GET /healthz; no key needed)."""
        return self._call("getHealth", decode=Health.from_json).body

    def readyz(self) -> Health:
        """Checks the service can serve (GET /readyz): DatabaseUnavailable otherwise. Not
        retried, so it reports the moment."""
        return self._call("getReadiness", decode=Health.from_json).body

    def openapi(self) -> Dict[str, Any]:
        """The service's OpenAPI 3.1 document."""
        return self._call("getOpenAPI", decode=_object).body

    def metrics(self) -> str:
        """The Prometheus metrics text (GET /metrics)."""
        return self._call("getMetrics", decode=str, text=True).body


class WaitTimeout(TimeoutError):
    """A wait whose timeout passed first; ``last`` is the last state read."""

    def __init__(self, message: str, last: Any) -> None:
        super().__init__("ledger: " + message)
        self.last = last


def _wait_seconds(left: Optional[float]) -> int:
    if left is None:
        return MAX_WAIT_SECONDS
    return max(0, min(MAX_WAIT_SECONDS, int(math.ceil(left))))


def _newest_continuation(c: Client, run: Run) -> str:
    """The newest run of the chain that continues run (run itself when none does)."""
    cur: Union[Run, RunItem] = run
    for _ in range(64):  # a chain longer than this is followed by the next polls
        nxt = [r for r in c.runs(subject=cur.subject, kind=cur.kind) if r.continued_from_run_id == cur.run_id]
        if not nxt:
            break
        cur = nxt[0]
    return cur.run_id


class _Headers(Dict[str, str]):
    """Answer headers, looked up without regard to case."""

    def __init__(self, items: List[Tuple[str, str]]) -> None:
        super().__init__()
        for k, v in items:
            self[k.lower()] = v

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())


def _nothing(_: Any) -> None:
    return None


def _object(v: Any) -> Dict[str, Any]:
    if not isinstance(v, dict):
        raise DecodeError("want an object")
    return v


def _seg(s: str) -> str:
    return urllib.parse.quote(str(s), safe="")


_PARAM = re.compile(r"\{(\w+)\}")


def _route(op: str, params: Sequence[str]) -> Tuple[str, str]:
    """The method and path of a call of op: its row of the operation table, the path
    template's parameters filled in order with params, each escaped as one segment."""
    e = OPERATIONS[op]
    names = _PARAM.findall(e["path"])
    if len(names) != len(params):
        raise TypeError("ledger: %s takes %d path parameters (%s), not %d"
                        % (op, len(names), ", ".join(names), len(params)))
    for name, v in zip(names, params):
        if v is None or str(v) == "":  # as the other SDKs do: an empty segment names another route
            raise TypeError("ledger: %s: %s is required" % (op, name))
    it = iter(params)
    return e["method"], _PARAM.sub(lambda m: _seg(next(it)), e["path"])


def _query_text(v: Any) -> str:
    e = encode(v)
    if isinstance(e, bool):
        return "true" if e else "false"
    return str(e)


def _pages(read: Callable[[Optional[str]], Any]) -> Iterator[Any]:  # a page of any item type
    """The items of every page, following nextCursor from the first page."""
    cursor: Optional[str] = None
    while True:
        page = read(cursor)
        yield from page.items
        if not page.next_cursor or not page.items:
            return
        cursor = page.next_cursor
