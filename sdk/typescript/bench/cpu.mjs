// CPU of this Node process per request and per Worker cycle, against the real server (the
// tests' startServer: cmd/ledger built from this repository, a fresh SQLite file), for the
// default transport (node:http with keep-alive) and a caller's fetch:
//
//   request/*       one client reading one run over and over, one request at a time
//   cycle/plain/*   --concurrency loops of claim, three checkpoints, enqueue, complete through
//                   the Client (the Worker's requests without the Worker)
//   cycle/worker/*  a Worker of --concurrency handlers doing the same (bench/worker.mjs's run)
//
// Each figure is process.cpuUsage() (user + system) over the measured requests or cycles
// divided by their count, after a warm-up; --rounds rounds of every scenario, interleaved,
// and the median and range of the rounds are printed. The server's CPU is not counted.
//
//   cd sdk/typescript && npm run build && node bench/cpu.mjs [--requests 2000] [--cycles 600]
import { parseArgs } from "node:util";
import { randomUUID } from "node:crypto";
import { Worker } from "../dist/index.js";
import { startServer, spec, release, quietLogger } from "../test/server.mjs";

const { values: a } = parseArgs({
  options: {
    requests: { type: "string", default: "2000" },
    cycles: { type: "string", default: "600" },
    concurrency: { type: "string", default: "16" },
    rounds: { type: "string", default: "3" },
    only: { type: "string", default: "" },
  },
});
const requests = Number(a.requests);
const cycles = Number(a.cycles);
const concurrency = Number(a.concurrency);

const s = await startServer(undefined);
const transports = {
  "node:http": {},
  fetch: { fetch: (url, init) => fetch(url, init) },
};

/** The requests a cycle scenario's client sent (answered or not), counted by its onAnswer. */
const sent = { n: 0 };

/** cpuOf runs f and answers the process's CPU microseconds it took (user + system). */
async function cpuOf(f) {
  sent.n = 0;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await f();
  const c = process.cpuUsage(c0);
  return { requests: sent.n, cpuUs: c.user + c.system, wallMs: Number(process.hrtime.bigint() - t0) / 1e6 };
}

async function requestLoop(opts) {
  const c = s.client(s.runtimeKey, opts);
  const run = await c.enqueueRun(spec(`req-${randomUUID()}`));
  for (let i = 0; i < 200; i++) await c.getRun(run.runId); // warm-up
  const m = await cpuOf(async () => {
    for (let i = 0; i < requests; i++) await c.getRun(run.runId);
  });
  return m.cpuUs / requests;
}

function claimRequest(kind) {
  return { holderId: `bench-${randomUUID()}`, ...release, kinds: [kind], waitSeconds: 0, leaseSeconds: 600 };
}

/** plainCycles: loops of claim, three checkpoints, enqueue of the next run, complete. */
async function plainCycles(opts) {
  const c = s.client(s.runtimeKey, { ...opts, onAnswer: () => sent.n++ });
  const kind = `plain-${randomUUID()}`;
  const req = claimRequest(kind);
  let left = 0;
  const loop = async () => {
    while (left > 0) {
      const cl = await c.claimRun(req);
      if (!cl) continue;
      left--;
      const id = cl.attempt.attemptId;
      const tok = cl.lease.fencingToken;
      for (let seq = 0; seq < 3; seq++) {
        await c.appendCheckpoint(id, {
          fencingToken: tok,
          sequence: seq,
          phase: "acting",
          adapterStateRef: `bench://state/${seq}`,
          adapterVersion: cl.attempt.adapterVersion,
          hash: `${tok.toString(16).padStart(16, "0")}${seq.toString(16).padStart(16, "0")}`,
        });
      }
      await c.enqueueRun(spec(kind));
      await c.completeAttempt(id, { fencingToken: tok, state: "succeeded" });
    }
  };
  for (let i = 0; i < concurrency; i++) await c.enqueueRun(spec(kind));
  const many = async (n) => {
    left = n;
    await Promise.all(Array.from({ length: concurrency }, loop));
  };
  await many(100); // warm-up
  const m = await cpuOf(() => many(cycles));
  perCycle.set("plain", m.requests / cycles);
  return m.cpuUs / cycles;
}

/** workerCycles: a Worker doing plainCycles' requests; measured from its start to the cycles-th finished run. */
async function workerCycles(opts) {
  const c = s.client(s.runtimeKey, { ...opts, onAnswer: () => sent.n++ });
  const kind = `worker-${randomUUID()}`;
  for (let i = 0; i < concurrency; i++) await c.enqueueRun(spec(kind));
  const one = async (n) => {
    let finished = 0;
    let started = 0;
    let done;
    const failures = [];
    const reached = new Promise((r) => (done = r));
    const stop = new AbortController();
    const w = new Worker(
      c,
      {
        ...release,
        kinds: [kind],
        concurrency,
        leaseSeconds: 600,
        waitSeconds: 1,
        shutdownGraceMs: 30_000,
        logger: quietLogger,
        hooks: {
          finished: (r) => {
            if (r.outcome === "succeeded") {
              if (++finished === n) done();
            } else if (finished < n) failures.push(`${r.outcome}: ${r.error ?? r.settleError}`);
          },
        },
      },
      async (lease, signal) => {
        for (let seq = 1; seq <= 3; seq++) {
          await lease.checkpoint(
            { phase: "acting", stateRef: `bench://state/${seq}`, hash: `${lease.fencingToken.toString(16).padStart(16, "0")}${seq.toString(16).padStart(16, "0")}` },
            { signal },
          );
        }
        // The next run, so the queue stays as deep as the handlers (one more after the last: drained below).
        if (++started <= n) await c.enqueueRun(spec(kind), { signal });
      },
    );
    let running;
    const m = await cpuOf(async () => {
      running = w.run(stop.signal);
      await reached;
    });
    stop.abort();
    await running;
    if (failures.length > 0) throw new Error(`runs did not succeed: ${failures.slice(0, 3).join("; ")}`);
    return m;
  };
  await one(100); // warm-up
  const m = await one(cycles);
  perCycle.set("worker", m.requests / cycles);
  return m.cpuUs / cycles;
}

/** Requests a cycle sent in the last measured round of each kind of cycle (6, plus empty claims). */
const perCycle = new Map();
const scenarios = [];
for (const [name, opts] of Object.entries(transports)) {
  scenarios.push([`request/${name}`, () => requestLoop(opts)]);
  scenarios.push([`cycle/plain/${name}`, () => plainCycles(opts)]);
  scenarios.push([`cycle/worker/${name}`, () => workerCycles(opts)]);
}
const results = new Map();
try {
  for (let r = 0; r < Number(a.rounds); r++) {
    for (const [name, f] of scenarios) {
      if (a.only && !name.includes(a.only)) continue;
      const us = await f();
      if (!results.has(name)) results.set(name, []);
      results.get(name).push(us);
      process.stderr.write(`round ${r + 1} ${name}: ${us.toFixed(0)} µs\n`);
    }
  }
} finally {
  await s.stop();
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
console.log(`node ${process.version}, ${requests} requests, ${cycles} cycles of 6 requests, concurrency ${concurrency}; CPU µs of this process`);
console.log("| scenario | median | range | per request (÷ 6) |");
console.log("|---|---|---|---|");
for (const [name, xs] of results) {
  const per = name.startsWith("cycle/") ? (median(xs) / 6).toFixed(0) : median(xs).toFixed(0);
  console.log(`| ${name} | ${median(xs).toFixed(0)} | ${Math.min(...xs).toFixed(0)} to ${Math.max(...xs).toFixed(0)} | ${per} |`);
}
for (const [kind, n] of perCycle) console.log(`requests sent per ${kind} cycle (last round): ${n.toFixed(2)}`);
