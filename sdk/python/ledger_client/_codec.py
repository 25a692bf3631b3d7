"""JSON to wire dataclasses and back, driven by the dataclasses' type hints.

Each generated field carries its wire name in ``metadata["json"]``. Decoding follows the
annotation: ``datetime`` from RFC 3339, ``str`` enums by value (a value this version does not
know stays a plain ``str``, so a newer server does not break an older client), dataclasses,
lists, optionals, unions of dataclasses (the variant whose members fit) and ``Any`` (kept as
decoded JSON). Unknown members are ignored for the same reason; a missing required member is
an error, since the document's ``required`` lists are exact.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import types
import typing
from typing import Any, Dict, List, Optional, Tuple, Type, TypeVar, Union

T = TypeVar("T")

#: Any JSON value, as ``json.loads`` returns it.
JSON = Any


class DecodeError(ValueError):
    """A JSON value that does not have the shape its wire type says."""


def format_time(t: _dt.datetime) -> str:
    """RFC 3339 UTC with exactly three fractional digits, as the service writes times."""
    if t.tzinfo is None:
        raise ValueError("ledger times must be timezone-aware (use datetime.timezone.utc)")
    u = t.astimezone(_dt.timezone.utc)
    return u.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (u.microsecond // 1000)


def parse_time(s: str) -> _dt.datetime:
    """Parses an RFC 3339 time (``Z`` or an offset; Python 3.10's fromisoformat needs help)."""
    if not isinstance(s, str):
        raise DecodeError("time: want a string, got %r" % (s,))
    v = s.strip()
    if v.endswith(("Z", "z")):
        v = v[:-1] + "+00:00"
    # fromisoformat before 3.11 takes 0, 3 or 6 fractional digits only.
    if "." in v:
        head, rest = v.split(".", 1)
        i = 0
        while i < len(rest) and rest[i].isdigit():
            i += 1
        frac = (rest[:i] + "000000")[:6]
        v = head + "." + frac + rest[i:]
    try:
        t = _dt.datetime.fromisoformat(v.replace("t", "T"))
    except ValueError as e:
        raise DecodeError("time %r: %s" % (s, e)) from None
    if t.tzinfo is None:
        raise DecodeError("time %r has no offset" % (s,))
    return t.astimezone(_dt.timezone.utc)


_FIELDS: Dict[type, Tuple[Tuple[str, str, Any, bool], ...]] = {}


def _fields(cls: type) -> Tuple[Tuple[str, str, Any, bool], ...]:
    """(attribute, wire name, type, required) of each field of a wire dataclass, worked out
    once per class (a benign race at worst computes it twice)."""
    got = _FIELDS.get(cls)
    if got is None:
        got = _FIELDS[cls] = _field_table(cls)
    return got


def _field_table(cls: type) -> Tuple[Tuple[str, str, Any, bool], ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append((f.name, f.metadata.get("json", f.name), hints[f.name], required))
    return tuple(out)


def _is_union(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin is Union:
        return True
    union_type = getattr(types, "UnionType", None)
    return union_type is not None and isinstance(tp, union_type)


def decode(tp: Any, value: Any) -> Any:
    """Decodes a JSON value as type tp."""
    if tp is Any:
        return value
    if _is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None) and a is not Null]
        if value is None:
            return None
        if len(args) == 1:
            return decode(args[0], value)
        return _decode_variant(args, value)
    origin = typing.get_origin(tp)
    if origin in (list, typing.List):
        if not isinstance(value, list):
            raise DecodeError("want an array, got %r" % (_short(value),))
        (item,) = typing.get_args(tp) or (Any,)
        return [decode(item, v) for v in value]
    if origin in (dict, typing.Dict):
        if not isinstance(value, dict):
            raise DecodeError("want an object, got %r" % (_short(value),))
        return dict(value)
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            return from_json(tp, value)
        if issubclass(tp, enum.Enum):
            if not isinstance(value, str):
                raise DecodeError("%s: want a string, got %r" % (tp.__name__, _short(value)))
            try:
                return tp(value)
            except ValueError:
                return value  # a value a newer server added
        if tp is _dt.datetime:
            return parse_time(value)
        if tp is bool:
            if not isinstance(value, bool):
                raise DecodeError("want a boolean, got %r" % (_short(value),))
            return value
        if tp is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise DecodeError("want an integer, got %r" % (_short(value),))
            return value
        if tp is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise DecodeError("want a number, got %r" % (_short(value),))
            return float(value)
        if tp is str:
            if not isinstance(value, str):
                raise DecodeError("want a string, got %r" % (_short(value),))
            return value
    raise DecodeError("cannot decode type %r" % (tp,))


def _decode_variant(args: List[Any], value: Any) -> Any:
    """A oneOf of objects: the first variant whose members include every key of value and
    whose required members value has."""
    if not isinstance(value, dict):
        raise DecodeError("want an object, got %r" % (_short(value),))
    keys = set(value)
    for a in args:
        if not (isinstance(a, type) and dataclasses.is_dataclass(a)):
            continue
        fs = _fields(a)
        names = {w for _, w, _, _ in fs}
        required = {w for _, w, _, r in fs if r}
        if keys <= names and required <= keys:
            return from_json(a, value)
    raise DecodeError("no variant of %s fits the members %s" % ([getattr(a, "__name__", a) for a in args], sorted(keys)))


def from_json(cls: Type[T], obj: Any) -> T:
    """Decodes a JSON object as the wire dataclass cls."""
    if not isinstance(obj, dict):
        raise DecodeError("%s: want an object, got %r" % (cls.__name__, _short(obj)))
    kwargs: Dict[str, Any] = {}
    for name, wire, tp, required in _fields(cls):
        if wire in obj:
            try:
                kwargs[name] = decode(tp, obj[wire])
            except DecodeError as e:
                raise DecodeError("%s.%s: %s" % (cls.__name__, wire, e)) from None
        elif required:
            raise DecodeError("%s: the required member %r is missing" % (cls.__name__, wire))
    return cls(**kwargs)


class Null:
    """The JSON null of a request member whose null and absence differ (absent keeps a value,
    null removes it: PutProjectRequest.daily_cost_budget_micros). None leaves a member out;
    NULL, the one instance, sends null."""

    _one: Optional["Null"] = None

    def __new__(cls) -> "Null":
        if cls._one is None:
            cls._one = super().__new__(cls)
        return cls._one

    def __repr__(self) -> str:
        return "NULL"

    def __bool__(self) -> bool:
        return False


NULL = Null()


def encode(value: Any) -> Any:
    """Encodes a value as JSON: dataclasses by their wire names, leaving out None members."""
    if value is NULL:
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, _dt.datetime):
        return format_time(value)
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def to_json(obj: Any) -> Dict[str, Any]:
    """Encodes a wire dataclass as a JSON object; members that are None are left out, so the
    service applies its defaults."""
    out: Dict[str, Any] = {}
    for name, wire, _, _ in _fields(type(obj)):
        v = getattr(obj, name)
        if v is NULL:
            out[wire] = None
        elif v is not None:
            out[wire] = encode(v)
    return out


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."
