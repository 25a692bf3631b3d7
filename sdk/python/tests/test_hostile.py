"""The client against servers that misbehave (issue 30 item 6): an endless answer is cut at
max_response_bytes, an answer that trickles ends at the try's deadline, a redirect is a
refusal and never followed, and an answer nested 10,000 deep decodes."""

from __future__ import annotations

import http.client
import http.server
import json
import threading
import time
import unittest
from typing import Any, Callable, List

import ledger_client as lc

from . import support as s
from ledger_client._codec import to_json



class FakeServer:
    """A server on a free port whose every request handle(handler) answers."""

    def __init__(self, handle: Callable[[http.server.BaseHTTPRequestHandler], None]) -> None:
        self.hits: List[str] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                fake.hits.append("%s %s" % (self.command, self.path))
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                try:
                    handle(self)
                except OSError:
                    pass  # the client went away, as it should
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = _any

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _serve(t: unittest.TestCase, handle: Callable[[Any], None]) -> FakeServer:
    f = FakeServer(handle)
    t.addCleanup(f.close)
    return f


class Hostile(unittest.TestCase):
    def test_an_endless_answer_is_cut(self) -> None:
        sent = [0]

        def endless(h: Any) -> None:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            chunk = b"4000\r\n" + b" " * 0x4000 + b"\r\n"
            while True:
                h.wfile.write(chunk)
                sent[0] += 0x4000

        f = _serve(self, endless)
        c = lc.Client(f.url, "k", retry=lc.RetryPolicy(max_attempts=1), max_response_bytes=256 << 10)
        with self.assertRaises(lc.TransportError) as cm:
            c.get_run("r1")
        self.assertEqual(cm.exception.kind, "unreadable_answer")
        self.assertEqual(cm.exception.status, 200)
        self.assertIn("exceeds 262144 bytes", str(cm.exception))

    def test_a_trickle_ends_at_the_deadline(self) -> None:
        def trickle(h: Any) -> None:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "100000")
            h.end_headers()
            for _ in range(200):
                h.wfile.write(b" ")
                h.wfile.flush()
                time.sleep(0.05)

        f = _serve(self, trickle)
        # Each byte comes well within the per-read timeout: only the try's deadline ends it.
        c = lc.Client(f.url, "k", retry=lc.RetryPolicy(max_attempts=1), timeout=5, deadline=0.5)
        t0 = time.monotonic()
        with self.assertRaises(lc.TransportError) as cm:
            c.get_run("r1")
        self.assertLess(time.monotonic() - t0, 5)
        self.assertIn("deadline", str(cm.exception))

    def test_redirects_are_refused_not_followed(self) -> None:
        def elsewhere(h: Any) -> None:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "12")
            h.end_headers()
            h.wfile.write(b'{"items":[]}')

        other = _serve(self, elsewhere)
        for status in (301, 302, 303, 307, 308):
            def redirect(h: Any, status: int = status) -> None:
                h.send_response(status)
                h.send_header("Location", other.url + "/v1/runs")
                h.send_header("Content-Length", "0")
                h.end_headers()

            f = _serve(self, redirect)
            c = lc.Client(f.url, "k")
            with self.assertRaises(lc.LedgerProblem) as cm:
                c.enqueue_run(s.spec("k"))
            self.assertEqual(cm.exception.status, status)
        self.assertEqual(other.hits, [])

    def test_a_claim_nested_ten_thousand_deep_decodes(self) -> None:
        srv = s.server()
        rt = srv.client()
        kind = s.unique("deep")
        rt.enqueue_run(s.spec(kind))
        # A real claim's answer, its run's input replaced by a value nested 10,000 deep.
        conn = http.client.HTTPConnection(srv.url.replace("http://", ""), timeout=30)
        conn.request("POST", "/v1/runs/claim", body=json.dumps(to_json(s.claim_request(kind, None, 5))),
                     headers={"Authorization": "Bearer " + srv.runtime_key, "Content-Type": "application/json"})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        doc = json.loads(resp.read())
        conn.close()
        doc["run"]["input"] = "@@deep@@"
        depth = 10_000
        text = json.dumps(doc).replace('"@@deep@@"', '{"a": ' * depth + '[1, "x"]' + "}" * depth)

        def answer(h: Any) -> None:
            b = text.encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(b)))
            h.end_headers()
            h.wfile.write(b)

        f = _serve(self, answer)
        cl = lc.Client(f.url, "k").claim_run(s.claim_request(kind, None, 0))
        assert cl is not None
        v, n = cl.run.input, 0
        while isinstance(v, dict):
            v, n = v["a"], n + 1
        self.assertEqual((n, v), (depth, [1, "x"]))
        self.assertEqual(lc.Lease(rt, cl).input, cl.run.input)

    def test_the_iterative_decoder_agrees_with_json(self) -> None:
        from ledger_client._deepjson import loads_iterative
        docs = ['{}', '[]', '0', '-1.5e-3', '"\\u00e9\\ud83d\\ude00\\n"', 'null', 'true', ' [ 1 , { "a" : [ ] } ] ',
                '{"a":{"b":[1,2,{"c":null}]},"d":"e","a2":false}', '[1e400]']
        for d in docs:
            self.assertEqual(loads_iterative(d), json.loads(d), d)
        for bad in ['[1,]', '{"a"}', '[1 2]', '{', '[', '1 2', '{"a":1,}', '', 'nul', '{1:2}']:
            with self.assertRaises(json.JSONDecodeError, msg=bad):
                loads_iterative(bad)
