"""The generated wire types against the server's OpenAPI document: the committed output is
what the generator makes of today's document, every enum has every value, every schema's
members are fields with the document's names and required lists, and every problem code has
its subclass of LedgerProblem."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import sys
import typing
import unittest

import ledger_client as lc
from ledger_client import _codec, problem_codes, wire

from . import support as s

sys.path.insert(0, str(s.SDK / "tools"))
import gen_wire  # noqa: E402


class Freshness(unittest.TestCase):
    def test_committed_output_is_what_the_generator_makes(self) -> None:
        for path, text in gen_wire.generate(s.openapi_document()).items():
            with self.subTest(file=path.name):
                self.assertEqual(path.read_text(encoding="utf-8"), text,
                                 "%s is stale: run scripts/regenerate at the repository root"
                                 % path.name)


class Schemas(unittest.TestCase):
    def setUp(self) -> None:
        self.schemas = s.openapi_document()["components"]["schemas"]

    def test_enums_are_str_enums_with_every_value(self) -> None:
        n = 0
        for name, sch in self.schemas.items():
            if "enum" not in sch:
                continue
            n += 1
            cls = getattr(wire, name)
            self.assertTrue(issubclass(cls, str) and issubclass(cls, enum.Enum), name)
            self.assertEqual([m.value for m in cls], sch["enum"], name)
            for m in cls:
                self.assertEqual(m, m.value)  # a str: compares and serialises as its value
                self.assertEqual(str(m), m.value)
        self.assertGreater(n, 10)

    def test_dataclasses_match_the_schemas_field_by_field(self) -> None:
        for name, sch in self.schemas.items():
            if "enum" in sch:
                continue
            with self.subTest(schema=name):
                cls = getattr(wire, name)
                self.assertTrue(dataclasses.is_dataclass(cls))
                fields = {f.metadata["json"]: f for f in dataclasses.fields(cls)}
                self.assertEqual(set(fields), set(sch.get("properties", {})))
                required = {w for w, f in fields.items() if f.default is dataclasses.MISSING}
                self.assertEqual(required, set(sch.get("required", [])))
                hints = typing.get_type_hints(cls)
                for w, f in fields.items():
                    p = sch["properties"][w]
                    t = hints[f.name]
                    if p.get("format") == "date-time":
                        self.assertIn(dt.datetime, _flat(t), (name, w))
                    ref = p.get("$ref") or p.get("items", {}).get("$ref")
                    if ref:
                        self.assertIn(getattr(wire, ref.split("/")[-1]), _flat(t), (name, w))

    def test_problem_code_subclasses(self) -> None:
        codes = self.schemas["ProblemCode"]["enum"]
        self.assertEqual(set(problem_codes.BY_CODE), set(codes))
        for code, cls in problem_codes.BY_CODE.items():
            self.assertTrue(issubclass(cls, lc.LedgerProblem))
            self.assertEqual(cls.code_value, code)
            self.assertIs(getattr(lc, cls.__name__), cls)

    def test_round_trip_and_unknown_values(self) -> None:
        raw = {"leasedUntil": "2026-12-01T08:26:03.9Z", "cancelRequested": True, "budgetHeld": False,
               "newMember": 1}
        hb = lc.Heartbeat.from_json(raw)
        self.assertEqual(hb.leased_until, dt.datetime(2026, 12, 1, 8, 26, 3, 900000, tzinfo=dt.timezone.utc))
        self.assertEqual(hb.to_json(), {"leasedUntil": "2026-12-01T08:26:03.900Z", "cancelRequested": True,
                                        "budgetHeld": False})
        with self.assertRaises(lc.DecodeError):
            lc.Heartbeat.from_json({"cancelRequested": True})
        # A value a newer server added stays a plain str instead of failing the answer.
        self.assertEqual(_codec.decode(lc.Phase, "dreaming"), "dreaming")
        self.assertEqual(lc.parse_time("2026-12-01T09:26:03+01:00"),
                         dt.datetime(2026, 12, 1, 8, 26, 3, tzinfo=dt.timezone.utc))
        with self.assertRaises(ValueError):
            lc.format_time(dt.datetime(2026, 1, 1))  # naive


def _flat(t: typing.Any) -> typing.List[typing.Any]:
    out = [t]
    for a in typing.get_args(t):
        out += _flat(a)
    return out


if __name__ == "__main__":
    unittest.main()
