"""Which call may be sent again after which failure: the Python side of api/retry.json, the
one retry table of the three SDKs (tests/test_retry.py reads that file and checks that this
module, and the Client's behaviour, agree with it for every operation and failure class)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

#: Repeat classes.
ONCE = "once"  # never sent again once it may have reached the server
IDEMPOTENT = "idempotent"  # an exact repeat answers as the first try did, or changes nothing more
CONDITIONAL = "conditional"  # an If-Match update; a listed refusal after an applied try is maybe-applied

#: Failure classes and when each is retried: always, unlessOnce or never.
FAILURES: Dict[str, str] = {
    "status429": "always",  # the limiters refuse before any handler runs: nothing was done
    "status502": "unlessOnce",
    "status503": "unlessOnce",
    "status504": "unlessOnce",
    "notSent": "always",  # no connection: nothing reached the server
    "noAnswer": "unlessOnce",
    "unreadableAnswer": "unlessOnce",
    "otherStatus": "never",
}


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


#: Every operation (by operationId) and its rule. HEAD operations take their GET's.
OPERATIONS: Dict[str, OpRule] = {
    "acknowledgeCancellation": OpRule(IDEMPOTENT),
    "acquireTaskLock": OpRule(IDEMPOTENT),
    "answerDecision": OpRule(CONDITIONAL, ambiguous=("precondition_failed", "decision_closed")),
    "appendCheckpoint": OpRule(IDEMPOTENT),
    "cancelRun": OpRule(IDEMPOTENT),
    "claimRun": OpRule(ONCE),
    "completeAttempt": OpRule(IDEMPOTENT),
    "continueRun": OpRule(IDEMPOTENT),
    "createDelegation": OpRule(ONCE, when_body={"child.idempotencyKey": IDEMPOTENT}),
    "enqueueRun": OpRule(ONCE, when_body={"idempotencyKey": IDEMPOTENT}),
    "finishCall": OpRule(IDEMPOTENT, when_if_match=CONDITIONAL, ambiguous=("precondition_failed",)),
    "getAttempt": OpRule(IDEMPOTENT),
    "getAttemptTimeline": OpRule(IDEMPOTENT),
    "getCall": OpRule(IDEMPOTENT),
    "getCheckpoint": OpRule(IDEMPOTENT),
    "getDecision": OpRule(IDEMPOTENT),
    "getDelegation": OpRule(IDEMPOTENT),
    "getHealth": OpRule(IDEMPOTENT),
    "getLastCheckpoint": OpRule(IDEMPOTENT),
    "getMetrics": OpRule(IDEMPOTENT),
    "getOpenAPI": OpRule(IDEMPOTENT),
    "getProject": OpRule(IDEMPOTENT),
    "getReadiness": OpRule(ONCE),  # it reports the moment
    "getRelease": OpRule(IDEMPOTENT),
    "getRun": OpRule(IDEMPOTENT),
    "heartbeatAttempt": OpRule(IDEMPOTENT),
    "listAttemptDecisions": OpRule(IDEMPOTENT),
    "listAttempts": OpRule(IDEMPOTENT),
    "listCalls": OpRule(IDEMPOTENT),
    "listCheckpoints": OpRule(IDEMPOTENT),
    "listTenantCalls": OpRule(IDEMPOTENT),
    "listDecisions": OpRule(IDEMPOTENT),
    "listDelegations": OpRule(IDEMPOTENT),
    "listProjects": OpRule(IDEMPOTENT),
    "listReleases": OpRule(IDEMPOTENT),
    "insightAttemptsEnded": OpRule(IDEMPOTENT),
    "insightAttemptsPerRun": OpRule(IDEMPOTENT),
    "insightCalls": OpRule(IDEMPOTENT),
    "insightClaimLatency": OpRule(IDEMPOTENT),
    "insightDecisions": OpRule(IDEMPOTENT),
    "insightLeasesLost": OpRule(IDEMPOTENT),
    "insightRunsEnded": OpRule(IDEMPOTENT),
    "listRuns": OpRule(IDEMPOTENT),
    "patchAttempt": OpRule(IDEMPOTENT, when_body={"correction": ONCE}),
    "putProject": OpRule(ONCE, when_if_match=CONDITIONAL, ambiguous=("precondition_failed",)),
    "putRelease": OpRule(IDEMPOTENT, when_if_match=CONDITIONAL, ambiguous=("precondition_failed",)),
    "recordCall": OpRule(IDEMPOTENT),
    "releaseAttempt": OpRule(IDEMPOTENT),
    "releaseTaskLock": OpRule(IDEMPOTENT),
    "requestDecision": OpRule(ONCE, when_body={"idempotencyKey": IDEMPOTENT}),
    "enqueueRunBatch": OpRule(ONCE),
    "forkRun": OpRule(ONCE, when_body={"idempotencyKey": IDEMPOTENT}),
    "parkAttempt": OpRule(IDEMPOTENT),
    "listRunDecisions": OpRule(IDEMPOTENT),
    "getAttemptUsage": OpRule(IDEMPOTENT),
    "getRunUsage": OpRule(IDEMPOTENT),
    "insightUsage": OpRule(IDEMPOTENT),
    "putSchedule": OpRule(ONCE, when_if_match=CONDITIONAL, ambiguous=("precondition_failed",)),
    "getSchedule": OpRule(IDEMPOTENT),
    "deleteSchedule": OpRule(CONDITIONAL, ambiguous=("not_found",)),
    "listSchedules": OpRule(IDEMPOTENT),
    "putWebhook": OpRule(ONCE, when_if_match=CONDITIONAL, ambiguous=("precondition_failed",)),
    "getWebhook": OpRule(IDEMPOTENT),
    "deleteWebhook": OpRule(ONCE),
    "listWebhooks": OpRule(IDEMPOTENT),
    "rotateWebhookSecret": OpRule(ONCE),
    "listWebhookDeliveries": OpRule(IDEMPOTENT),
    "redeliverWebhook": OpRule(ONCE),
    "bulkRuns": OpRule(ONCE, when_body={"idempotencyKey": IDEMPOTENT}),
    "getOperation": OpRule(IDEMPOTENT),
}


def _present(body: Any, path: str) -> bool:
    """Whether the dotted member path is in body, and not null, false or empty."""
    v = body
    for part in path.split("."):
        if not isinstance(v, dict) or part not in v:
            return False
        v = v[part]
    return v not in (None, False, "", [], {})


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

    max_attempts: int = 6  #: sends at most (1: no retries)
    base: float = 0.1  #: seconds
    max: float = 10.0  #: seconds
    max_retry_after: float = 60.0  #: seconds
    retry_after_jitter: float = 0.25

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
