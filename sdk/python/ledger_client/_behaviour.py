"""The Worker's behaviour table: api/worker.json, the one table of the three SDKs' Workers
(tests/test_behaviour.py checks that this is that file, value for value, and that the Worker
holds to it). Times are milliseconds, as in the file."""

from __future__ import annotations

from typing import Any, Dict

BEHAVIOUR: Dict[str, Any] = {
    "heartbeat": {"leaseDivisor": 3, "minMs": 10},
    "claim": {"waitSeconds": 5, "longPolls": 2, "idleWaitMs": 1000},
    "claimBackoff": {
        "failedBaseMs": 500,
        "failedMaxMs": 30000,
        "refusedBaseMs": 1000,
        "refusedMaxMs": 60000,
        "refusalLogEveryMs": 60000,
        "heldJitterDivisor": 8,
        "heldJitterMaxMs": 60000,
    },
    "shutdown": {"graceMs": 30000, "settleTimeoutMinMs": 5000},
    "refusalClasses": {
        "fatal": ["unauthorized", "forbidden", "invalid_request"],
        "refused": {"statusFrom": 400, "statusTo": 499, "except": [408, 429]},
        "leaseLost": ["stale_lease", "lease_expired", "attempt_ended"],
        "heartbeatLost": ["stale_lease", "lease_expired", "attempt_ended", "not_found"],
    },
}

HEARTBEAT_DIVISOR: int = BEHAVIOUR["heartbeat"]["leaseDivisor"]
HEARTBEAT_MIN: float = BEHAVIOUR["heartbeat"]["minMs"] / 1000
WAIT_SECONDS: int = BEHAVIOUR["claim"]["waitSeconds"]
LONG_POLLS: int = BEHAVIOUR["claim"]["longPolls"]
IDLE_WAIT: float = BEHAVIOUR["claim"]["idleWaitMs"] / 1000
FAILED_BASE: float = BEHAVIOUR["claimBackoff"]["failedBaseMs"] / 1000
FAILED_MAX: float = BEHAVIOUR["claimBackoff"]["failedMaxMs"] / 1000
REFUSED_BASE: float = BEHAVIOUR["claimBackoff"]["refusedBaseMs"] / 1000
REFUSED_MAX: float = BEHAVIOUR["claimBackoff"]["refusedMaxMs"] / 1000
REFUSAL_LOG_EVERY: float = BEHAVIOUR["claimBackoff"]["refusalLogEveryMs"] / 1000
HELD_JITTER_DIVISOR: int = BEHAVIOUR["claimBackoff"]["heldJitterDivisor"]
HELD_JITTER_MAX: float = BEHAVIOUR["claimBackoff"]["heldJitterMaxMs"] / 1000
SHUTDOWN_GRACE: float = BEHAVIOUR["shutdown"]["graceMs"] / 1000
SETTLE_TIMEOUT_MIN: float = BEHAVIOUR["shutdown"]["settleTimeoutMinMs"] / 1000
FATAL_CODES = tuple(BEHAVIOUR["refusalClasses"]["fatal"])
LEASE_LOST_CODES = tuple(BEHAVIOUR["refusalClasses"]["leaseLost"])
HEARTBEAT_LOST_CODES = tuple(BEHAVIOUR["refusalClasses"]["heartbeatLost"])


def refused_status(status: int) -> bool:
    """A claim refused for what it asks, which an operator may fix while the worker waits."""
    r = BEHAVIOUR["refusalClasses"]["refused"]
    return r["statusFrom"] <= status <= r["statusTo"] and status not in r["except"]
