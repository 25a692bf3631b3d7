// A worker process stopped with SIGTERM or killed with SIGKILL while its handler waits on a
// decision or a child run: the decision stays pending and answerable, the run waits
// without a lease and spends no attempt for the wait, and once the condition closes a new
// worker process resumes the handler, whose same decide (or delegateStep and waitChildren)
// gets the answer (or the child's outcome) at once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Worker } from "../dist/index.js";
import { eventually, quietLogger, spec, startServer, workerConfig } from "./server.mjs";

/** worker starts the fixture worker process; events() resolves the next JSON line matching pred. */
function worker(t, s, kind, mode, childKind = "") {
  const child = spawn(process.execPath, [join(import.meta.dirname, "fixtures", "park-worker.mjs"), s.url, s.runtimeKey, kind, mode, childKind], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  t.after(() => child.kill("SIGKILL"));
  const lines = [];
  const waiters = [];
  let buf = "";
  child.stdout.on("data", (b) => {
    buf += b;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of [...waiters]) if (w.pred(line)) (waiters.splice(waiters.indexOf(w), 1), w.resolve(line));
    }
  });
  const exited = new Promise((r) => child.once("exit", (code, signal) => r({ code, signal })));
  return {
    child,
    exited,
    next(event) {
      const pred = (l) => l.event === event;
      const seen = lines.find(pred);
      if (seen) return Promise.resolve(seen);
      return Promise.race([
        new Promise((resolve) => waiters.push({ pred, resolve })),
        exited.then((e) => Promise.reject(new Error(`the worker exited (${e.code ?? e.signal}) before "${event}"`))),
      ]);
    },
  };
}

async function attemptStates(s, runId) {
  const out = [];
  for await (const a of s.runtime.attempts({ runId })) out.push(a.state);
  return out.reverse();
}

async function runDecisions(s, runId) {
  const out = [];
  for await (const d of s.admin.runDecisions(runId)) out.push(d);
  return out;
}

for (const signal of ["SIGTERM", "SIGKILL"]) {
  test(`a decision pending when its worker gets ${signal} is answered and the resumed handler gets the answer`, async (t) => {
    const s = await startServer(t);
    const kind = `decide-${signal}`;
    const run = await s.runtime.enqueueRun(spec(kind));
    const w1 = worker(t, s, kind, "decide");
    const waiting = await w1.next("waiting");
    assert.equal(waiting.runId, run.runId);
    assert.equal(waiting.resumedFrom, null);
    const [asked] = await eventually(async () => {
      const ds = await runDecisions(s, run.runId);
      return ds.length > 0 && ds;
    }, "the decision asked");
    assert.equal(asked.status, "pending");

    w1.child.kill(signal);
    const exit = await w1.exited;
    if (signal === "SIGTERM") {
      assert.equal(exit.code, 0);
      assert.equal((await w1.next("finished")).outcome, "parked");
    } else {
      assert.equal(exit.signal, "SIGKILL");
    }
    // Parked at once (SIGTERM), or by the reaper once the 2 s lease passes (SIGKILL): the
    // attempt ends lost, uncharged, and the run waits on the decision it was awaiting.
    const first = signal === "SIGTERM" ? "parked" : "lost";
    await eventually(async () => (await attemptStates(s, run.runId)).join() === first, `the attempt ${first}`);
    const parked = await s.runtime.getRun(run.runId);
    assert.equal(parked.state, "queued");
    assert.equal(parked.attemptsSpent, 0, "the wait spent no attempt");
    const still = await s.admin.getDecision(asked.decisionId);
    assert.equal(still.value.status, "pending", "the decision outlives the attempt");

    const w2 = worker(t, s, kind, "decide");
    await s.admin.answerPending(asked.decisionId, { status: "approved", answer: { note: "go" } });
    const done = await w2.next("done");
    assert.deepEqual(
      { decisionId: done.decisionId, status: done.status, answer: done.answer },
      { decisionId: asked.decisionId, status: "approved", answer: { note: "go" } },
      "the resumed handler's same decide call got the answer",
    );
    assert.equal((await w2.next("finished")).outcome, "succeeded");
    const ended = await s.runtime.getRun(run.runId);
    assert.equal(ended.outcome, "succeeded");
    assert.equal(ended.attemptsSpent, 0, "no attempt was charged for the wait");
    assert.deepEqual(await attemptStates(s, run.runId), [first, "succeeded"]);
    assert.equal((await runDecisions(s, run.runId)).length, 1, "the person was asked once");
    w2.child.kill("SIGTERM");
    await w2.exited;
  });

  test(`a parent waiting on its child when its worker gets ${signal} resumes with the child's outcome`, async (t) => {
    const s = await startServer(t);
    const kind = `parent-${signal}`;
    const childKind = `child-${signal}`;
    const run = await s.runtime.enqueueRun(spec(kind));
    const w1 = worker(t, s, kind, "delegate", childKind);
    const waiting = await w1.next("waiting");
    assert.equal(waiting.runId, run.runId);

    w1.child.kill(signal);
    await w1.exited;
    if (signal === "SIGTERM") {
      assert.equal((await w1.next("finished")).outcome, "parked");
      const parked = await s.runtime.getRun(run.runId);
      assert.equal(parked.state, "queued");
      assert.equal(parked.attemptsSpent, 0, "the wait spent no attempt");
      assert.deepEqual(await attemptStates(s, run.runId), ["parked"]);
    }

    // A second parent worker: after SIGTERM the run waits on its child and is claimed once
    // the child worker below ends it; after SIGKILL it is claimed once the lease passes,
    // and its repeated delegation (the same request) finds the same child.
    const w2 = worker(t, s, kind, "delegate", childKind);
    if (signal === "SIGKILL") {
      const again = await w2.next("waiting");
      assert.equal(again.childRunId, waiting.childRunId, "the repeated delegation found the same child");
    }
    const childDone = new Promise((resolve) => {
      const cw = new Worker(s.runtime, workerConfig(childKind, { hooks: { finished: resolve }, logger: quietLogger }), async (lease) => {
        assert.equal(lease.runId, waiting.childRunId);
      });
      const stop = new AbortController();
      const done = cw.run(stop.signal);
      t.after(async () => (stop.abort(), await done));
    });
    assert.equal((await childDone).outcome, "succeeded");
    const done = await w2.next("done");
    assert.deepEqual({ childRunId: done.childRunId, outcome: done.outcome }, { childRunId: waiting.childRunId, outcome: "succeeded" });
    assert.equal((await w2.next("finished")).outcome, "succeeded");
    const ended = await s.runtime.getRun(run.runId);
    assert.equal(ended.outcome, "succeeded");
    const delegations = [];
    for await (const a of s.runtime.attempts({ runId: run.runId })) for await (const d of s.runtime.delegations(a.attemptId)) delegations.push(d.childRunId);
    assert.deepEqual([...new Set(delegations)], [waiting.childRunId], "one child, however often the parent delegated");
    // A parent killed while it waited on a child loses its lease (the reaper parks only a
    // run awaiting a decision): that attempt is charged, the wait never is.
    assert.equal(ended.attemptsSpent, signal === "SIGTERM" ? 0 : 1, "the wait spent no attempt");
    w2.child.kill("SIGTERM");
    await w2.exited;
  });
}

test("decide parks past the Worker's parkAfterMs and ends the handler without error", async (t) => {
  const s = await startServer(t);
  const run = await s.runtime.enqueueRun(spec("bound"));
  const results = [];
  const answers = [];
  let asked;
  const w = new Worker(s.runtime, workerConfig("bound", { parkAfterMs: 100, hooks: { finished: (r) => results.push(r) } }), async (lease) => {
    const first = await lease.decide({ kind: "approval", key: "ship" });
    asked = first.decisionId;
    answers.push(first.status);
    const second = await lease.decide({ kind: "input" }); // no key: "#1", the first unkeyed call
    answers.push(second.status);
  });
  const stop = new AbortController();
  const done = w.run(stop.signal);
  t.after(async () => (stop.abort(), await done));
  await eventually(() => results.length === 1, "the first park");
  assert.deepEqual({ outcome: results[0].outcome, error: results[0].error }, { outcome: "parked", error: undefined });
  const [d1] = await runDecisions(s, run.runId);
  assert.equal(d1.status, "pending");
  await s.admin.answerPending(d1.decisionId, { status: "approved" });
  await eventually(() => results.length === 2, "the second park");
  assert.equal(results[1].outcome, "parked");
  assert.equal(asked, d1.decisionId, "the resumed handler's decide found the answered decision");
  const ds = await runDecisions(s, run.runId);
  assert.equal(ds.length, 2);
  const d2 = ds.find((d) => d.decisionId !== d1.decisionId);
  await s.admin.answerPending(d2.decisionId, { status: "approved", answer: "text" });
  await eventually(() => results.length === 3, "the run's end");
  assert.equal(results[2].outcome, "succeeded");
  assert.deepEqual(answers, ["approved", "approved", "approved"]);
  assert.equal((await runDecisions(s, run.runId)).length, 2, "each decision was asked once");
  assert.equal((await s.runtime.getRun(run.runId)).attemptsSpent, 0);
});

test("uuidV5 is the name-based UUID Go's uuid.NewSHA1 and Python's uuid5 make", async () => {
  const { uuidV5 } = await import("../dist/index.js");
  // RFC 4122's DNS namespace and Python's documented example.
  assert.equal(uuidV5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "python.org"), "886313e1-3b8a-5372-9b90-0c9aee199e5d");
});
