// Every call the SDK retries, with its answer dropped after it applied, applies once: a
// proxy forwards the request to the real server, reads the answer, and hangs up instead
// of passing it on. Calls the table does not repeat come back with the TransportError and
// are sent once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { MaybeAppliedError, TransportError, manifestHash } from "../dist/index.js";
import { release, spec, startServer } from "./server.mjs";

/** dropProxy forwards to upstream; an armed (method, path suffix) has its next answer dropped. */
async function dropProxy(t, upstream) {
  const armed = [];
  const seen = new Map();
  const srv = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const key = `${req.method} ${req.url.split("?")[0]}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    const i = armed.findIndex((a) => req.method === a.method && req.url.split("?")[0].endsWith(a.suffix));
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    const up = await fetch(upstream + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    const body = Buffer.from(await up.arrayBuffer());
    if (i >= 0) {
      armed.splice(i, 1);
      return req.socket.destroy(); // applied upstream; the answer is lost
    }
    const h = {};
    up.headers.forEach((v, k) => {
      if (k !== "content-encoding" && k !== "transfer-encoding" && k !== "connection") h[k] = v;
    });
    res.writeHead(up.status, h);
    res.end(body);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => (srv.closeAllConnections(), srv.close(r))));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    arm: (method, suffix) => armed.push({ method, suffix }),
    sent: (method, path) => seen.get(`${method} ${path}`) ?? 0,
  };
}

test("retried calls whose answers are dropped apply once", async (t) => {
  const s = await startServer(t);
  const proxy = await dropProxy(t, s.url);
  const fast = { retry: { baseMs: 1, maxMs: 5 } };
  const rt = s.client(s.runtimeKey, { baseUrl: proxy.url, ...fast });
  const admin = s.client(s.adminKey, { baseUrl: proxy.url, ...fast });
  const claim = async (kind) => {
    await s.runtime.enqueueRun(spec(kind));
    return s.runtime.claimRun({ ...release, holderId: "h", kinds: [kind] });
  };
  const count = async (gen) => {
    let n = 0;
    for await (const _ of gen) n++;
    return n;
  };

  await t.test("writes under a lease", async () => {
    const cl = await claim("drop-lease");
    const a = cl.attempt.attemptId;
    const token = cl.lease.fencingToken;
    proxy.arm("POST", "/checkpoints");
    await rt.appendCheckpoint(a, { fencingToken: token, sequence: 0, phase: "acting", adapterStateRef: "s", adapterVersion: "1.0", hash: "h" });
    assert.equal(await count(s.runtime.checkpoints(a)), 1);
    proxy.arm("POST", "/calls");
    const call = await rt.recordCall(a, { fencingToken: token, sequence: 0, kind: "tool", target: "t", requestHash: "h" });
    assert.equal(await count(s.runtime.calls(a)), 1);
    proxy.arm("PATCH", `/calls/${call.value.callId}`);
    const finished = await rt.finishCall(a, call.value.callId, { fencingToken: token, status: "succeeded" });
    assert.equal(finished.status, "succeeded");
    proxy.arm("PATCH", `/attempts/${a}`);
    assert.equal((await rt.patchAttempt(a, { fencingToken: token, phase: "observing" })).phase, "observing");
    proxy.arm("POST", "/heartbeat");
    await rt.heartbeat(a, { fencingToken: token });
    const key = `child-${randomUUID()}`;
    proxy.arm("POST", "/delegations");
    const del = await rt.createDelegation(a, { fencingToken: token, purpose: "p", child: spec("drop-child", { idempotencyKey: key }) });
    assert.equal(await count(s.runtime.delegations(a)), 1);
    assert.equal((await s.runtime.getDelegation(del.delegationId)).childRunId, del.childRunId);
    await s.admin.cancelRun(cl.run.runId);
    await s.runtime.heartbeat(a, { fencingToken: token });
    proxy.arm("POST", "/cancellation");
    await rt.acknowledgeCancellation(a, { fencingToken: token });
    proxy.arm("POST", "/complete");
    const done = await rt.completeAttempt(a, { fencingToken: token, state: "cancelled" });
    assert.equal(done.state, "cancelled");
    assert.equal((await s.runtime.getRun(cl.run.runId)).outcome, "cancelled");
  });

  await t.test("release, continue, cancel, enqueue with a key, release registration, task locks", async () => {
    const cl = await claim("drop-release");
    proxy.arm("POST", "/release");
    await rt.releaseAttempt(cl.attempt.attemptId, { fencingToken: cl.lease.fencingToken, charge: true, retryAfterSeconds: 3600 });
    const after = await s.runtime.getRun(cl.run.runId);
    assert.equal(after.attemptsSpent, 1, "released once: one attempt spent");

    proxy.arm("POST", `/runs/${cl.run.runId}/cancel`);
    assert.equal((await admin.cancelRun(cl.run.runId)).state, "ended");
    proxy.arm("POST", "/continue");
    const cont = await rt.continueRun(cl.run.runId);
    assert.equal(await count(s.runtime.runs({ subject: cl.run.subject })), 2, "the run and one continuation");
    assert.equal(cont.continuedFromRunId, cl.run.runId);

    const body = spec("drop-enqueue", { idempotencyKey: `k-${randomUUID()}` });
    proxy.arm("POST", "/v1/runs");
    await rt.enqueueRun(body);
    assert.equal(await count(s.runtime.runs({ subject: body.subject })), 1);

    const refs = ["oci://drop@sha256:1"];
    proxy.arm("PUT", "/adapters/9.9");
    const rel = await rt.putRelease("rel-drop", "9.9", { manifestHash: manifestHash(refs), contentRefs: refs, state: "verified" });
    assert.equal(rel.value.state, "verified");

    proxy.arm("PUT", "/tasks/t1");
    await rt.acquireTaskLock("agent-1", "t1", { holderId: "h1", ttlSeconds: 60 });
    proxy.arm("DELETE", "/tasks/t1");
    await rt.releaseTaskLock("agent-1", "t1", "h1");
    await s.runtime.acquireTaskLock("agent-1", "t1", { holderId: "h2", ttlSeconds: 60 }); // free again
  });

  await t.test("a conditional update whose repeat is refused may have applied", async () => {
    const cl = await claim("drop-decide");
    const d = await s.runtime.requestDecision(cl.attempt.attemptId, { fencingToken: cl.lease.fencingToken, kind: "approval" });
    const { etag } = await s.admin.getDecision(d.decisionId);
    proxy.arm("POST", "/answer");
    await assert.rejects(admin.answerDecision(d.decisionId, etag, { status: "approved" }), MaybeAppliedError);
    assert.equal((await s.admin.getDecision(d.decisionId)).value.status, "approved");
  });

  await t.test("calls not safe to repeat are sent once", async () => {
    const kind = "drop-once";
    await s.runtime.enqueueRun(spec(kind));
    proxy.arm("POST", "/v1/runs/claim");
    await assert.rejects(rt.claimRun({ ...release, holderId: "h", kinds: [kind] }), TransportError);
    assert.equal(proxy.sent("POST", "/v1/runs/claim"), 1);

    const cl = await claim("drop-once-2");
    const path = `/v1/attempts/${cl.attempt.attemptId}/decisions`;
    proxy.arm("POST", "/decisions");
    await assert.rejects(rt.requestDecision(cl.attempt.attemptId, { fencingToken: cl.lease.fencingToken, kind: "approval" }), TransportError);
    assert.equal(proxy.sent("POST", path), 1);
    assert.equal(await count(s.runtime.attemptDecisions(cl.attempt.attemptId)), 1);

    proxy.arm("PATCH", `/attempts/${cl.attempt.attemptId}`);
    await assert.rejects(rt.patchAttempt(cl.attempt.attemptId, { fencingToken: cl.lease.fencingToken, correction: true }), TransportError);
    assert.equal((await s.runtime.getAttempt(cl.attempt.attemptId)).value.correctionCount, 1);

    const body = spec("drop-nokey");
    proxy.arm("POST", "/v1/runs");
    await assert.rejects(rt.enqueueRun(body), TransportError);
    assert.equal(await count(s.runtime.runs({ subject: body.subject })), 1);
  });
});
