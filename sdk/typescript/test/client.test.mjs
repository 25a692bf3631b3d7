// The Client against the real server: problems, iterators, ETag helpers, manifestHash
// against the server's own check, abort signals; and the generated file's freshness.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import {
  LedgerProblem,
  canonicalJSON,
  errorOf,
  isInvalidRequest,
  isManifestMismatch,
  isNotFound,
  isPreconditionFailed,
  isStaleLease,
  manifestHash,
  sha256Hex,
} from "../dist/index.js";
import { generate } from "../scripts/generate.mjs";
import { buildServer, ledgerBin, repoRoot, sdkDir, spec, startServer } from "./server.mjs";

test("src/generated.ts is what the generator writes from the served document, api/operations.json and api/retry.json", () => {
  buildServer();
  const doc = JSON.parse(execFileSync(ledgerBin, ["openapi"], { encoding: "utf8", maxBuffer: 64 << 20 }));
  const table = JSON.parse(readFileSync(join(repoRoot, "api", "retry.json"), "utf8"));
  const optable = JSON.parse(readFileSync(join(repoRoot, "api", "operations.json"), "utf8"));
  const committed = readFileSync(join(sdkDir, "src", "generated.ts"), "utf8");
  assert.ok(generate(doc, table, optable) === committed, "src/generated.ts is stale: run scripts/regenerate at the repository root");
});

test("errorOf cuts a message to the bound the served document states, and no shorter", () => {
  buildServer();
  const doc = JSON.parse(execFileSync(ledgerBin, ["openapi"], { encoding: "utf8", maxBuffer: 64 << 20 }));
  const bound = doc.components.schemas.AttemptError.properties.message.maxLength;
  assert.ok(Number.isInteger(bound) && bound > 0, "the document states the error message's maxLength");
  const cut = errorOf(new Error("x".repeat(bound * 3))).message;
  assert.equal(cut.length, bound);
  assert.ok(cut.endsWith("\u2026"));
  assert.equal(errorOf(new Error("x".repeat(bound))).message, "x".repeat(bound));
});

test("canonicalJSON follows RFC 8785", () => {
  // RFC 8785 section 3.2.2.3's number examples, and ordering by UTF-16 code units.
  const cases = [
    [[333333333.33333329, 1e30, 4.5, 2e-3, 0.000001, 1e-7, -0, 1e21, 1e20], "[333333333.3333333,1e+30,4.5,0.002,0.000001,1e-7,0,1e+21,100000000000000000000]"],
    [{ "\u20ac": 1, "\r": 2, "\ud83d\ude00": 3, "1": 4, "\u0080": 5, "\u00f6": 6 }, '{"\\r":2,"1":4,"\u0080":5,"\u00f6":6,"\u20ac":1,"\ud83d\ude00":3}'],
    [{ b: [true, null, "a\u001fb\"\\"], a: { d: 1, c: 2 } }, '{"a":{"c":2,"d":1},"b":[true,null,"a\\u001fb\\"\\\\"]}'],
  ];
  for (const [v, want] of cases) assert.equal(canonicalJSON(v), want);
  assert.throws(() => canonicalJSON([NaN]));
  assert.equal(manifestHash(["a"]), sha256Hex('["a"]'));
});

test("the Client against the server", { concurrency: true }, async (t) => {
  const s = await startServer(t);

  await t.test("manifestHash agrees with the server's check, numbers and non-ASCII included", async () => {
    const refs = [
      "oci://agents/ts@sha256:abc",
      { uri: "s3://bucket/\u00e9t\u00e9/\u65e5\u672c", size: 1e21, ratio: 0.1, tiny: 1e-7, neg: -0, big: 9007199254740993, emoji: "\ud83d\ude00", sep: "\u2028" },
      [100, 1.5, -2.25e-10, { "\u00f6": 1, z: 2, a: 3, "\u20ac": 4 }],
    ];
    const r = await s.runtime.putRelease(`rel-${randomUUID()}`, "1", { manifestHash: manifestHash(refs), contentRefs: refs, state: "verified" });
    assert.equal(r.value.manifestHash, manifestHash(refs));
    // The server does check: the hash of a non-canonical form is refused.
    const err = await s.runtime
      .putRelease(`rel-${randomUUID()}`, "1", { manifestHash: sha256Hex(JSON.stringify(refs)), contentRefs: refs, state: "verified" })
      .catch((e) => e);
    assert.ok(isManifestMismatch(err), String(err));
  });

  await t.test("a problem carries status, code, detail, field errors and the request id", async () => {
    const err = await s.runtime.enqueueRun({ ...spec("bad"), subject: "", maxAttempts: 0 }).catch((e) => e);
    assert.ok(err instanceof LedgerProblem);
    assert.ok(isInvalidRequest(err));
    assert.ok(!isStaleLease(err));
    assert.equal(err.status, 400);
    assert.ok(err.detail);
    assert.ok(err.requestId);
    const fields = err.fieldErrors.map((f) => f.field).sort();
    assert.ok(fields.includes("subject"), JSON.stringify(err.fieldErrors));
    const missing = await s.runtime.getRun(randomUUID()).catch((e) => e);
    assert.ok(isNotFound(missing) && missing.status === 404);
  });

  await t.test("iterators follow nextCursor", async () => {
    const subject = `iter-${randomUUID()}`;
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await s.runtime.enqueueRun({ ...spec("iter"), subject, dueAt: undefined })).runId);
    const seen = [];
    let pages = 0;
    const c = s.client(s.runtimeKey, {
      fetch: (url, init) => (String(url).includes("/v1/runs?") && pages++, fetch(url, init)),
    });
    for await (const r of c.runs({ subject, limit: 2 })) seen.push(r.runId);
    assert.deepEqual(seen.sort(), ids.sort());
    assert.equal(pages, 3);
  });

  await t.test("a list filter goes as the parameter repeated, every item reaching the server", async () => {
    const subject = `not-${randomUUID()}`;
    const run = await s.runtime.enqueueRun({ ...spec("notlist"), subject, dueAt: undefined });
    const urls = [];
    const c = s.client(s.runtimeKey, { fetch: (url, init) => (urls.push(String(url)), fetch(url, init)) });
    const listed = async (notAgentId) => (await c.listRuns({ subject, notAgentId })).items.map((r) => r.runId);
    assert.deepEqual(await listed(["nobody"]), [run.runId]);
    assert.deepEqual(await listed(["nobody", run.agentId]), []);
    assert.ok(urls.at(-1).includes(`notAgentId=nobody&notAgentId=${encodeURIComponent(run.agentId)}`), urls.at(-1));
    assert.deepEqual(await listed([]), [run.runId]);
    assert.ok(!urls.at(-1).includes("notAgentId"), urls.at(-1));
  });

  await t.test("ETag helpers: read, change, re-apply after 412", async () => {
    const id = `proj-${randomUUID().slice(0, 8)}`;
    await s.admin.putProject(id, { retentionDays: 30 });
    const first = await s.admin.getProject(id);
    assert.match(first.etag, /^"[0-9a-f]{16}"$/);
    let calls = 0;
    const p = await s.admin.updateProject(id, async (req) => {
      calls++;
      if (calls === 1) await s.admin.putProject(id, { retentionDays: 31, active: true }, first.etag); // another writer first
      req.active = false;
    });
    assert.equal(calls, 2, "the change was applied again after the 412");
    assert.equal(p.active, false);
    assert.equal(p.retentionDays, 31, "the other writer's change is kept");
    const stale = await s.admin.putProject(id, { active: true }, first.etag).catch((e) => e);
    assert.ok(isPreconditionFailed(stale) && stale.status === 412);
  });

  await t.test("a cost budget: absent keeps it, null removes it", async () => {
    const id = `budget-${randomUUID().slice(0, 8)}`;
    const made = await s.admin.putProject(id, { dailyCostBudgetMicros: 5000 });
    assert.equal(made.value.dailyCostBudgetMicros, 5000);
    const kept = await s.admin.putProject(id, { retentionDays: 40 }, made.etag);
    assert.equal(kept.value.dailyCostBudgetMicros, 5000);
    const removed = await s.admin.putProject(id, { dailyCostBudgetMicros: null }, kept.etag);
    assert.equal(removed.value.dailyCostBudgetMicros, null);
    assert.equal(removed.value.costTodayMicros, 0);
    assert.equal(removed.value.costHeld, false);
  });

  await t.test("a schedule put, read, listed and deleted", async () => {
    const id = `sch-${randomUUID().slice(0, 8)}`;
    const made = await s.admin.putSchedule(id, { cron: "@daily", paused: true, run: spec("sched") });
    assert.equal(made.value.cron, "@daily");
    const read = await s.admin.getSchedule(id);
    assert.equal(read.etag, made.etag);
    const listed = [];
    for await (const x of s.admin.schedules()) listed.push(x.scheduleId);
    assert.ok(listed.includes(id), JSON.stringify(listed));
    await s.admin.deleteSchedule(id);
    assert.ok(isNotFound(await s.admin.getSchedule(id).catch((e) => e)));
  });

  await t.test("an AbortSignal ends a call", async () => {
    const run = await s.runtime.enqueueRun(spec("abort"));
    const ac = new AbortController();
    const waiting = s.runtime.getRun(run.runId, { waitSeconds: 30 }, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error("enough")), 50);
    await assert.rejects(waiting, /enough/);
  });
});
