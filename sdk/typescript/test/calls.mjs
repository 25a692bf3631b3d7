// Every operation as the TypeScript SDK sends it, each way that takes another repeat class
// (for the retry-table test).
const id = "6f1c2b9e-3d4a-4c5b-9e8f-1a2b3c4d5e6f";
const specOf = (key) => ({ subject: "s", kind: "k", projectId: "p", agentId: "a", stepId: id, snapshotId: id, ...(key ? { idempotencyKey: key } : {}) });
const page = { status: 200, body: '{"items":[]}' };

/** variants: operationId -> [{ name, bodySet, ifMatch, call(client), ok }]. */
export const variants = {
  acknowledgeCancellation: [{ name: "acknowledgeCancellation", call: (c) => c.acknowledgeCancellation(id, { fencingToken: 1 }) }],
  acquireTaskLock: [{ name: "acquireTaskLock", call: (c) => c.acquireTaskLock("a", "t", { holderId: "h", ttlSeconds: 5 }) }],
  answerDecision: [{ name: "answerDecision", ifMatch: true, call: (c) => c.answerDecision(id, '"1"', { status: "approved" }) }],
  appendCheckpoint: [
    { name: "appendCheckpoint", call: (c) => c.appendCheckpoint(id, { fencingToken: 1, sequence: 0, phase: "acting", adapterStateRef: "s", adapterVersion: "1", hash: "h" }) },
  ],
  cancelRun: [{ name: "cancelRun", call: (c) => c.cancelRun(id) }],
  claimRun: [{ name: "claimRun", ok: { status: 204, body: "" }, call: (c) => c.claimRun({ holderId: "h", releaseId: "r", adapterVersion: "1", modelProfileId: "m" }) }],
  completeAttempt: [{ name: "completeAttempt", call: (c) => c.completeAttempt(id, { fencingToken: 1, state: "succeeded" }) }],
  continueRun: [{ name: "continueRun", call: (c) => c.continueRun(id) }],
  createDelegation: [
    { name: "createDelegation", call: (c) => c.createDelegation(id, { fencingToken: 1, purpose: "p", child: specOf() }) },
    { name: "createDelegationWithKey", bodySet: true, call: (c) => c.createDelegation(id, { fencingToken: 1, purpose: "p", child: specOf("k") }) },
  ],
  enqueueRun: [
    { name: "enqueueRun", call: (c) => c.enqueueRun(specOf()) },
    { name: "enqueueRunWithKey", bodySet: true, call: (c) => c.enqueueRun(specOf("k")) },
  ],
  finishCall: [
    { name: "finishCall", call: (c) => c.finishCall(id, id, { fencingToken: 1, status: "succeeded" }) },
    { name: "finishCallIfMatch", ifMatch: true, call: (c) => c.finishCall(id, id, { fencingToken: 1, status: "succeeded" }, '"1"') },
  ],
  getAttempt: [{ name: "getAttempt", call: (c) => c.getAttempt(id) }],
  getAttemptTimeline: [{ name: "getAttemptTimeline", ok: page, call: (c) => c.getAttemptTimeline(id) }],
  getCall: [{ name: "getCall", call: (c) => c.getCall(id, id) }],
  getCheckpoint: [{ name: "getCheckpoint", call: (c) => c.getCheckpoint(id, id) }],
  getDecision: [{ name: "getDecision", call: (c) => c.getDecision(id) }],
  getDelegation: [{ name: "getDelegation", call: (c) => c.getDelegation(id) }],
  getHealth: [{ name: "health", call: (c) => c.health() }],
  getLastCheckpoint: [{ name: "lastCheckpoint", call: (c) => c.lastCheckpoint(id) }],
  getMetrics: [{ name: "metrics", ok: { status: 200, body: "ledger_up 1\n", type: "text/plain" }, call: (c) => c.metrics() }],
  getOpenAPI: [{ name: "openAPI", call: (c) => c.openAPI() }],
  getProject: [{ name: "getProject", call: (c) => c.getProject("p") }],
  getReadiness: [{ name: "readiness", call: (c) => c.readiness() }],
  getRelease: [{ name: "getRelease", call: (c) => c.getRelease("r", "1") }],
  getRun: [{ name: "getRun", call: (c) => c.getRun(id) }],
  heartbeatAttempt: [{ name: "heartbeat", call: (c) => c.heartbeat(id, { fencingToken: 1 }) }],
  listAttemptDecisions: [{ name: "listAttemptDecisions", ok: page, call: (c) => c.listAttemptDecisions(id) }],
  listAttempts: [{ name: "listAttempts", ok: page, call: (c) => c.listAttempts() }],
  listCalls: [{ name: "listCalls", ok: page, call: (c) => c.listCalls(id) }],
  listCheckpoints: [{ name: "listCheckpoints", ok: page, call: (c) => c.listCheckpoints(id) }],
  insightAttemptsEnded: [{ name: "insightAttemptsEnded", call: (c) => c.insightAttemptsEnded() }],
  insightAttemptsPerRun: [{ name: "insightAttemptsPerRun", call: (c) => c.insightAttemptsPerRun() }],
  insightCalls: [{ name: "insightCalls", call: (c) => c.insightCalls() }],
  insightClaimLatency: [{ name: "insightClaimLatency", call: (c) => c.insightClaimLatency() }],
  insightDecisions: [{ name: "insightDecisions", call: (c) => c.insightDecisions() }],
  insightLeasesLost: [{ name: "insightLeasesLost", call: (c) => c.insightLeasesLost({ groupBy: "agent" }) }],
  insightRunsEnded: [{ name: "insightRunsEnded", call: (c) => c.insightRunsEnded({ groupBy: "release" }) }],
  listDecisions: [{ name: "listDecisions", ok: page, call: (c) => c.listDecisions() }],
  listDelegations: [{ name: "listDelegations", ok: page, call: (c) => c.listDelegations(id) }],
  listProjects: [{ name: "listProjects", ok: page, call: (c) => c.listProjects() }],
  listReleases: [{ name: "listReleases", ok: page, call: (c) => c.listReleases() }],
  listRuns: [{ name: "listRuns", ok: page, call: (c) => c.listRuns() }],
  patchAttempt: [
    { name: "setPhase", call: (c) => c.patchAttempt(id, { fencingToken: 1, phase: "acting" }) },
    { name: "correction", bodySet: true, call: (c) => c.patchAttempt(id, { fencingToken: 1, correction: true }) },
  ],
  putProject: [
    { name: "putProject", call: (c) => c.putProject("p", {}) },
    { name: "putProjectIfMatch", ifMatch: true, call: (c) => c.putProject("p", {}, '"1"') },
  ],
  putRelease: [
    { name: "putRelease", call: (c) => c.putRelease("r", "1", { manifestHash: "0".repeat(64), contentRefs: [] }) },
    { name: "putReleaseIfMatch", ifMatch: true, call: (c) => c.putRelease("r", "1", { manifestHash: "0".repeat(64), contentRefs: [] }, '"1"') },
  ],
  recordCall: [{ name: "recordCall", call: (c) => c.recordCall(id, { fencingToken: 1, sequence: 0, kind: "tool", target: "t", requestHash: "h" }) }],
  releaseAttempt: [{ name: "releaseAttempt", call: (c) => c.releaseAttempt(id, { fencingToken: 1 }) }],
  releaseTaskLock: [{ name: "releaseTaskLock", ok: { status: 204, body: "" }, call: (c) => c.releaseTaskLock("a", "t", "h") }],
  requestDecision: [{ name: "requestDecision", call: (c) => c.requestDecision(id, { fencingToken: 1, kind: "approval" }) }],
};
