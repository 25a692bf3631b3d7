"""ledger_client: the Python SDK of the ledger service (standard library only).

    from ledger_client import Client, Worker, Lease, Phase

Client calls every route with retries as api/retry.json says; Worker claims runs and runs a
handler for each on a thread, keeping its Lease renewed; LedgerProblem and its one subclass
per problem code are the service's error answers; wire types are dataclasses generated from
the OpenAPI document.
"""

from .wire import *  # noqa: F401,F403 (the wire types but wire.Lease: Lease is the holder's, below)
from ._codec import NULL, DecodeError, Null, format_time, parse_time
from ._problem import ClaimHeld, LedgerProblem, TransportError, parse_retry_after
from ._retry import RetryPolicy
from .client import DEFAULT_BASE_URL, FEED_START, Answer, Client, WaitTimeout
from .errors import error_of
from .jcs import canonicalize, manifest_hash, manifest_of
from .lease import (DEFAULT_PARK_AFTER, CancelRequested, Lease, LeaseEnded, LeaseLost, LeaseStopped, Parked,
                    WorkerShutdown, hex_sha256)
from .problem_codes import *  # noqa: F401,F403 (one subclass of LedgerProblem per problem code)
from .aio import AsyncHandler, AsyncLease, async_worker
from .worker import (Handler, Outcome, Permanent, Result, Retry, RetryAfter, Worker,
                     default_holder_id)
from .webhook import WebhookVerificationError, verify_webhook
from ._behaviour import BEHAVIOUR

from . import problem_codes as _problem_codes
from . import wire as _wire

__version__ = "0.1.0"

__all__ = [
    "Answer", "AsyncHandler", "AsyncLease", "async_worker", "CancelRequested", "ClaimHeld", "Client", "DEFAULT_BASE_URL", "DecodeError",
    "FEED_START", "NULL", "Null", "error_of", "Handler", "Lease", "LeaseEnded", "LeaseLost", "LeaseStopped", "LedgerProblem",
    "DEFAULT_PARK_AFTER", "Parked",
    "Outcome", "Permanent", "Result", "Retry", "RetryAfter", "RetryPolicy", "TransportError",
    "WaitTimeout", "Worker", "WorkerShutdown", "canonicalize", "default_holder_id", "format_time",
    "hex_sha256", "manifest_hash", "manifest_of", "parse_retry_after", "parse_time",
    "WebhookVerificationError", "verify_webhook", "BEHAVIOUR",
]
__all__ += _wire.__all__
__all__ += _problem_codes.__all__
