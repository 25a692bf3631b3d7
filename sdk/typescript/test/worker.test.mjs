// The Worker against the real server: a run's whole life, every handler outcome, lease loss
// by heartbeat refusal, cancel, and shutdown.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  CancelRequestedError,
  LeaseLostError,
  ShutdownError,
  Worker,
  isStaleLease,
  permanent,
  retryAfter,
} from "../dist/index.js";
import { eventually, release, spec, startServer, workerConfig } from "./server.mjs";

/** runWorker starts a Worker; it resolves results as runs settle. */
function runWorker(t, s, kind, handler, more = {}) {
  const results = [];
  const waiters = [];
  const w = new Worker(s.runtime, workerConfig(kind, { ...more, hooks: { finished: (r) => (results.push(r), waiters.splice(0).forEach((f) => f())) } }), handler);
  const stop = new AbortController();
  const done = w.run(stop.signal);
  const halt = async () => {
    const t0 = Date.now();
    stop.abort();
    await done;
    if (process.env.DEBUG_HALT) console.error("halt", kind, Date.now() - t0);
  };
  t.after(halt);
  const next = async (n = 1) => {
    while (results.length < n) await new Promise((r) => waiters.push(r));
    return results[n - 1];
  };
  return { w, results, next, halt, done };
}

test("the Worker", { concurrency: true }, async (t) => {
  const s = await startServer(t);

  await t.test("a run's whole life", async () => {
    const run = await s.runtime.enqueueRun(spec("life", { input: { pr: 42 } }));
    let seen;
    const { next } = runWorker(t, s, "life", async (lease, signal) => {
      assert.deepEqual(lease.input, { pr: 42 });
      assert.equal(await lease.resume(), null);
      await lease.setPhase("planning");
      await lease.checkpoint({ phase: "planning", stateRef: "plan" });
      const receipt = await lease.call({ kind: "tool", target: "git diff" }, async () => "receipt-1");
      assert.equal(receipt, "receipt-1");
      const d = await lease.requestDecision({ kind: "approval", recommendation: "merge" });
      const answered = s.admin.answerPending(d.decisionId, { status: "approved" });
      const closed = await lease.waitDecision(d.decisionId, { signal });
      await answered;
      assert.equal(closed.status, "approved");
      const del = await lease.delegate("review tests", spec("life-child", { idempotencyKey: `child-of-${lease.runId}` }));
      const child = new Worker(s.runtime, workerConfig("life-child"), async () => {});
      const stopChild = new AbortController();
      const childDone = child.run(stopChild.signal);
      const ended = await lease.waitDelegation(del.delegationId, { signal });
      stopChild.abort();
      await childDone;
      assert.equal(ended.status, "succeeded");
      await lease.checkpoint({ phase: "finalizing", stateRef: "done" });
      seen = lease;
    });
    const r = await next();
    assert.equal(r.outcome, "succeeded", String(r.error ?? r.settleError ?? ""));
    const after = await s.runtime.getRun(run.runId);
    assert.equal(after.state, "ended");
    assert.equal(after.outcome, "succeeded");
    const cps = [];
    for await (const c of s.runtime.checkpoints(seen.attemptId)) cps.push(c.sequence);
    assert.deepEqual(cps, [0, 1]);
    // A write after the end is refused locally, without a request.
    await assert.rejects(seen.checkpoint({ phase: "acting", stateRef: "late" }), /lease ended/);
  });

  await t.test("every handler outcome", async () => {
    const cases = [
      { name: "resolves", handler: async () => {}, outcome: "succeeded", state: "ended", runOutcome: "succeeded" },
      { name: "permanent", handler: async () => { throw permanent(new TypeError("bad input")); }, outcome: "failed", state: "ended", runOutcome: "failed", error: { code: "typeerror", message: "bad input" } },
      { name: "throws", handler: async () => { throw retryAfter(Object.assign(new Error("busy"), { code: "upstream.busy" }), 3_600_000); }, outcome: "released", state: "queued", spent: 1, error: { code: "upstream.busy", message: "busy" } },
      { name: "settles itself", handler: async (l) => { await l.complete("succeeded", "outcome-hash"); }, outcome: "settled_by_handler", state: "ended", runOutcome: "succeeded" },
    ];
    await Promise.all(
      cases.map(async (c) => {
        const kind = `outcome-${c.name.replace(/ /g, "-")}`;
        const run = await s.runtime.enqueueRun(spec(kind));
        const { next } = runWorker(t, s, kind, c.handler);
        const r = await next();
        assert.equal(r.outcome, c.outcome, c.name);
        const after = await s.runtime.getRun(run.runId);
        assert.equal(after.state, c.state, c.name);
        if (c.runOutcome) assert.equal(after.outcome, c.runOutcome, c.name);
        const attempt = (await s.runtime.getAttempt(r.lease.attemptId)).value;
        assert.deepEqual(attempt.error && { code: attempt.error.code, message: attempt.error.message }, c.error, c.name);
        if (c.error) assert.ok(Array.isArray(attempt.error.details.stack), c.name);
        if (c.spent) {
          assert.equal(after.attemptsSpent, c.spent, c.name);
          assert.ok(Date.parse(after.dueAt) > Date.now() + 3_000_000, `${c.name}: due after retryAfter`);
        }
      }),
    );
  });

  await t.test("a keyed decision is asked once; parking waits for it without a lease", async () => {
    const kind = "park-decide";
    const run = await s.runtime.enqueueRun(spec(kind));
    const seen = [];
    const { next } = runWorker(t, s, kind, async (l) => {
      const d = await l.requestDecision({ kind: "approval", key: "ship" });
      const again = await l.requestDecision({ kind: "approval", key: "ship" });
      seen.push([d.decisionId, again.decisionId, d.status]);
      if (d.status === "pending") await l.park({ decisionIds: [d.decisionId] });
    });
    const parked = await next();
    assert.equal(parked.outcome, "parked");
    assert.equal((await s.runtime.getAttempt(parked.lease.attemptId)).value.state, "parked");
    assert.equal(seen[0][0], seen[0][1], "the same key answers the same decision");
    assert.equal((await s.runtime.getRun(run.runId)).state, "queued");
    await s.admin.answerPending(seen[0][0], { status: "approved" });
    const resumed = await next(2);
    assert.equal(resumed.outcome, "succeeded");
    assert.deepEqual(seen[1], [seen[0][0], seen[0][0], "approved"], "the resumed handler gets the same decision, answered");
  });

  await t.test("a model call reports usage, summed by attempt and run", async () => {
    const kind = "usage-report";
    const run = await s.runtime.enqueueRun(spec(kind));
    const calls = [];
    const { next } = runWorker(t, s, kind, async (l) => {
      const c = await l.recordCall({ kind: "model", target: "chat", model: "m-1", provider: "openai", operation: "chat" });
      calls.push(c, await l.finishCallReport(c.callId, "succeeded", undefined, { usage: { inputTokens: 10, outputTokens: 4 }, responseModel: "m-1-2026", finishReasons: ["stop"], costMicros: 1500 }));
    });
    const r = await next();
    assert.equal(r.outcome, "succeeded");
    assert.deepEqual([calls[0].model, calls[0].provider, calls[0].operation, calls[1].responseModel, calls[1].costMicros], ["m-1", "openai", "chat", "m-1-2026", 1500]);
    for (const u of [await s.runtime.getAttemptUsage(r.lease.attemptId), await s.runtime.getRunUsage(run.runId)]) {
      assert.deepEqual([u.calls, u.inputTokens, u.outputTokens, u.costMicros], [1, 10, 4, 1500]);
    }
  });

  await t.test("cancel: acknowledged once, the signal aborts, completed cancelled", async () => {
    const run = await s.runtime.enqueueRun(spec("cancel"));
    let reason;
    const { next } = runWorker(t, s, "cancel", async (lease, signal) => {
      await s.admin.cancelRun(lease.runId);
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      reason = signal.reason;
      await lease.checkpoint({ phase: "finalizing", stateRef: "last words" }); // still usable
      throw new Error("stopped");
    });
    const r = await next();
    assert.ok(reason instanceof CancelRequestedError);
    assert.equal(r.outcome, "cancelled");
    const after = await s.runtime.getRun(run.runId);
    assert.equal(after.outcome, "cancelled");
    const attempt = (await s.runtime.getAttempt(r.lease.attemptId)).value;
    assert.ok(attempt.cancellationObservedAt, "the cancel was acknowledged");
  });

  await t.test("lease loss by heartbeat refusal", async () => {
    await s.runtime.enqueueRun(spec("lose"));
    let reason;
    const { next } = runWorker(t, s, "lose", async (lease, signal) => {
      // Another holder takes the run over: this lease's heartbeat is refused.
      await s.runtime.releaseAttempt(lease.attemptId, { fencingToken: lease.fencingToken, retryAfterSeconds: 3600 });
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      reason = signal.reason;
      await assert.rejects(lease.checkpoint({ phase: "acting", stateRef: "x" }), LeaseLostError);
    });
    const r = await next();
    assert.ok(reason instanceof LeaseLostError, String(reason));
    assert.equal(r.outcome, "lease_lost");
  });

  await t.test("shutdown releases running leases uncharged", async () => {
    const run = await s.runtime.enqueueRun(spec("shutdown"));
    let started;
    const running = new Promise((r) => (started = r));
    let reason;
    const { next, halt } = runWorker(
      t,
      s,
      "shutdown",
      async (lease, signal) => {
        started();
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        reason = signal.reason;
      },
      { shutdownGraceMs: 100 },
    );
    await running;
    await halt();
    const r = await next();
    assert.ok(reason instanceof ShutdownError);
    assert.equal(r.outcome, "shutdown_released");
    const after = await s.runtime.getRun(run.runId);
    assert.equal(after.state, "queued");
    assert.equal(after.attemptsSpent, 0);
  });

  await t.test("a refused claim backs off and keeps trying; a forbidden one stops the worker", async () => {
    const logged = [];
    let refused = 0;
    const logger = { debug() {}, info() {}, warn() {}, error: (msg, f) => logged.push({ msg, ...f }) };
    const w = new Worker(
      s.runtime,
      workerConfig("refused", { releaseId: "not-registered", logger, hooks: { claimFailed: () => refused++ } }),
      async () => {},
    );
    const stop = new AbortController();
    const done = w.run(stop.signal);
    await eventually(() => refused >= 2, "two refused claims");
    stop.abort();
    await done; // resolves: a refusal is not fatal
    assert.equal(logged.length, 1, JSON.stringify(logged));
    assert.equal(logged[0].code, "release_not_active");

    const admin = new Worker(s.admin, workerConfig("forbidden", { logger: { ...logger, error() {} } }), async () => {});
    const err = await admin.run(new AbortController().signal).catch((e) => e);
    assert.equal(err?.code, "forbidden");
  });

  await t.test("heartbeats at a third of the lease; renewals failing past the lease by the local clock lose it", async () => {
    const beats = { ok: 0, failing: 0 };
    const counting = (which, fail) => (url, init) => {
      if (String(url).endsWith("/heartbeat")) {
        beats[which]++;
        if (fail) return Promise.resolve(new Response('{"code":"database_unavailable","status":503,"title":"x","type":"x"}', { status: 503, headers: { "content-type": "application/problem+json" } }));
      }
      return fetch(url, init);
    };
    const one = async (which, fail, handler) => {
      const c = s.client(s.runtimeKey, { fetch: counting(which, fail), retry: { maxAttempts: 1 } });
      const kind = `beat-${which}`;
      await s.runtime.enqueueRun(spec(kind));
      return new Promise((resolve, reject) => {
        const w = new Worker(c, workerConfig(kind, { leaseSeconds: 3, heartbeatEveryMs: undefined, hooks: { finished: resolve } }), handler);
        const stop = new AbortController();
        w.run(stop.signal).catch(reject);
        t.after(() => stop.abort());
      });
    };
    let lostWith;
    const [ok, lost] = await Promise.all([
      one("ok", false, (lease, signal) => new Promise((r) => setTimeout(r, 2500))),
      one("failing", true, (lease, signal) => new Promise((r) => signal.addEventListener("abort", () => ((lostWith = signal.reason), r()), { once: true }))),
    ]);
    assert.equal(ok.outcome, "succeeded");
    assert.ok(beats.ok >= 2 && beats.ok <= 3, `${beats.ok} heartbeats in 2.5 s of a 3 s lease`);
    assert.equal(lost.outcome, "lease_lost");
    assert.ok(lostWith instanceof LeaseLostError, String(lostWith));
    assert.match(String(lostWith.message), /passed by this machine's clock/);
    assert.ok(lost.durationMs >= 2500, `lost after ${lost.durationMs} ms, not before the lease passed`);
  });

  await t.test("a stale write is a LedgerProblem with its guard", async () => {
    await s.runtime.enqueueRun(spec("stale"));
    const cl = await s.runtime.claimRun({ ...release, holderId: "h", kinds: ["stale"] });
    await s.runtime.releaseAttempt(cl.attempt.attemptId, { fencingToken: cl.lease.fencingToken, retryAfterSeconds: 0 });
    await eventually(async () => (await s.runtime.getRun(cl.run.runId)).state === "queued", "requeued");
    const err = await s.runtime
      .appendCheckpoint(cl.attempt.attemptId, { fencingToken: cl.lease.fencingToken, sequence: 0, phase: "acting", adapterStateRef: "x", adapterVersion: "1.0", hash: "h" })
      .catch((e) => e);
    assert.ok(isStaleLease(err) || err.code === "attempt_ended", String(err));
    assert.equal(err.status, 409);
    assert.ok(err.requestId);
  });
});
