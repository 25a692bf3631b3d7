"""Which call may be sent again after which failure: the Python side of api/retry.json, the
one retry table of the three SDKs. Its data (the policy, the failure classes, every
operation's rule) is read from _tables, which scripts/regenerate writes from api/retry.json
and api/operations.json; tests/test_retry.py reads api/retry.json itself and checks that this
module, and the Client's behaviour, agree with it for every operation and failure class."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from ._tables import OPERATIONS as OPERATIONS_TABLE
from ._tables import RETRY_TABLE

#: Repeat classes.
ONCE = "once"  # never sent again once it may have reached the server
IDEMPOTENT = "idempotent"  # an exact repeat answers as the first try did, or changes nothing more
CONDITIONAL = "conditional"  # an If-Match update; a listed refusal after an applied try is maybe-applied

#: Failure classes and when each is retried: always, unlessOnce or never (api/retry.json's).
FAILURES: Dict[str, str] = dict(RETRY_TABLE["failures"])
_POLICY: Dict[str, Any] = RETRY_TABLE["policy"]


@dataclass(frozen=True)
class OpRule:
    """An operation's repeat class and the rules that change it."""

    repeat: str
    #: A request body member (dotted path) that, present and not null, false or empty, gives
    #: the call this class instead.
    when_body: Mapping[str, str] = field(default_factory=dict)
    #: The class of the call when it sends If-Match (applied after when_body).
    when_if_match: Optional[str] = None
    #: For a conditional call: the problem codes a repeat of an applied try gets.
    ambiguous: Tuple[str, ...] = ()


def _rule(e: Mapping[str, Any]) -> OpRule:
    return OpRule(e["repeat"], dict(e.get("whenBody", {})), e.get("whenIfMatch"), tuple(e.get("ambiguous", ())))


#: Every operation (by operationId) and its rule, read from the generated operation table
#: (api/operations.json, whose rules are api/retry.json's). HEAD operations take their GET's.
OPERATIONS: Dict[str, OpRule] = {op: _rule(e) for op, e in OPERATIONS_TABLE.items()}


def _present(body: Any, path: str) -> bool:
    """Whether the dotted member path is in body, and not null, false or empty."""
    v = body
    for part in path.split("."):
        if not isinstance(v, dict) or part not in v:
            return False
        v = v[part]
    # Not `v not in (None, False, ...)`: 0 == False, and a 0 is present.
    return not (v is None or v is False or (isinstance(v, (str, list, dict)) and len(v) == 0))


def repeat_class(op: str, body: Any, if_match: Optional[str]) -> str:
    """The repeat class of one call of op with this JSON body and If-Match."""
    rule = OPERATIONS[op[:-4] if op.endswith("Head") else op]
    r = rule.repeat
    for path, cls in rule.when_body.items():
        if _present(body, path):
            r = cls
    if if_match and rule.when_if_match:
        r = rule.when_if_match
    return r


def retried(failure: str, repeat: str) -> bool:
    """Whether a call of this repeat class is sent again after this failure class."""
    when = FAILURES[failure]
    return when == "always" or (when == "unlessOnce" and repeat != ONCE)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and after how long a failed call is sent again. Waits grow exponentially
    from base with full jitter, capped at max; a Retry-After is honoured as the least wait,
    with up to retry_after_jitter more so that clients told the same moment do not all come
    back at it; a Retry-After longer than max_retry_after fails the call instead."""

    max_attempts: int = int(_POLICY["maxAttempts"])  #: sends at most (1: no retries)
    base: float = _POLICY["baseMs"] / 1000  #: seconds
    max: float = _POLICY["maxMs"] / 1000  #: seconds
    max_retry_after: float = _POLICY["maxRetryAfterMs"] / 1000  #: seconds
    retry_after_jitter: float = float(_POLICY["retryAfterJitter"])

    def backoff(self, n: int, retry_after: Optional[float]) -> float:
        """The wait before try n+1 (n >= 1 tries failed), given the server's Retry-After."""
        if retry_after is not None and retry_after > 0:
            return retry_after + random.uniform(0, retry_after * self.retry_after_jitter)
        return 0.001 + random.uniform(0, doubled(self.base, self.max, n))


def equal_jitter(base: float, cap: float, n: int) -> float:
    """A uniform wait in [d/2, d], d = doubled(base, cap, n)."""
    d = doubled(base, cap, n)
    return d / 2 + random.uniform(0, d / 2)


def doubled(base: float, cap: float, n: int) -> float:
    """min(cap, base * 2**(n-1)), without overflowing for a large n."""
    d = base
    for _ in range(1, n):
        if d >= cap:
            break
        d *= 2
    return min(d, cap)
