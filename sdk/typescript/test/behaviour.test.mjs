// api/worker.json is the Workers' one behaviour table: the SDK's table is that file, and the
// Worker holds to it (its defaults, and its heartbeat at the table's fraction of a lease).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { behaviour, refusalBackoffMs, refusalBackoffMaxMs, refusalLogEveryMs, Worker } from "../dist/index.js";
import { repoRoot } from "./server.mjs";

/** strip drops the table's $comment members. */
function strip(v) {
  if (Array.isArray(v)) return v.map(strip);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).filter(([k]) => k !== "$comment").map(([k, x]) => [k, strip(x)]));
  return v;
}

test("the SDK's behaviour table is api/worker.json", () => {
  const table = strip(JSON.parse(readFileSync(join(repoRoot, "api", "worker.json"), "utf8")));
  assert.deepEqual(JSON.parse(JSON.stringify(behaviour)), table);
  assert.equal(refusalBackoffMs, table.claimBackoff.refusedBaseMs);
  assert.equal(refusalBackoffMaxMs, table.claimBackoff.refusedMaxMs);
  assert.equal(refusalLogEveryMs, table.claimBackoff.refusalLogEveryMs);
});

test("a Worker's defaults are the table's", () => {
  const w = new Worker({}, { releaseId: "r", adapterVersion: "1", modelProfileId: "m", concurrency: 8 }, async () => {});
  const cfg = Reflect.get(w, "cfg");
  assert.equal(cfg.waitSeconds, behaviour.claim.waitSeconds);
  assert.equal(cfg.longPolls, behaviour.claim.longPolls);
  assert.equal(cfg.idleWaitMs, behaviour.claim.idleWaitMs);
  assert.equal(cfg.shutdownGraceMs, behaviour.shutdown.graceMs);
});
