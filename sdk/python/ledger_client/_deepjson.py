"""JSON decoding that no nesting depth breaks.

``json.loads`` recurses once per level and raises RecursionError near the interpreter's
recursion limit (about 1,000 levels). The service accepts values nested deeper than that
from older servers and from other clients, so an answer holding one (a claimed run's input)
must still decode: ``loads`` tries ``json.loads`` and, only when it runs out of recursion,
parses again with an explicit stack. The result is the same Python value either way."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Dict, List, Tuple, cast

_WS = " \t\n\r"
# json.scanner's NUMBER_RE: the grammar of a JSON number.
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?", re.VERBOSE | re.MULTILINE | re.DOTALL)
# The C scanner of a string's body (json.decoder.scanstring): no recursion in it.
_scanstring = cast(Callable[[str, int], Tuple[str, int]], getattr(json.decoder, "scanstring"))


def loads(text: str) -> Any:
    """json.loads, or the same value by loads_iterative when the nesting is too deep."""
    try:
        return json.loads(text)
    except RecursionError:
        return loads_iterative(text)


def _skip(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _fail(msg: str, s: str, i: int) -> json.JSONDecodeError:
    return json.JSONDecodeError(msg, s, i)


def loads_iterative(s: str) -> Any:
    """Parses a JSON text with a stack of open containers instead of recursion."""
    # Each open container: [value, pending key or None]; a list's key slot is unused.
    stack: List[Tuple[Any, List[Any]]] = []
    i = _skip(s, 0)
    n = len(s)
    result: Any = None
    have_result = False
    while True:
        # A value starts at i.
        if i >= n:
            raise _fail("Expecting value", s, i)
        c = s[i]
        value: Any
        opened = False
        if c == "{":
            i = _skip(s, i + 1)
            if i < n and s[i] == "}":
                value, i = {}, i + 1
            else:
                d: Dict[str, Any] = {}
                if i >= n or s[i] != '"':
                    raise _fail("Expecting property name enclosed in double quotes", s, i)
                key, i = _scanstring(s, i + 1)
                i = _skip(s, i)
                if i >= n or s[i] != ":":
                    raise _fail("Expecting ':' delimiter", s, i)
                i = _skip(s, i + 1)
                stack.append((d, [key]))
                opened = True
        elif c == "[":
            i = _skip(s, i + 1)
            if i < n and s[i] == "]":
                value, i = [], i + 1
            else:
                stack.append(([], [None]))
                opened = True
        elif c == '"':
            value, i = _scanstring(s, i + 1)
        elif s.startswith("null", i):
            value, i = None, i + 4
        elif s.startswith("true", i):
            value, i = True, i + 4
        elif s.startswith("false", i):
            value, i = False, i + 5
        else:
            m = _NUMBER.match(s, i)
            if m is None:
                if s.startswith("NaN", i):
                    value, i = float("nan"), i + 3
                elif s.startswith("Infinity", i):
                    value, i = float("inf"), i + 8
                elif s.startswith("-Infinity", i):
                    value, i = float("-inf"), i + 9
                else:
                    raise _fail("Expecting value", s, i)
            else:
                integer, frac, exp = m.groups()
                value = float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)
                i = m.end()
        if opened:
            continue
        # A value is complete: put it in its container, and close every container it completes.
        while True:
            if not stack:
                result, have_result = value, True
                break
            container, slot = stack[-1]
            if isinstance(container, dict):
                container[slot[0]] = value
            else:
                container.append(value)
            i = _skip(s, i)
            if i < n and s[i] == ",":
                i = _skip(s, i + 1)
                if isinstance(container, dict):
                    if i >= n or s[i] != '"':
                        raise _fail("Expecting property name enclosed in double quotes", s, i)
                    slot[0], i = _scanstring(s, i + 1)
                    i = _skip(s, i)
                    if i >= n or s[i] != ":":
                        raise _fail("Expecting ':' delimiter", s, i)
                    i = _skip(s, i + 1)
                break  # the next value of this container
            closer = "}" if isinstance(container, dict) else "]"
            if i < n and s[i] == closer:
                stack.pop()
                value, i = container, i + 1
                continue
            raise _fail("Expecting ',' delimiter", s, i)
        if have_result:
            i = _skip(s, i)
            if i != n:
                raise _fail("Extra data", s, i)
            return result
