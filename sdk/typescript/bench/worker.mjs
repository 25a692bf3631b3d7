// The TypeScript row of `ledger bench --workload sdk`: a Worker of --concurrency handlers
// runs whole runs (claim, three checkpoints, the next run's enqueue, complete) for
// --duration-ms and prints {"runs","requests","errors"} as one JSON line. The bench seeds
// one run of --kind per handler first.
import { parseArgs } from "node:util";
import { Client, Worker } from "../dist/index.js";

const { values: a } = parseArgs({
  options: {
    url: { type: "string" },
    key: { type: "string" },
    kind: { type: "string" },
    project: { type: "string" },
    release: { type: "string" },
    adapter: { type: "string" },
    model: { type: "string" },
    concurrency: { type: "string", default: "16" },
    "duration-ms": { type: "string", default: "10000" },
  },
});
let requests = 0;
const errors = {};
const client = new Client({
  baseUrl: a.url,
  key: a.key,
  userAgent: "ledger-bench-sdk-ts",
  onAnswer: (status) => {
    requests++;
    if (status >= 400 || status === 0) errors[`http_${status}`] = (errors[`http_${status}`] ?? 0) + 1;
  },
});
const end = Date.now() + Number(a["duration-ms"]);
const spec = () => ({
  subject: `bench-ts-${crypto.randomUUID()}`,
  kind: a.kind,
  projectId: a.project,
  agentId: "bench-agent",
  stepId: crypto.randomUUID(),
  snapshotId: crypto.randomUUID(),
});
let runs = 0;
const stop = new AbortController();
const w = new Worker(
  client,
  {
    releaseId: a.release,
    adapterVersion: a.adapter,
    modelProfileId: a.model,
    kinds: [a.kind],
    concurrency: Number(a.concurrency),
    leaseSeconds: 3600,
    waitSeconds: 1,
    shutdownGraceMs: 30_000,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    hooks: { finished: (r) => r.outcome === "succeeded" && Date.now() < end && runs++ },
  },
  async (lease, signal) => {
    for (let seq = 1; seq <= 3; seq++) {
      await lease.checkpoint(
        { phase: "acting", stateRef: `bench://state/${seq}`, hash: `${lease.fencingToken.toString(16).padStart(16, "0")}${seq.toString(16).padStart(16, "0")}` },
        { signal },
      );
    }
    if (Date.now() < end) await client.enqueueRun(spec(), { signal });
  },
);
setTimeout(() => stop.abort(), Math.max(0, end - Date.now()));
await w.run(stop.signal);
const cpu = process.cpuUsage(); // this process's CPU, for CPU per run beside runs/s
process.stdout.write(JSON.stringify({ runs, requests, errors, cpuMs: Math.round((cpu.user + cpu.system) / 1000) }) + "\n");
