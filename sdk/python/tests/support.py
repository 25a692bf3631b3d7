"""The real server for the tests: `go build` once per test run, `ledger serve` on a temporary
SQLite file, the bootstrap keys it prints, and a project and an active release to claim with.
Also a proxy that drops answers after the server applied the request."""

from __future__ import annotations

import atexit
import http.client
import logging
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

HERE = Path(__file__).resolve().parent
SDK = HERE.parent
REPO = SDK.parent.parent
sys.path.insert(0, str(SDK))

import ledger_client as lc  # noqa: E402

# The Worker logs handler errors and losses as it should; the tests provoke them on purpose.
logging.getLogger("ledger_client").addHandler(logging.NullHandler())
logging.getLogger("ledger_client").propagate = False

PROJECT = "py-sdk"
RELEASE = "py-sdk-release"
ADAPTER = "v1"
MODEL = "test-model"

_lock = threading.Lock()
_tmp: Optional[str] = None
_binary: Optional[str] = None
_servers: List["Server"] = []


def tmpdir() -> str:
    global _tmp
    with _lock:
        if _tmp is None:
            _tmp = tempfile.mkdtemp(prefix="ledger-py-")
            atexit.register(shutil.rmtree, _tmp, True)
        return _tmp


def binary() -> str:
    """The ledger binary built from this repository, once per test run."""
    global _binary
    d = tmpdir()
    with _lock:
        if _binary is None:
            out = os.path.join(d, "ledger")
            subprocess.run(["go", "build", "-o", out, "./cmd/ledger"], cwd=REPO, check=True)
            _binary = out
        return _binary


def openapi_document() -> Dict[str, Any]:
    path = os.path.join(tmpdir(), "openapi.json")
    if not os.path.exists(path):
        subprocess.run([binary(), "openapi", "--out", path], check=True, stdout=subprocess.DEVNULL)
    with open(path, encoding="utf-8") as f:
        doc: Dict[str, Any] = json.load(f)
        return doc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    proc: "subprocess.Popen[bytes]"
    url: str
    db: str
    admin_key: str
    runtime_key: str

    def client(self, admin: bool = False, **kw: object) -> lc.Client:
        return lc.Client(self.url, self.admin_key if admin else self.runtime_key, **kw)  # type: ignore[arg-type]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start_server(db: Optional[str] = None, keys: Optional[Server] = None, *extra: str) -> Server:
    """Starts `ledger serve` on db (a new file by default) and waits until it answers. A
    server on a database another server created takes that one's keys."""
    db = db or os.path.join(tmpdir(), "l-%s.db" % uuid.uuid4().hex[:8])
    port = free_port()
    log = open(os.path.join(tmpdir(), "serve-%d.log" % port), "wb")
    proc = subprocess.Popen([binary(), "serve", "--db", db, "--addr", "127.0.0.1:%d" % port,
                             "--reaper-interval", "100ms", "--log-level", "warn", *extra],
                            stdout=subprocess.PIPE, stderr=log)
    log.close()  # the child has its own descriptor
    admin = keys.admin_key if keys else ""
    runtime = keys.runtime_key if keys else ""
    assert proc.stdout is not None
    if not keys:
        while not (admin and runtime):
            line = proc.stdout.readline().decode()
            if not line:
                raise RuntimeError("ledger serve exited before printing its keys (see %s)" % log.name)
            m = re.match(r"(admin|runtime) key: (\S+)", line)
            if m and m.group(1) == "admin":
                admin = m.group(2)
            elif m:
                runtime = m.group(2)
    threading.Thread(target=lambda: proc.stdout.read() if proc.stdout else None, daemon=True).start()
    url = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 30
    while True:
        try:
            lc.Client(url, retry=lc.RetryPolicy(max_attempts=1)).healthz()
            break
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ledger serve did not start (see %s)" % log.name)
            time.sleep(0.05)
    s = Server(proc, url, db, admin, runtime)
    _servers.append(s)
    return s


_main: Optional[Server] = None


def server() -> Server:
    """The test run's shared server, with project PROJECT and release RELEASE/ADAPTER active."""
    global _main
    with _lock:
        if _main is not None:
            return _main
    s = start_server()
    admin, runtime = s.client(admin=True), s.client()
    admin.put_project(PROJECT, lc.PutProjectRequest(active=True))
    refs, h = lc.manifest_of("oci://example/py-sdk@sha256:0")
    runtime.put_release(RELEASE, ADAPTER, lc.PutReleaseRequest(content_refs=refs, manifest_hash=h,
                                                               state=lc.ReleaseState.ACTIVE))
    with _lock:
        _main = s
    return s


@atexit.register
def _stop_all() -> None:
    for s in _servers:
        s.stop()


def unique(prefix: str) -> str:
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def spec(kind: str, subject: Optional[str] = None, **kw: object) -> lc.EnqueueRequest:
    """An enqueue request of the test project."""
    return lc.EnqueueRequest(subject=subject or unique("subject"), kind=kind, project_id=PROJECT,
                             agent_id="py-agent", step_id=str(uuid.uuid4()), snapshot_id=str(uuid.uuid4()),
                             **kw)  # type: ignore[arg-type]


def run_spec(kind: str, subject: Optional[str] = None, **kw: object) -> lc.RunSpec:
    return lc.RunSpec(subject=subject or unique("subject"), kind=kind, project_id=PROJECT,
                      agent_id="py-agent", step_id=str(uuid.uuid4()), snapshot_id=str(uuid.uuid4()),
                      **kw)  # type: ignore[arg-type]


def claim_request(kind: str, lease_seconds: Optional[int] = None, wait: int = 0) -> lc.ClaimRequest:
    return lc.ClaimRequest(holder_id=unique("holder"), release_id=RELEASE, adapter_version=ADAPTER,
                           model_profile_id=MODEL, kinds=[kind], lease_seconds=lease_seconds, wait_seconds=wait)


def claim(c: lc.Client, kind: str, lease_seconds: Optional[int] = None, wait: int = 5) -> lc.Claim:
    cl = c.claim_run(claim_request(kind, lease_seconds, wait))
    if cl is None:
        raise AssertionError("nothing to claim of kind %s" % kind)
    return cl


def worker_options(kind: str, **kw: Any) -> Dict[str, Any]:
    """The Worker options of the tests: the test release, one kind, quick claims."""
    opts: Dict[str, Any] = dict(release_id=RELEASE, adapter_version=ADAPTER, model_profile_id=MODEL,
                                kinds=[kind], wait_seconds=0, idle_wait=0.05, shutdown_grace=5.0)
    opts.update(kw)
    return opts


def worker(c: lc.Client, handler: lc.Handler, kind: str, **kw: Any) -> lc.Worker:
    return lc.Worker(c, handler, **worker_options(kind, **kw))


def eventually(check: Callable[[], bool], timeout: float = 15.0, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within %gs" % timeout)
        time.sleep(every)


class DroppingProxy:
    """An HTTP proxy in front of the server that forwards each request, reads the server's
    answer (so the request applied), and, for the requests drop() picks, closes the
    connection without passing the answer on: a lost answer. It counts what it forwarded."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.replace("http://", "")
        self.drop: Callable[[str, str], bool] = lambda method, path: False
        self.seen: List[str] = []
        self.dropped: List[str] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn = http.client.HTTPConnection(proxy.upstream, timeout=60)
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                key = "%s %s" % (self.command, self.path.split("?")[0])
                proxy.seen.append(key)
                if proxy.drop(self.command, self.path):
                    proxy.dropped.append(key)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response_only(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def drop_first(self, method: str, path_part: str, times: int = 1) -> None:
        """Drops the answers of the first `times` requests of method whose path contains
        path_part."""
        left = [times]

        def drop(m: str, p: str) -> bool:
            if m == method and path_part in p and left[0] > 0:
                left[0] -= 1
                return True
            return False

        self.drop = drop

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def read_line(p: "subprocess.Popen[str]", pattern: "re.Pattern[str]", timeout: float = 30) -> str:
    """Reads p's output until a line matches pattern (a hang fails after timeout)."""
    assert p.stdout is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line: str = p.stdout.readline()
        if not line:
            break
        seen.append(line)
        if pattern.match(line.strip()):
            return line.strip()
    raise AssertionError("no line matching %r: %s" % (pattern.pattern, "".join(seen)))
