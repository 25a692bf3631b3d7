// A worker process killed with SIGKILL mid-run: after its lease passes, a second worker
// resumes after its last checkpoint with a greater epoch, and the first one's late write is
// refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Worker, LedgerProblem } from "../dist/index.js";
import { quietLogger, spec, startServer, workerConfig } from "./server.mjs";

test("a killed worker's run resumes after its last checkpoint", async (t) => {
  const s = await startServer(t);
  const run = await s.runtime.enqueueRun(spec("crash"));
  const child = spawn(process.execPath, [join(import.meta.dirname, "fixtures", "crash-worker.mjs"), s.url, s.runtimeKey, "crash"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  t.after(() => child.kill("SIGKILL"));
  const first = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (b) => {
      out += b;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line));
    });
    child.on("exit", (code) => reject(new Error(`the worker exited ${code} before it checkpointed`)));
  });
  assert.equal(first.runId, run.runId);
  const killed = new Promise((r) => child.once("exit", (_, signal) => r(signal)));
  child.kill("SIGKILL");
  assert.equal(await killed, "SIGKILL");

  // The second worker claims the run once the reaper takes it back (2 s lease).
  let resumed;
  let second;
  const warned = [];
  const settled = new Promise((resolve) => {
    const w = new Worker(
      s.runtime,
      workerConfig("crash", { hooks: { finished: resolve }, logger: { ...quietLogger, warn: (msg, f) => warned.push({ msg, ...f }) } }),
      async (lease) => {
        second = lease;
        resumed = await lease.resume();
        await lease.checkpoint({ phase: "finalizing", stateRef: "step-2" });
      },
    );
    const stop = new AbortController();
    const done = w.run(stop.signal);
    t.after(async () => (stop.abort(), await done));
  });
  const r = await settled;
  assert.equal(r.outcome, "succeeded", String(r.error ?? r.settleError ?? ""));
  assert.ok(second.fencingToken > first.fencingToken, `epoch ${second.fencingToken} after ${first.fencingToken}`);
  assert.equal(resumed.sequence, 1);
  // The restarted worker says which attempt of how many it resumes (the kill spent one).
  const said = warned.find((w) => w.msg === "resuming run");
  assert.deepEqual(said && { runId: said.runId, attempt: said.attempt, maxAttempts: said.maxAttempts }, { runId: run.runId, attempt: 2, maxAttempts: 5 });
  const seqs = [];
  for await (const c of s.runtime.checkpoints(second.attemptId)) seqs.push(c.sequence);
  assert.deepEqual(seqs, [2], "the second attempt's checkpoints continue after the first's");

  // The first holder's late write is refused by the fence.
  const late = await s.runtime
    .appendCheckpoint(first.attemptId, { fencingToken: first.fencingToken, sequence: 2, phase: "acting", adapterStateRef: "late", adapterVersion: "1.0", hash: "h" })
    .catch((e) => e);
  assert.ok(late instanceof LedgerProblem, String(late));
  assert.equal(late.status, 409);
  assert.ok(["stale_lease", "attempt_ended", "lease_expired"].includes(late.code), late.code);
  const after = await s.runtime.getRun(run.runId);
  assert.equal(after.outcome, "succeeded");
});
