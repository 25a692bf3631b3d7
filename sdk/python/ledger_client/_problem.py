"""The errors a Client raises: LedgerProblem (the service answered an error) and its one
subclass per problem code (problem_codes.py, generated), TransportError (no usable answer) and
ClaimHeld (a claim held back with Retry-After)."""

from __future__ import annotations

import email.utils
import json
import time
from datetime import datetime, timezone
from typing import Any, ClassVar, List, Mapping, Optional, Type

from ._deepjson import loads as _json_loads
from ._codec import DecodeError, decode, parse_time
from .wire import FieldError, ProblemCode

#: The largest error body read: a problem document is small, a proxy's page need not be
#: read whole.
MAX_ERROR_BODY = 64 << 10


class LedgerProblem(Exception):
    """An error answer of the service: its RFC 9457 problem document, the HTTP status, the
    request id and, on 429, 503 and a claim's budget hold, the Retry-After it asked for.

    ``except ledger_client.StaleLease`` (and every other subclass named after a problem code)
    catches a problem of that code; a code this version does not know is a plain
    LedgerProblem with that ``code``.
    """

    #: The code of the subclass (None on LedgerProblem itself).
    code_value: ClassVar[Optional[ProblemCode]] = None

    def __init__(self, *, status: int, code: str, title: str = "", detail: str = "",
                 type: str = "", errors: Optional[List[FieldError]] = None,
                 held_until: Optional[datetime] = None, instance: str = "",
                 request_id: Optional[str] = None, retry_after: Optional[float] = None,
                 method: str = "", path: str = "") -> None:
        self.status = status
        #: The stable problem code (a ProblemCode; a plain str for a code a newer server added).
        self.code: str = code
        self.title = title
        self.detail = detail
        self.type = type
        #: The invalid fields of a 400 invalid_request.
        self.errors: List[FieldError] = list(errors or [])
        #: Until when another holder has a task lock (409 lock_held).
        self.held_until = held_until
        self.instance = instance
        #: The X-Request-Id of the answer: quote it when asking the operator.
        self.request_id = request_id
        #: The Retry-After the server asked for, in seconds (None when absent).
        self.retry_after = retry_after
        self.method = method
        self.path = path
        #: True when this refusal of a retried If-Match update (412, or a decision answer's
        #: decision_closed) came after an earlier try that may have reached the server: that
        #: try may have applied. Read the resource again to know.
        self.maybe_applied = False
        super().__init__(self._message())

    def _message(self) -> str:
        s = "ledger: %s %s: %d" % (self.method, self.path, self.status)
        if self.code:
            s += " " + str(self.code)
        if self.detail:
            s += ": " + self.detail
        if self.errors:
            s += " (" + "; ".join("%s %s" % (f.field, f.reason) for f in self.errors) + ")"
        return s

    def __str__(self) -> str:
        s = self._message()
        if self.maybe_applied:
            s += " (an earlier try of this call may have applied)"
        return s


class TransportError(Exception):
    """A call that got no usable answer.

    ``kind`` is ``not_sent`` (no connection: nothing reached the server), ``no_answer`` (the
    request may have been sent, but no answer came) or ``unreadable_answer`` (a 2xx answer
    whose body could not be read or decoded; ``status`` is its status).
    """

    def __init__(self, kind: str, method: str, path: str, cause: BaseException,
                 status: int = 0) -> None:
        self.kind = kind
        self.method = method
        self.path = path
        self.status = status
        self.cause = cause
        where = "%s %s" % (method, path)
        if status:
            where += ": %d" % status
        super().__init__("ledger: %s: %s: %s" % (where, kind.replace("_", " "), cause))


class ClaimHeld(Exception):
    """A claim the service held back (204 with Retry-After): the tenant's budget of leased
    runs is spent, or too many of its claims are waiting. Claim again after retry_after
    seconds."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__("ledger: claim held: retry after %gs" % retry_after)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """A Retry-After header in seconds: delay-seconds or an HTTP date."""
    if value is None:
        return None
    v = value.strip()
    if not v:
        return None
    if v.isdigit():
        return float(int(v))
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - time.time())


def problem_of(method: str, path: str, status: int, headers: Mapping[str, str],
               body: bytes, by_code: Mapping[str, Type[LedgerProblem]]) -> LedgerProblem:
    """Reads an error answer: a problem document when it is one, else a problem made of the
    status (a proxy's page, say)."""
    doc: Any = None
    ctype = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if ctype in ("application/problem+json", "application/json"):
        try:
            doc = _json_loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            doc = None
    if not isinstance(doc, dict):
        doc = {}
    code = doc.get("code") if isinstance(doc.get("code"), str) else ""
    errors: List[FieldError] = []
    held_until = None
    try:
        errors = decode(List[FieldError], doc.get("errors") or [])
    except DecodeError:
        errors = []
    if isinstance(doc.get("heldUntil"), str):
        try:
            held_until = parse_time(doc["heldUntil"])
        except DecodeError:
            held_until = None
    detail = doc.get("detail") if isinstance(doc.get("detail"), str) else ""
    if not code and not detail:
        detail = body[:200].decode("utf-8", "replace").strip()
    cls = by_code.get(code, LedgerProblem)
    try:
        code_value: str = ProblemCode(code)
    except ValueError:
        code_value = code
    return cls(status=status, code=code_value,
               title=doc.get("title") if isinstance(doc.get("title"), str) else "",
               detail=detail, type=doc.get("type") if isinstance(doc.get("type"), str) else "",
               errors=errors, held_until=held_until,
               instance=doc.get("instance") if isinstance(doc.get("instance"), str) else "",
               request_id=headers.get("X-Request-Id"),
               retry_after=parse_retry_after(headers.get("Retry-After")),
               method=method, path=path)
