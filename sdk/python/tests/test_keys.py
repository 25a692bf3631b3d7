"""The key is out of reach of repr, str, vars() and JSON serialisation, of the client and of
what holds it (a Lease, a Worker)."""

from __future__ import annotations

import json
import pickle
import unittest

import ledger_client as lc

from . import support as s

KEY = "ldg_rt_SECRETSECRETSECRET0123456789"


class Keys(unittest.TestCase):
    def test_the_key_is_printed_by_nothing(self) -> None:
        c = lc.Client("http://127.0.0.1:1", KEY)
        w = lc.Worker(c, lambda lease: None, release_id="r", adapter_version="1", model_profile_id="m")
        for what, v in (("client", c), ("worker", w)):
            shown = [repr(v), str(v), repr(vars(v)), str(vars(v)), json.dumps(vars(v), default=repr),
                     json.dumps(vars(v), default=str), "%r %s" % (v, v)]
            shown += [repr(x) + str(x) for x in vars(v).values()]
            for text in shown:
                self.assertNotIn("SECRETSECRET", text, "%s printed its key" % what)
        with self.assertRaises(TypeError):
            vars(vars(c)["_key"])
        with self.assertRaises(Exception):
            pickle.dumps(c)

    def test_the_key_still_authenticates(self) -> None:
        srv = s.server()
        c = lc.Client(srv.url, srv.runtime_key)
        self.assertNotIn(srv.runtime_key, repr(vars(c)))
        c.list_runs(limit=1)  # 401 would raise
        self.assertEqual(repr(c), "Client(%r)" % srv.url)
