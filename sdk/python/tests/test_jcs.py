"""manifest_hash and its RFC 8785 canonical JSON, against the server's answers: a release
registered with the SDK's hash of numbers and non-ASCII content is accepted (the server
computes the same hash), and a hash that differs is refused with manifest_mismatch."""

from __future__ import annotations

import hashlib
import unittest
from typing import Any, List

import ledger_client as lc
from ledger_client import jcs

from . import support as s

#: Content whose canonical form exercises every rule: numbers in each of ECMAScript's
#: notations, -0, integers past 2**53, escapes, non-ASCII in and out of the BMP, and member
#: names ordered by UTF-16 code units (U+20AC, then U+1F600, then U+FB33).
CASES: List[List[Any]] = [
    [1, 1.0, -0.0, 0.1, 1e21, 1e20, 1.5e-7, 0.000001, 123456789012345680000.0, 5e-324, 1.7976931348623157e308,
     0.30000000000000004, 9007199254740993, -1e-7, 333333333.3333333],
    ["naïve café", "日本語", "😀 emoji", "\u2028\u2029", "tab\there", "quote\"back\\slash", "\u0001\u001f", "\u007f"],
    [{"b": 2, "a": 1, "€": 3, "😀": 4, "\ufb33": 5, "": 0}, {"nested": {"z": [True, False, None], "y": {}}}],
    ["oci://registry/agent@sha256:0123", {"uri": "s3://bucket/ключ", "size": 1024, "weights": [0.5, 2e-9]}],
]


class Canonical(unittest.TestCase):
    def test_rfc8785_vectors(self) -> None:
        # From RFC 8785 section 3.2.2 and appendix B.
        self.assertEqual(jcs.canonical_text({"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
                                             "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"/",
                                             "literals": [None, True, False]}),
                         '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
                         '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}')
        for bits, want in [(0x0000000000000000, "0"), (0x8000000000000000, "0"), (0x0000000000000001, "5e-324"),
                           (0x7fefffffffffffff, "1.7976931348623157e+308"), (0x4340000000000000, "9007199254740992"),
                           (0x444b1ae4d6e2ef50, "1e+21"), (0x444b1ae4d6e2ef4f, "999999999999999900000"),
                           (0x3eb0c6f7a0b5ed8d, "0.000001"), (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
                           (0x41b3de4355555555, "333333333.3333333"), (0xc43211ede4974a35, "-333333333333333300000")]:
            f = _double(bits)
            self.assertEqual(jcs.number(f), want, hex(bits))
        for bad in (float("nan"), float("inf"), 10 ** 400):
            with self.assertRaises(ValueError):
                jcs.canonicalize([bad])
        with self.assertRaises(ValueError):
            jcs.loads('{"a":1,"a":2}')

    def test_manifest_of(self) -> None:
        refs, h = lc.manifest_of("a", "b")
        self.assertEqual(refs, ["a", "b"])
        self.assertEqual(h, hashlib.sha256(b'["a","b"]').hexdigest())


class AgainstTheServer(unittest.TestCase):
    def test_the_server_computes_the_same_hash(self) -> None:
        rt = s.server().client()
        for i, refs in enumerate(CASES):
            with self.subTest(case=i):
                h = lc.manifest_hash(refs)
                rid = s.unique("jcs")
                rel, _ = rt.put_release(rid, "v1", lc.PutReleaseRequest(content_refs=refs, manifest_hash=h,
                                                                         state=lc.ReleaseState.VERIFIED))
                self.assertEqual(rel.manifest_hash, h)
                # A hash of anything else is refused, so the acceptance above means agreement.
                wrong = lc.manifest_hash(refs + [0])
                with self.assertRaises(lc.ManifestMismatch) as mm:
                    rt.put_release(s.unique("jcs"), "v1", lc.PutReleaseRequest(
                        content_refs=refs, manifest_hash=wrong, state=lc.ReleaseState.VERIFIED))
                self.assertEqual(mm.exception.status, 422)


def _double(bits: int) -> float:
    import struct
    return float(struct.unpack(">d", bits.to_bytes(8, "big"))[0])


if __name__ == "__main__":
    unittest.main()
