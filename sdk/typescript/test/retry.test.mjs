// The SDK decides every retry as api/retry.json says: for every operation, every way of
// sending it and every failure class, a scripted server counts the tries. The bundled
// table is the file's, and it covers the OpenAPI document's operations. Against the real
// server: a 429 is retried after its Retry-After.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client, LedgerProblem, MaybeAppliedError, TransportError, operations, retryTable } from "../dist/index.js";
import { present } from "../dist/retry.js";
import { variants } from "./calls.mjs";
import { repoRoot, spec, startServer } from "./server.mjs";

const table = JSON.parse(readFileSync(join(repoRoot, "api", "retry.json"), "utf8"));

/** classOf is the repeat class the table gives a variant. */
function classOf(op, v) {
  const e = table.operations[op];
  let c = e.repeat;
  if (v.bodySet) c = Object.values(e.whenBody ?? {})[0] ?? c;
  if (v.ifMatch && e.whenIfMatch) c = e.whenIfMatch;
  return c;
}

function retries(kind, cls) {
  const rule = table.failures[kind];
  if (rule === "always") return true;
  if (rule === "unlessOnce") return cls !== "once";
  if (rule === "never") return false;
  throw new Error(`failure class ${kind}: rule ${rule}`);
}

const problem = (status, code) => ({ status, body: JSON.stringify({ type: `urn:ledger:problem:${code}`, title: "x", status, code, detail: "scripted" }), type: "application/problem+json" });
const failures = {
  status429: problem(429, "rate_limited"),
  status502: problem(502, "bad_gateway"),
  status503: problem(503, "database_unavailable"),
  status504: problem(504, "gateway_timeout"),
  otherStatus: problem(409, "stale_lease"),
  noAnswer: { hangUp: true },
  unreadableAnswer: { cut: true },
  notSent: { notSent: true },
};

/** scripted starts a server answering each request with the next step; it counts requests. */
async function scripted(t, steps) {
  let seen = 0;
  const srv = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const s = steps[seen++] ?? { status: 418, body: "script ran out" };
      if (s.hangUp) return req.socket.destroy();
      if (s.cut) {
        res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
        res.write('{"runId":');
        return setTimeout(() => req.socket.destroy(), 5);
      }
      res.writeHead(s.status, s.status === 204 ? {} : { "content-type": s.type ?? "application/json", ...(s.headers ?? {}) });
      res.end(s.status === 204 ? undefined : s.body ?? "{}");
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => (srv.closeAllConnections(), srv.close(r))));
  return { url: `http://127.0.0.1:${srv.address().port}`, tries: () => seen };
}

// notInSdk: operations of the service the TypeScript SDK deliberately has no call of, each
// with the reason. Empty today: every route has a call.
const notInSdk = {};

test("the bundled table is api/retry.json, and the operation table's rules are its", () => {
  assert.deepEqual(JSON.parse(JSON.stringify(retryTable)), table);
  assert.deepEqual(Object.keys(operations).sort(), Object.keys(table.operations).sort());
  for (const [op, row] of Object.entries(operations)) {
    const { method, path, query, public: pub, roles, ...rule } = row;
    assert.deepEqual(rule, table.operations[op], `${op}: the operation table's rule is not api/retry.json's`);
  }
});

// The route coverage: every operation of the generated table (so every route the server
// registers) has a call of this SDK in this test, or a reason in notInSdk.
test("every operation of the operation table has a TypeScript SDK call", () => {
  const uncovered = Object.keys(operations).filter((op) => !variants[op] && !notInSdk[op]);
  assert.deepEqual(uncovered, [], "operations the TypeScript SDK does not call (add a method and a variant in test/calls.mjs, or a reason in notInSdk)");
  for (const op of Object.keys(variants)) assert.ok(operations[op], `test/calls.mjs calls ${op}, which is no operation`);
  for (const op of Object.keys(notInSdk)) assert.ok(operations[op] && !variants[op], `notInSdk names ${op}`);
});

test("a call takes its method and path from the operation table, and refuses an empty parameter unsent", async (t) => {
  const srv = await scripted(t, [{ status: 200, body: "{}" }]);
  const seen = [];
  const c = new Client({ baseUrl: srv.url, key: "k", onAnswer: (status, method, path) => seen.push(`${method} ${path}`) });
  await c.getRelease("r/1", "v 2");
  assert.deepEqual(seen, ["GET /v1/releases/r%2F1/adapters/v%202"]);
  await assert.rejects(c.getProject(""), /getProject: projectId is required/);
  assert.equal(srv.tries(), 1);
});

// api/retry.json's whenBody rule ("present and not null, false or empty"), the same cases in
// the three SDKs' tests.
test("whenBody takes a member present and not null, false or empty", () => {
  const cases = [[{"k": "x"}, "k", true], [{"k": ""}, "k", false], [{"k": 0}, "k", true], [{"k": false}, "k", false],  [{"k": true}, "k", true], [{"k": []}, "k", false], [{"k": {}}, "k", false], [{"k": {"a": 1}}, "k", true],  [{"k": null}, "k", false], [{}, "k", false], [{"a": {"k": "x"}}, "a.k", true], [{"a": "s"}, "a.k", false]];
  for (const [body, member, want] of cases) assert.equal(present(body, member), want, `${JSON.stringify(body)} ${member}`);
});

test("every operation and failure class retries as the table says", { concurrency: 16 }, async (t) => {
  for (const [op, vs] of Object.entries(variants)) {
    for (const v of vs) {
      for (const kind of Object.keys(table.failures)) {
        await t.test(`${op}/${v.name}/${kind}`, async (t) => {
          const f = failures[kind];
          assert.ok(f, `the test cannot make failure class ${kind}`);
          const cls = classOf(op, v);
          assert.ok(table.repeatClasses[cls], `repeat class ${cls} of ${op}`);
          const want = retries(kind, cls) ? 2 : 1;
          const ok = v.ok ?? { status: 200, body: "{}" };
          const srv = await scripted(t, f.notSent ? [ok] : [f, ok]);
          let fetches = 0;
          const fetchFn = (url, init) => {
            if (f.notSent && fetches++ === 0) return Promise.reject(new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) }));
            return fetch(url, init);
          };
          const c = new Client({ baseUrl: srv.url, key: "k", fetch: fetchFn });
          c.sleep = async () => {};
          let err;
          try {
            await v.call(c);
          } catch (e) {
            err = e;
          }
          const tries = srv.tries() + (f.notSent ? 1 : 0);
          assert.equal(tries, want, `class ${cls}: ${tries} tries, want ${want} (${err})`);
          if (want === 2) assert.equal(err, undefined, String(err));
          else assert.ok(err instanceof LedgerProblem || err instanceof TransportError, String(err));
        });
      }
      if (classOf(op, v) === "conditional") {
        for (const code of table.operations[op].ambiguous ?? []) {
          await t.test(`${op}/${v.name}/ambiguous-${code}`, async (t) => {
            const srv = await scripted(t, [{ hangUp: true }, problem(code === "precondition_failed" ? 412 : 409, code)]);
            const c = new Client({ baseUrl: srv.url, key: "k" });
            c.sleep = async () => {};
            await assert.rejects(v.call(c), MaybeAppliedError);
          });
        }
      }
    }
  }
});

test("a 429 from the real server is retried after its Retry-After", async (t) => {
  const s = await startServer(t, ["--rate-limit", "2", "--rate-burst", "2"]);
  const run = await s.runtime.enqueueRun(spec("limited"));
  const statuses = [];
  const waits = [];
  const c = s.client(s.runtimeKey, {
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      statuses.push(res.status);
      return res;
    },
  });
  const real = c.sleep;
  c.sleep = (ms, signal) => (waits.push(ms), real(ms, signal));
  const got = await Promise.all([1, 2, 3, 4].map(() => c.getRun(run.runId)));
  for (const r of got) assert.equal(r.runId, run.runId);
  assert.ok(statuses.includes(429), `statuses ${statuses}`);
  assert.ok(waits.length > 0 && waits.every((w) => w >= 1000), `waits ${waits}`);
});
