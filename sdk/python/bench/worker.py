"""The Python row of `ledger bench --workload sdk`: a Worker of --concurrency handler threads
runs whole runs (claim, three checkpoints, the next run's enqueue, complete) for
--duration-ms and prints {"runs","requests","errors"} as one JSON line. The bench seeds one
run of --kind per handler first. Run with PYTHONPATH=sdk/python (the bench sets it)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
import uuid
from typing import Any, Dict

import ledger_client as lc


class CountingClient(lc.Client):
    """A Client that counts its tries and their refusals."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.requests = 0
        self.errors: Dict[str, int] = {}
        self._mu = threading.Lock()

    def _try(self, method: str, path: str, *a: Any, **kw: Any) -> Any:  # type: ignore[override]
        with self._mu:
            self.requests += 1
        try:
            return super()._try(method, path, *a, **kw)
        except Exception as e:
            key = "http_%s" % getattr(getattr(e, "error", None), "status", 0)
            with self._mu:
                self.errors[key] = self.errors.get(key, 0) + 1
            raise


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("url", "key", "kind", "project", "release", "adapter", "model"):
        p.add_argument("--" + name, required=True)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--duration-ms", type=int, default=10000)
    a = p.parse_args()
    logging.getLogger("ledger_client").addHandler(logging.NullHandler())
    logging.getLogger("ledger_client").propagate = False
    c = CountingClient(a.url, a.key, user_agent="ledger-bench-sdk-py")
    end = time.monotonic() + a.duration_ms / 1000
    runs = [0]
    mu = threading.Lock()

    def handle(lease: lc.Lease) -> None:
        for seq in range(1, 4):
            lease.checkpoint(lc.Phase.ACTING, "bench://state/%d" % seq,
                             hash="%016x%016x" % (lease.fencing_token, seq))
        if time.monotonic() < end:
            c.enqueue_run(lc.EnqueueRequest(subject="bench-py-" + str(uuid.uuid4()), kind=a.kind,
                                            project_id=a.project, agent_id="bench-agent",
                                            step_id=str(uuid.uuid4()), snapshot_id=str(uuid.uuid4())))

    def finished(r: lc.Result) -> None:
        if r.outcome == lc.Outcome.SUCCEEDED and time.monotonic() < end:
            with mu:
                runs[0] += 1

    w = lc.Worker(c, handle, release_id=a.release, adapter_version=a.adapter, model_profile_id=a.model,
                  kinds=[a.kind], concurrency=a.concurrency, lease_seconds=3600, wait_seconds=1,
                  shutdown_grace=30.0, on_finished=finished)
    threading.Timer(max(0.0, end - time.monotonic()), w.stop).start()
    w.run()
    sys.stdout.write(json.dumps({"runs": runs[0], "requests": c.requests, "errors": c.errors}) + "\n")


if __name__ == "__main__":
    main()
