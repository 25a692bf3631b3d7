// Faults in user code are contained: each hook and the handler throw in every way
// JavaScript allows (a sync throw, a rejected promise, a thrown non-Error); the process
// has no unhandled rejection, each fault is logged once, the run ends as the Worker's rules
// say, and the Worker goes on claiming.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Worker } from "../dist/index.js";
import { eventually, spec, startServer, workerConfig } from "./server.mjs";

const throwers = {
  "a sync throw": () => {
    throw new Error("boom");
  },
  "a rejected promise": async () => {
    throw new Error("boom");
  },
  "a thrown non-Error": () => {
    throw "boom";
  },
  "a rejected non-Error": () => Promise.reject(undefined),
};

test("faults in hooks and handlers", { concurrency: true }, async (t) => {
  const unhandled = [];
  const onUnhandled = (e) => unhandled.push(e);
  process.on("unhandledRejection", onUnhandled);
  process.on("uncaughtException", onUnhandled);
  t.after(() => {
    process.off("unhandledRejection", onUnhandled);
    process.off("uncaughtException", onUnhandled);
  });
  const s = await startServer(t);
  let n = 0;
  const cases = [];

  /** work runs a Worker over two runs of a kind of its own; it answers the runs' end states and the errors logged. */
  const work = async (cfg, handler, runs = 2) => {
    const kind = `fault-${n++}`;
    const logged = [];
    const logger = { debug() {}, info() {}, warn() {}, error: (msg, f) => logged.push({ msg, ...f }) };
    const ids = [];
    for (let i = 0; i < runs; i++) ids.push((await s.runtime.enqueueRun(spec(kind, { maxAttempts: 5 }))).runId);
    const client = cfg.client ?? s.runtime;
    const w = new Worker(client, workerConfig(kind, { logger, ...cfg, hooks: cfg.hooks }), handler);
    const stop = new AbortController();
    const done = w.run(stop.signal);
    try {
      const got = await eventually(async () => {
        const rs = await Promise.all(ids.map((id) => s.runtime.getRun(id)));
        return rs.every((r) => r.state === "ended" || (r.state === "queued" && r.attemptsSpent > 0)) && rs;
      }, `${kind}: every run settled`);
      return { runs: got, logged, w };
    } finally {
      stop.abort();
      await done;
    }
  };

  for (const [how, f] of Object.entries(throwers)) {
    cases.push(t.test(`the handler: ${how} releases the run charged`, async () => {
      const { runs } = await work({}, f);
      for (const r of runs) {
        assert.equal(r.state, "queued", JSON.stringify(r));
        assert.equal(r.attemptsSpent, 1);
      }
    }));

    for (const hook of ["claimed", "finished"]) {
      cases.push(t.test(`the ${hook} hook: ${how} is logged once, and the runs succeed`, async () => {
        const { runs, logged } = await work({ hooks: { [hook]: f } }, async () => {});
        for (const r of runs) assert.equal(r.outcome, "succeeded", JSON.stringify(r));
        const mine = logged.filter((l) => l.msg === "a hook failed" && l.hook === hook);
        await eventually(() => logged.filter((l) => l.msg === "a hook failed" && l.hook === hook).length >= 2, "logged");
        assert.equal(logged.filter((l) => l.msg === "a hook failed" && l.hook === hook).length, 2, JSON.stringify(mine));
      }));
    }

    cases.push(t.test(`the claimFailed and held hooks: ${how} is logged, and the Worker goes on`, async () => {
      let claims = 0;
      // The first claim fails (503), the second is held back (204 with Retry-After), then the real ones.
      const fake = (url, init) => {
        if (String(url).endsWith("/v1/runs/claim")) {
          claims++;
          if (claims === 1) return Promise.resolve(new Response('{"code":"database_unavailable","status":503,"title":"x","type":"x"}', { status: 503, headers: { "content-type": "application/problem+json" } }));
          if (claims === 2) return Promise.resolve(new Response(null, { status: 204, headers: { "retry-after": "1" } }));
        }
        return fetch(url, init);
      };
      const client = s.client(s.runtimeKey, { fetch: fake, retry: { maxAttempts: 1 } });
      const { runs, logged } = await work({ client, concurrency: 1, hooks: { claimFailed: f, held: f } }, async () => {});
      for (const r of runs) assert.equal(r.outcome, "succeeded", JSON.stringify(r));
      await eventually(() => logged.filter((l) => l.msg === "a hook failed").length >= 2, "logged");
      assert.deepEqual(logged.filter((l) => l.msg === "a hook failed").map((l) => l.hook).sort(), ["claimFailed", "held"]);
    }));
  }

  cases.push(t.test("onError that throws: the default release", async () => {
    const { runs, logged } = await work({ onError: () => { throw new Error("bad onError"); } }, async () => {
      throw new Error("handler");
    });
    for (const r of runs) assert.equal(r.state, "queued");
    assert.ok(logged.some((l) => l.hook === "onError"));
  }));

  await Promise.all(cases);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(unhandled, []);
});
