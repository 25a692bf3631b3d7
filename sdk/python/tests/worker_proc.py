"""A worker process for the tests: python3 worker_proc.py URL KEY KIND MODE.

MODE checkpoint-and-hang: checkpoints 0 and 1, prints "checkpointed <attemptId> <token>", then
works on (checking its lease) until stopped; it is killed with SIGKILL or stopped with SIGTERM.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ledger_client as lc  # noqa: E402


def main() -> None:
    url, key, kind, mode, lease_seconds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

    def handler(lease: lc.Lease) -> None:
        lease.checkpoint(lc.Phase.PLANNING, "step-0")
        lease.checkpoint(lc.Phase.ACTING, "step-1")
        print("checkpointed %s %d" % (lease.attempt_id, lease.fencing_token), flush=True)
        while True:
            lease.sleep(0.05)

    w = lc.Worker(lc.Client(url, key), handler, release_id="py-sdk-release", adapter_version="v1",
                  model_profile_id="test-model", kinds=[kind], wait_seconds=1, lease_seconds=lease_seconds,
                  shutdown_grace=0.3,
                  on_finished=lambda r: print("finished %s" % r.outcome.value, flush=True))
    assert mode == "checkpoint-and-hang"
    w.run_until_signal()
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
