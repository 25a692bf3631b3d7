"""error_of: what a handler raised, as the Worker records it with the attempt's end."""

from __future__ import annotations

import json
import re
import traceback
from typing import Any, Dict, List, Optional

from .wire import AttemptError

# Bounds of what error_of sends, as the Go SDK's ErrorOf: the service refuses a longer
# message (2,000 UTF-16 code units: api.MaxErrorMessage, the document's AttemptError message
# maxLength, which tests/test_worker.py holds this to) or larger details (16 KiB compacted); tracebacks and
# chains are cut well inside that.
_MAX_MESSAGE = 2000
_MAX_STACK_LINES = 64
_MAX_STACK_CHARS = 8 << 10
_MAX_CHAIN = 8
_MAX_CHAIN_ITEM = 512
_MAX_DETAILS_CHARS = 12 << 10

_CODE = re.compile(r"[a-z0-9_.-]{1,64}\Z")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def error_of(exc: BaseException) -> AttemptError:
    """Describes a handler's exception for the ledger: the code is its own ``error_code``
    when that is a valid code (1 to 64 of a-z, 0-9, '_', '.', '-'), else its type's name
    lowered ("ValueError" is "valueerror"; a type outside the builtins and the script being
    run keeps its module: "mypkg.upstreambusy"); the message is its own, cut to the service's
    bound; the details hold the type, the traceback and the chain of causes. The Worker's own
    markers (Permanent and RetryAfter raised ``from`` an error, or while one is handled) are
    taken off first: they say how to settle, not what went wrong; what they say themselves
    leads the chain."""
    from .worker import Permanent, RetryAfter  # the markers live with the Worker

    e = exc
    said: List[str] = []  # what the markers taken off said, outermost first
    for _ in range(4):
        cause = _cause_of(e) if isinstance(e, (Permanent, RetryAfter)) else None
        if cause is None:
            break
        if str(e) and not (isinstance(e, RetryAfter) and str(e) == RetryAfter(e.seconds).args[0]):
            said.append(_clean(str(e), _MAX_CHAIN_ITEM))
        e = cause
    own = getattr(e, "error_code", None)
    code = own if isinstance(own, str) and _CODE.match(own) else _code_of_type(type(e))
    details: Dict[str, Any] = {"type": _type_name(type(e))}
    tb = _stack_lines(e)
    if tb:
        details["stack"] = tb
    chain: List[str] = said[:_MAX_CHAIN]
    cur: Optional[BaseException] = e
    while cur is not None and len(chain) < _MAX_CHAIN:
        chain.append(_clean(str(cur) or type(cur).__name__, _MAX_CHAIN_ITEM))
        cur = _cause_of(cur)
    if len(chain) > 1:
        details["chain"] = chain
    return AttemptError(code=code, message=_clean(str(e) or type(e).__name__, _MAX_MESSAGE),
                        details=_bounded(details))


def _cause_of(e: BaseException) -> Optional[BaseException]:
    """The exception e was raised from, or the one being handled when it was raised."""
    return e.__cause__ or (None if e.__suppress_context__ else e.__context__)


# Modules a type's name is given without: the builtins, and the script being run (whose
# module name, __main__, says nothing of the type).
_BARE_MODULES = ("builtins", "__main__")


def _type_name(t: type) -> str:
    return t.__qualname__ if t.__module__ in _BARE_MODULES else t.__module__ + "." + t.__qualname__


def _code_of_type(t: type) -> str:
    name = t.__name__ if t.__module__ in _BARE_MODULES else t.__module__ + "." + t.__name__
    code = re.sub(r"[^a-z0-9_.-]", "_", name.lower()).strip("_.")[:64]
    return code or "error"


def _stack_lines(e: BaseException) -> List[str]:
    out: List[str] = []
    total = 0
    for block in traceback.format_tb(e.__traceback__)[-_MAX_STACK_LINES:]:
        for line in block.rstrip("\n").split("\n"):
            if len(out) >= _MAX_STACK_LINES or total + len(line) > _MAX_STACK_CHARS:
                return out
            total += len(line)
            out.append(_clean(line, _MAX_CHAIN_ITEM))
    return out


def _clean(s: str, limit: int) -> str:
    """Text without control characters but tab and line breaks, at most limit UTF-16 code
    units (cut on a character, ending in an ellipsis)."""
    t = _CONTROL.sub(" ", s).encode("utf-8", "replace").decode("utf-8")
    units = sum(2 if ord(c) > 0xFFFF else 1 for c in t)
    if units <= limit:
        return t
    out, n = [], 0
    for c in t:
        w = 2 if ord(c) > 0xFFFF else 1
        if n + w > limit - 1:
            break
        out.append(c)
        n += w
    return "".join(out) + "\u2026"


def _bounded(details: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    for drop in ("", "stack", "chain"):
        if drop:
            details.pop(drop, None)
        if len(json.dumps(details, ensure_ascii=False, separators=(",", ":"))) <= _MAX_DETAILS_CHARS:
            return details
    return None
