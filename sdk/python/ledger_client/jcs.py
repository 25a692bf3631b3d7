"""RFC 8785 JSON Canonicalization Scheme (JCS), and a release's manifest hash.

The canonical form of a JSON value: no white space; object members sorted by the UTF-16 code
units of their names; strings as ECMAScript's JSON.stringify writes them (only ``"``, ``\\``
and control characters escaped, everything else as UTF-8); numbers as IEEE 754 doubles written
as ECMAScript's Number.prototype.toString does (the shortest form that reads back the same,
``1e+21`` past 10**21, ``1e-7`` below 10**-6).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Dict, List, Sequence, Tuple

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def canonicalize(value: Any) -> bytes:
    """The RFC 8785 canonical form of a JSON value (dict, list, str, int, float, bool, None)
    as UTF-8 bytes. ValueError for what has no canonical form: NaN or infinite numbers,
    integers past a double's range, lone surrogates, non-string member names."""
    out: List[str] = []
    _write(value, out)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError("JCS: a string is not valid Unicode (a lone surrogate): %s" % e) from None


def _write(v: Any, out: List[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, (int, float)):
        out.append(number(v))
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            _write(x, out)
        out.append("]")
    elif isinstance(v, dict):
        for k in v:
            if not isinstance(k, str):
                raise ValueError("JCS: member name %r is not a string" % (k,))
        out.append("{")
        for i, k in enumerate(sorted(v, key=_utf16)):
            if i:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _write(v[k], out)
        out.append("}")
    else:
        raise ValueError("JCS: %s is not a JSON value" % type(v).__name__)


def _utf16(s: str) -> bytes:
    """Member names sort by their UTF-16 code units."""
    return s.encode("utf-16-be", "surrogatepass")


def _string(s: str) -> str:
    b = ['"']
    for ch in s:
        e = _ESCAPES.get(ch)
        if e is not None:
            b.append(e)
        elif ch < " ":
            b.append("\\u%04x" % ord(ch))
        else:
            b.append(ch)
    b.append('"')
    return "".join(b)


def number(x: float) -> str:
    """A number as ECMAScript's Number.prototype.toString writes the double it is."""
    if isinstance(x, int) and not isinstance(x, bool):
        try:
            f = float(x)
        except OverflowError:
            raise ValueError("JCS: %d is outside a double's range" % x) from None
    else:
        f = float(x)
    if math.isnan(f) or math.isinf(f):
        raise ValueError("JCS: %r has no JSON form" % f)
    if f == 0:
        return "0"  # and -0
    sign = "-" if f < 0 else ""
    digits, exp = _shortest(abs(f))
    # The value is 0.digits * 10**exp; ECMAScript calls exp n and len(digits) k.
    k, n = len(digits), exp
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        es = ("+" if e >= 0 else "-") + str(abs(e))
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + es
    return sign + s


def _shortest(f: float) -> Tuple[str, int]:
    """The shortest decimal digits that read back as f (repr's), and the exponent n such
    that f = 0.digits * 10**n."""
    r = repr(f)
    mant, _, e = r.partition("e")
    exp = int(e) if e else 0
    if "." in mant:
        whole, frac = mant.split(".")
    else:
        whole, frac = mant, ""
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    lead = len(whole + frac) - len((whole + frac).lstrip("0"))
    n = len(whole) + exp - lead
    digits = digits.rstrip("0") or "0"
    return digits, n


def manifest_hash(content_refs: Sequence[Any]) -> str:
    """A release's manifestHash: the lowercase hex SHA-256 of the RFC 8785 canonical form of
    its contentRefs array, as the service computes it."""
    return hashlib.sha256(canonicalize(list(content_refs))).hexdigest()


def manifest_of(*refs: str) -> Tuple[List[Any], str]:
    """The contentRefs of a release made of string references (URIs, digests) and its
    manifestHash."""
    content = list(refs)
    return content, manifest_hash(content)


def canonical_text(value: Any) -> str:
    """The canonical form as text (for logs and tests)."""
    return canonicalize(value).decode("utf-8")


def loads(text: str) -> Any:
    """Reads JSON refusing duplicate member names, which have no canonical form."""

    def pairs(items: List[Tuple[str, Any]]) -> Dict[str, Any]:
        d: Dict[str, Any] = {}
        for k, v in items:
            if k in d:
                raise ValueError("JCS: duplicate member name %r" % k)
            d[k] = v
        return d

    return json.loads(text, object_pairs_hook=pairs)
