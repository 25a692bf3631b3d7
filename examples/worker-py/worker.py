#!/usr/bin/env python3
"""A toy agent runtime on the ledger Python SDK (sdk/python, package ledger_client): the
Python twin of examples/worker. Each run it handles takes a number of steps, writes a
checkpoint after each, records one tool call and, with --decision, asks a person to approve
half way. Killed at any point and started again, it resumes each run from its last
checkpoint: the steps already checkpointed are not done again.

    LEDGER_URL=http://localhost:8080 LEDGER_KEY=<runtime key> LEDGER_ADMIN_KEY=<admin key> \\
      PYTHONPATH=sdk/python python3 examples/worker-py/worker.py --enqueue 2 --decision

--enqueue N queues N runs first (creating the project with the admin key when one is given).
SIGINT or SIGTERM stops it gracefully: running steps get --grace to finish, then their runs
are given back uncharged. --runs N exits after N runs are settled.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import threading
import uuid
from typing import List, Optional

import ledger_client as lc

TOOL_STEP = 1  # the step that makes the tool call



def _duration(v: str) -> float:
    """A duration as examples/worker's flags take it ("250ms", "1.5s", "2m"; a bare number
    is seconds), in seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)?", v.strip())
    if not m:
        raise argparse.ArgumentTypeError("%r: want a duration such as 500ms, 2s or 1m" % v)
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(2) or "s"]

def parse(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="a toy agent runtime on the ledger Python SDK")
    p.add_argument("--url", default=os.environ.get("LEDGER_URL", lc.DEFAULT_BASE_URL), help="service base URL (LEDGER_URL)")
    p.add_argument("--key", default=os.environ.get("LEDGER_KEY", ""), help="runtime key (LEDGER_KEY)")
    p.add_argument("--admin-key", default=os.environ.get("LEDGER_ADMIN_KEY", ""),
                   help="admin key, to create the project for --enqueue (LEDGER_ADMIN_KEY; optional)")
    p.add_argument("--project", default="toys", help="project of the runs")
    p.add_argument("--kind", default="toy-py", help="kind of run to enqueue and claim")
    p.add_argument("--release", default="toy-agent-py", help="release id the worker registers and runs")
    p.add_argument("--adapter", default="1.0", help="adapter version of the release")
    p.add_argument("--model", default="toy-model", help="model profile id")
    p.add_argument("--steps", type=int, default=3, help="steps per run, one checkpoint each")
    p.add_argument("--step-time", type=_duration, default=0.5, help="how long a step takes (500ms, 2s, 1m; a bare number is seconds)")
    p.add_argument("--decision", action="store_true", help="ask for an approval half way through each run")
    p.add_argument("--enqueue", type=int, default=0, help="runs to enqueue before working")
    p.add_argument("--runs", type=int, default=0, help="exit after this many runs are settled (0: until stopped)")
    p.add_argument("--concurrency", type=int, default=4, help="runs handled at once")
    p.add_argument("--grace", type=_duration, default=10.0, help="how long running steps may finish after SIGINT or SIGTERM (10s)")
    p.add_argument("--lease", type=int, default=0, help="lease length in seconds (0: the service's)")
    p.add_argument("-v", action="store_true", help="log the SDK's debug lines")
    a = p.parse_args(argv)
    if not a.key:
        p.error("no key: set LEDGER_KEY or --key to a runtime key")
    if a.steps < 2:
        p.error("--steps must be at least 2")
    return a


def register(c: lc.Client, a: argparse.Namespace) -> None:
    """Makes sure the release the worker runs is registered and active."""
    refs, h = lc.manifest_of("toy://agents/%s/%s" % (a.release, a.adapter))
    try:
        rel, _ = c.put_release(a.release, a.adapter, lc.PutReleaseRequest(
            content_refs=refs, manifest_hash=h, state=lc.ReleaseState.ACTIVE))
    except lc.PreconditionRequired:
        # Registered earlier and moved since (draining, say): make it active again.
        def activate(req: lc.PutReleaseRequest) -> None:
            req.state = lc.ReleaseState.ACTIVE
        rel = c.update_release(a.release, a.adapter, activate)
    if rel.state != lc.ReleaseState.ACTIVE:
        sys.exit("release %s/%s is %s" % (a.release, a.adapter, rel.state))


def enqueue(c: lc.Client, a: argparse.Namespace) -> None:
    """Queues a.enqueue runs, creating the project first when an admin key is given."""
    if a.admin_key:
        try:
            lc.Client(a.url, a.admin_key).put_project(a.project, lc.PutProjectRequest())
        except lc.PreconditionRequired:
            pass  # it exists already
    for _ in range(a.enqueue):
        event = uuid.uuid4()
        try:
            r = c.enqueue_run(lc.EnqueueRequest(
                subject="toy:%s" % event, kind=a.kind, project_id=a.project, agent_id="toy-agent",
                step_id=str(uuid.uuid4()), snapshot_id=str(uuid.uuid4()), idempotency_key="toy-%s" % event))
        except lc.UnknownProject:
            sys.exit("project %r does not exist: give an admin key (LEDGER_ADMIN_KEY) to create it" % a.project)
        print("run %s: enqueued" % r.run_id, flush=True)


def agent(a: argparse.Namespace) -> lc.Handler:
    """The toy agent: its state is the number of steps done, kept in the checkpoint's state
    reference as "step=N"."""

    def handle(lease: lc.Lease) -> None:
        rid = lease.run_id
        last = lease.resume()
        done = 0
        if last is not None:
            try:
                done = int(last.adapter_state_ref.removeprefix("step="))
            except ValueError as e:
                raise lc.Permanent("checkpoint state %r" % last.adapter_state_ref) from e
            print("run %s: resuming after step %d of %d (attempt %d)"
                  % (rid, done, a.steps, lease.run.attempts_spent + 1), flush=True)
        else:
            print("run %s: starting, %d steps" % (rid, a.steps), flush=True)
        for step in range(done, a.steps):
            if step == TOOL_STEP:
                # The tool call is recorded with its outcome; a resume after this step's
                # checkpoint does not make it again.
                def tool() -> str:
                    lease.sleep(a.step_time / 4)
                    return "toy-receipt-" + rid[:8]
                lease.call(lc.CallKind.TOOL, "toy.search", tool)
            if a.decision and step == a.steps // 2:
                # decide asks under a key derived from the step, so a run resumed after SIGTERM
                # or SIGKILL gets the same decision (and its answer) instead of asking again.
                # Past the Worker's park_after, or on SIGTERM, it parks the run (no lease, no
                # attempt spent) and raises lc.Parked, which the Worker counts as parked.
                print("run %s: waiting for approval at step %d (answer it in the decision inbox)"
                      % (rid, step), flush=True)
                d = lease.decide(lc.DecisionKind.APPROVAL, recommendation="carry on", key="approve-step-%d" % step)
                if d.status != lc.DecisionStatus.APPROVED:
                    raise lc.Permanent("decision %s" % d.status)
            lease.sleep(a.step_time)  # the step's work; raises once the lease is lost or the run cancelled
            phase = lc.Phase.FINALIZING if step + 1 == a.steps else lc.Phase.ACTING
            lease.checkpoint(phase, "step=%d" % (step + 1))
            print("run %s: step %d/%d done" % (rid, step + 1, a.steps), flush=True)

    return handle


def main(argv: Optional[List[str]] = None) -> None:
    a = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.DEBUG if a.v else logging.WARNING, stream=sys.stderr)
    c = lc.Client(a.url, a.key, user_agent="ledger-toy-worker-py/1")
    register(c, a)
    if a.enqueue > 0:
        enqueue(c, a)
    settled = [0]
    lock = threading.Lock()
    w: Optional[lc.Worker] = None

    def finished(r: lc.Result) -> None:
        print("run %s: %s" % (r.lease.run_id, r.outcome.value), flush=True)
        with lock:
            settled[0] += 1
            if a.runs and settled[0] >= a.runs and w is not None:
                w.stop()

    w = lc.Worker(c, agent(a), release_id=a.release, adapter_version=a.adapter, model_profile_id=a.model,
                  kinds=[a.kind], concurrency=a.concurrency, shutdown_grace=a.grace, lease_seconds=a.lease,
                  on_finished=finished)
    print("worker %s: claiming %r runs of release %s/%s at %s" % (w.holder_id, a.kind, a.release, a.adapter, a.url),
          flush=True)
    w.run_until_signal()


if __name__ == "__main__":
    main()
