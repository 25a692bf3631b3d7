"""A worker process the park tests stop with SIGTERM or kill with SIGKILL while its handler
waits: python3 park_proc.py URL KEY KIND MODE [CHILD_KIND].

Its handler checkpoints once, then (MODE decide) asks a decision with no key of its own, or
(MODE delegate) delegates one child with delegate_step and waits for it. It prints one JSON
line per event: {"event": "waiting", ...} before it waits, {"event": "done", ...} with what it
got, and {"event": "finished", "outcome": ...} as the Worker settles the run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ledger_client as lc  # noqa: E402


def say(**o: Any) -> None:
    print(json.dumps(o), flush=True)


def main() -> None:
    url, key, kind, mode = sys.argv[1:5]
    child_kind = sys.argv[5] if len(sys.argv) > 5 else ""

    def handler(lease: lc.Lease) -> None:
        last = lease.resume()
        if last is None:
            lease.checkpoint(lc.Phase.PLANNING, "before-wait")
        resumed_from = None if last is None else last.sequence
        if mode == "decide":
            # The handler's first decide: its key is "decide:{stepId}:#1" on every attempt.
            say(event="waiting", runId=lease.run_id, resumedFrom=resumed_from)
            d = lease.decide(lc.DecisionKind.APPROVAL, recommendation="ship it")
            say(event="done", runId=lease.run_id, decisionId=d.decision_id, status=d.status.value, answer=d.answer)
        else:
            dl = lease.delegate_step("child-1", "summarise", lc.RunSpec(
                subject="child-of-" + lease.run_id, kind=child_kind, project_id="py-sdk", agent_id="py-agent-2",
                step_id="", snapshot_id="", max_attempts=3))
            say(event="waiting", runId=lease.run_id, childRunId=dl.child_run_id, resumedFrom=resumed_from)
            (child,) = lease.wait_children([dl.child_run_id])
            say(event="done", runId=lease.run_id, childRunId=child.run_id,
                outcome=None if child.outcome is None else child.outcome.value)

    w = lc.Worker(lc.Client(url, key), handler, release_id="py-sdk-release", adapter_version="v1",
                  model_profile_id="test-model", kinds=[kind], wait_seconds=1, lease_seconds=2,
                  park_after=60.0,
                  on_finished=lambda r: say(event="finished", outcome=r.outcome.value, runId=r.lease.run_id,
                                            error=None if r.error is None else repr(r.error)))
    w.run_until_signal()


if __name__ == "__main__":
    main()
