/**
 * The Worker's behaviour table: api/worker.json, the one table of the three SDKs' Workers
 * (test/behaviour.test.mjs checks that this is that file, value for value, and that the
 * Worker holds to it).
 */
export const behaviour = {
  heartbeat: { leaseDivisor: 3, minMs: 10 },
  claim: { waitSeconds: 5, longPolls: 2, idleWaitMs: 1000 },
  claimBackoff: {
    failedBaseMs: 500,
    failedMaxMs: 30_000,
    refusedBaseMs: 1000,
    refusedMaxMs: 60_000,
    refusalLogEveryMs: 60_000,
    heldJitterDivisor: 8,
    heldJitterMaxMs: 60_000,
  },
  shutdown: { graceMs: 30_000, settleTimeoutMinMs: 5000 },
  refusalClasses: {
    fatal: ["unauthorized", "forbidden", "invalid_request"],
    refused: { statusFrom: 400, statusTo: 499, except: [408, 429] },
    leaseLost: ["stale_lease", "lease_expired", "attempt_ended"],
    heartbeatLost: ["stale_lease", "lease_expired", "attempt_ended", "not_found"],
  },
} as const;
