// A toy agent runtime built on the ledger TypeScript SDK (@ledger/client), the twin of
// examples/worker. Each run it handles takes a number of steps, writes a checkpoint after
// each, records one tool call and, with --decision, asks a person to approve half way.
// Killed at any point and started again, it resumes each run from its last checkpoint: the
// steps already checkpointed are not done again.
//
//	npm install && npm run build
//	LEDGER_URL=http://localhost:8080 LEDGER_KEY=<runtime key> LEDGER_ADMIN_KEY=<admin key> \
//	  node dist/main.js --enqueue 2 --decision
//
// --enqueue N queues N runs first (creating the project with the admin key when one is
// given). SIGINT or SIGTERM stops it gracefully: running steps get --grace to
// finish, then their runs are given back uncharged. --runs N exits after N runs settle.
import { parseArgs } from "node:util";
import { randomUUID } from "node:crypto";
import {
  Client,
  Worker,
  isPreconditionRequired,
  isUnknownProject,
  manifestHash,
  permanent,
  type Lease,
} from "@ledger/client";

/** durationMs reads a duration as examples/worker's flags take it ("250ms", "1.5s", "2m"; a bare number is seconds). */
function durationMs(v: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v.trim());
  if (!m) throw new Error(`${flag} ${v}: want a duration such as 500ms, 2s or 1m`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[(m[2] ?? "s") as "ms" | "s" | "m"];
}

const { values: flags } = parseArgs({
  options: {
    url: { type: "string", default: process.env.LEDGER_URL ?? "http://localhost:8080" },
    key: { type: "string", default: process.env.LEDGER_KEY ?? "" },
    "admin-key": { type: "string", default: process.env.LEDGER_ADMIN_KEY ?? "" },
    project: { type: "string", default: "toys" },
    kind: { type: "string", default: "toy" },
    release: { type: "string", default: "toy-agent-ts" },
    adapter: { type: "string", default: "1.0" },
    model: { type: "string", default: "toy-model" },
    steps: { type: "string", default: "5" },
    "step-time": { type: "string", default: "1s" },
    decision: { type: "boolean", default: false },
    enqueue: { type: "string", default: "0" },
    runs: { type: "string", default: "0" },
    concurrency: { type: "string", default: "4" },
    grace: { type: "string", default: "10s" },
  },
});

const cfg = {
  url: flags.url!,
  key: flags.key!,
  adminKey: flags["admin-key"]!,
  project: flags.project!,
  kind: flags.kind!,
  release: flags.release!,
  adapter: flags.adapter!,
  model: flags.model!,
  steps: Number(flags.steps),
  stepMs: durationMs(flags["step-time"]!, "--step-time"),
  decision: flags.decision!,
  enqueue: Number(flags.enqueue),
  runs: Number(flags.runs),
  concurrency: Number(flags.concurrency),
  graceMs: durationMs(flags.grace!, "--grace"),
};
if (!cfg.key) throw new Error("no key: set LEDGER_KEY or --key to a runtime key");
if (!(cfg.steps >= 2)) throw new Error("--steps must be at least 2");

/** The step that makes the tool call. */
const toolStep = 1;

/** sleep waits ms, or rejects with the signal's reason when it aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });
}

/** The toy agent: its state is the number of steps done, kept in the checkpoint as "step=N". */
async function handle(lease: Lease, signal: AbortSignal): Promise<void> {
  const id = lease.runId;
  const last = await lease.resume({ signal });
  let done = 0;
  if (last) {
    done = Number(last.adapterStateRef.replace(/^step=/, ""));
    if (!Number.isInteger(done)) throw permanent(new Error(`checkpoint state ${last.adapterStateRef}`));
    console.log(`run ${id}: resuming after step ${done} of ${cfg.steps} (attempt ${lease.run.attemptsSpent + 1})`);
  } else {
    console.log(`run ${id}: starting, ${cfg.steps} steps`);
  }
  for (let step = done; step < cfg.steps; step++) {
    if (step === toolStep) {
      // The tool call is recorded with its outcome; a resume after this step's checkpoint
      // does not make it again.
      await lease.call({ kind: "tool", target: "toy.search" }, async () => {
        await sleep(cfg.stepMs / 4, signal);
        return `toy-receipt-${id.slice(0, 8)}`;
      });
    }
    if (cfg.decision && step === Math.floor(cfg.steps / 2)) {
      // decide asks under a key derived from the step, so a run resumed after SIGTERM or
      // SIGKILL gets the same decision (and its answer) instead of asking again. Past the
      // Worker's parkAfterMs, or on SIGTERM, it parks the run (no lease, no attempt spent)
      // and throws ParkedError, which the Worker counts as "parked", not as a failure.
      console.log(`run ${id}: waiting for approval at step ${step} (answer it in the decision inbox)`);
      const closed = await lease.decide({ kind: "approval", recommendation: "carry on", key: `approve-step-${step}` }, { signal });
      if (closed.status !== "approved") throw permanent(new Error(`decision ${closed.status}`));
    }
    await sleep(cfg.stepMs, signal);
    await lease.checkpoint({ phase: step + 1 === cfg.steps ? "finalizing" : "acting", stateRef: `step=${step + 1}` });
    console.log(`run ${id}: step ${step + 1}/${cfg.steps} done`);
  }
}

/** register makes sure the release the worker runs is registered and active. */
async function register(c: Client): Promise<void> {
  const contentRefs = [`toy://agents/${cfg.release}/${cfg.adapter}`];
  try {
    await c.putRelease(cfg.release, cfg.adapter, { manifestHash: manifestHash(contentRefs), contentRefs, state: "active" });
  } catch (err) {
    if (!isPreconditionRequired(err)) throw err;
    // Registered earlier and moved since (draining, say): make it active again.
    await c.updateRelease(cfg.release, cfg.adapter, (req) => void (req.state = "active"));
  }
}

/** enqueue queues cfg.enqueue runs, creating the project first when an admin key is given. */
async function enqueue(c: Client): Promise<void> {
  if (cfg.adminKey) {
    const admin = new Client({ baseUrl: cfg.url, key: cfg.adminKey });
    await admin.putProject(cfg.project, {}).catch((err) => {
      if (!isPreconditionRequired(err)) throw err; // it exists already
    });
  }
  for (let i = 0; i < cfg.enqueue; i++) {
    const id = randomUUID();
    try {
      const r = await c.enqueueRun({
        subject: `toy:${id}`, kind: cfg.kind, projectId: cfg.project, agentId: "toy-agent",
        stepId: randomUUID(), snapshotId: randomUUID(), idempotencyKey: `toy-${id}`,
      });
      console.log(`run ${r.runId}: enqueued`);
    } catch (err) {
      if (isUnknownProject(err)) throw new Error(`project ${cfg.project} does not exist: give an admin key (LEDGER_ADMIN_KEY) to create it`);
      throw err;
    }
  }
}

const client = new Client({ baseUrl: cfg.url, key: cfg.key, userAgent: "ledger-toy-worker-ts/1" });
await register(client);
if (cfg.enqueue > 0) await enqueue(client);

const stop = new AbortController();
process.once("SIGINT", () => stop.abort());
process.once("SIGTERM", () => stop.abort());
let settled = 0;
const worker = new Worker(
  client,
  {
    releaseId: cfg.release, adapterVersion: cfg.adapter, modelProfileId: cfg.model, kinds: [cfg.kind],
    concurrency: cfg.concurrency, shutdownGraceMs: cfg.graceMs,
    hooks: {
      finished: (r) => {
        console.log(`run ${r.lease.runId}: ${r.outcome}`);
        if (cfg.runs > 0 && ++settled >= cfg.runs) stop.abort();
      },
    },
  },
  handle,
);
console.log(`worker ${worker.holderId}: claiming ${cfg.kind} runs of release ${cfg.release}/${cfg.adapter} at ${cfg.url}`);
await worker.run(stop.signal);
