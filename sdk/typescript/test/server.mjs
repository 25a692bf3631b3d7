// The real server for the tests: cmd/ledger built once (scripts/build-server.mjs, or here
// when missing), started on a temporary SQLite file as the Go tests do.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Client, manifestHash } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
export const sdkDir = join(here, "..");
export const repoRoot = join(sdkDir, "..", "..");
export const ledgerBin = process.env.LEDGER_BIN || join(sdkDir, ".ledger-test", "ledger");

/** buildServer builds cmd/ledger into ledgerBin unless it is there. */
export function buildServer() {
  if (existsSync(ledgerBin) && !process.env.LEDGER_REBUILD) return ledgerBin;
  execFileSync("go", ["build", "-o", ledgerBin, "./cmd/ledger"], { cwd: repoRoot, stdio: "inherit" });
  return ledgerBin;
}

export const release = { releaseId: "rel-ts", adapterVersion: "1.0", modelProfileId: "model-a" };

/**
 * startServer starts `ledger serve` on a fresh database and a free port, with a project p1
 * and an active release. It resolves to { url, adminKey, runtimeKey, admin, runtime, stop }.
 */
export async function startServer(t, extraArgs = []) {
  buildServer();
  const dir = mkdtempSync(join(tmpdir(), "ledger-ts-"));
  const proc = spawn(
    ledgerBin,
    ["serve", "--db", join(dir, "l.db"), "--addr", "127.0.0.1:0", "--reaper-interval", "100ms", "--purge-interval", "-1s", ...extraArgs],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  const ready = new Promise((resolve, reject) => {
    const check = () => {
      const admin = /admin key: (\S+)/.exec(out)?.[1];
      const runtime = /runtime key: (\S+)/.exec(out)?.[1];
      const addr = /"listening","addr":"([^"]+)"/.exec(err)?.[1];
      if (admin && runtime && addr) resolve({ admin, runtime, addr });
    };
    proc.stdout.on("data", (b) => ((out += b), check()));
    proc.stderr.on("data", (b) => ((err = (err + b).slice(-8192)), check()));
    proc.on("exit", (code) => reject(new Error(`ledger serve exited ${code}: ${err}`)));
  });
  const { admin, runtime, addr } = await ready;
  const url = `http://${addr}`;
  const stop = async () => {
    if (proc.exitCode === null) {
      const gone = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  t?.after?.(stop);
  const s = {
    url,
    dir,
    proc,
    adminKey: admin,
    runtimeKey: runtime,
    stop,
    client: (key, opts = {}) => new Client({ baseUrl: url, key, polling: { leastMs: 5, greatestMs: 50 }, ...opts }),
  };
  s.admin = s.client(admin);
  s.runtime = s.client(runtime);
  await s.admin.putProject("p1", {});
  const contentRefs = ["oci://agents/ts@sha256:abc"];
  await s.runtime.putRelease(release.releaseId, release.adapterVersion, { manifestHash: manifestHash(contentRefs), contentRefs, state: "active" });
  return s;
}

/** spec is an enqueue body of project p1 on a subject of its own. */
export function spec(kind, more = {}) {
  return { subject: `s-${randomUUID()}`, kind, projectId: "p1", agentId: "agent-1", stepId: randomUUID(), snapshotId: randomUUID(), maxAttempts: 5, ...more };
}

/** workerConfig: the test release, quick renewals, claims of kind. */
export function workerConfig(kind, more = {}) {
  return { ...release, kinds: [kind], leaseSeconds: 60, waitSeconds: 1, heartbeatEveryMs: 50, shutdownGraceMs: 60_000, logger: quietLogger, ...more };
}

export const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** eventually polls f until it returns a truthy value (the test's sync, bounded). */
export async function eventually(f, what = "condition", ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${ms}ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
