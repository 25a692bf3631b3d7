// The Worker's shared signals: every poller's claim listens on the one signal that ends claims,
// so more than ten handlers must not trip Node's listener-leak warning (a false alarm that
// would hide a real leak), with either transport.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Worker } from "../dist/index.js";
import { spec, startServer, workerConfig } from "./server.mjs";

for (const [name, opts] of [
  ["node:http", {}],
  ["fetch", { fetch: (url, init) => fetch(url, init) }],
]) {
  test(`${name}: a Worker of 24 handlers warns of no listener leak`, async (t) => {
    const warnings = [];
    const onWarning = (w) => warnings.push(w);
    process.on("warning", onWarning);
    t.after(() => process.off("warning", onWarning));
    const s = await startServer(t);
    const c = s.client(s.runtimeKey, opts);
    const kind = `sig-${randomUUID()}`;
    const n = 48;
    for (let i = 0; i < n; i++) await c.enqueueRun(spec(kind));
    let finished = 0;
    let done;
    const all = new Promise((r) => (done = r));
    const stop = new AbortController();
    const w = new Worker(c, workerConfig(kind, { concurrency: 24, hooks: { finished: () => ++finished === n && done() } }), async (lease, signal) => {
      await lease.checkpoint({ phase: "acting", stateRef: "s" }, { signal });
    });
    const running = w.run(stop.signal);
    await all;
    stop.abort();
    await running;
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    const leaks = warnings.filter((w) => w.name === "MaxListenersExceededWarning");
    assert.deepEqual(leaks.map(String), []);
  });
}
