// The key is out of reach of everything that prints or serialises a client: console.log
// (util.format), util.inspect (with hidden members, at any depth), JSON.stringify, and the
// same of a Lease or a Worker, which hold the client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { format, inspect } from "node:util";
import { Client, Lease, Worker } from "../dist/index.js";

const key = "ldg_rt_SECRETSECRETSECRET0123456789";

test("the key is printed by nothing", () => {
  const c = new Client({ baseUrl: "http://127.0.0.1:1", key });
  const claim = {
    run: { runId: "r", leaseSeconds: 30 },
    attempt: { attemptId: "a", startedAt: new Date().toISOString(), adapterVersion: "1" },
    lease: { fencingToken: 1, leasedUntil: new Date(Date.now() + 30_000).toISOString() },
  };
  const lease = new Lease(c, claim);
  const w = new Worker(c, { releaseId: "r", adapterVersion: "1", modelProfileId: "m" }, async () => {});
  for (const [what, v] of [["client", c], ["lease", lease], ["worker", w]]) {
    const shown = [
      format("%o", v),
      format("%O", v),
      format("%s", v),
      format(v),
      inspect(v, { showHidden: true, depth: Infinity, getters: true }),
      JSON.stringify(v, (k, x) => (typeof x === "bigint" ? String(x) : x)),
      String(Object.values(v)),
      Object.getOwnPropertyNames(v).map((n) => String(v[n])).join(" "),
    ];
    for (const s of shown) assert.ok(!s.includes("SECRETSECRET"), `${what} printed its key: ${s.slice(0, 200)}`);
  }
  // The key still authenticates: the private field is what the transport reads.
  assert.equal(typeof c.getRun, "function");
});
