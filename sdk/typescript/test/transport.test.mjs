// The client against fake servers that misbehave: an endless chunked answer, an answer one
// byte at a time, and redirects. Every case runs through both transports: the default
// (node:http) and a caller's fetch.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client, LedgerProblem, TransportError } from "../dist/index.js";

/** serve starts a server on a free port answering with handler; it closes after the test. */
async function serve(t, handler) {
  const srv = createServer(handler);
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => {
    srv.closeAllConnections();
    return new Promise((r) => srv.close(r));
  });
  return `http://127.0.0.1:${srv.address().port}`;
}

const transports = [
  ["node:http", {}],
  ["fetch", { fetch: (url, init) => fetch(url, init) }],
];

const run = { subject: "s", kind: "k", projectId: "p1", agentId: "a", stepId: "x", snapshotId: "y" };

for (const [name, opts] of transports) {
  test(`${name}: an endless answer is cut at maxResponseBytes`, async (t) => {
    let sent = 0;
    const url = await serve(t, (req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(16 << 10, 0x20);
      const more = () => {
        while (!res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) break;
        }
        if (!res.destroyed) res.once("drain", more);
      };
      res.on("error", () => {});
      more();
    });
    const c = new Client({ baseUrl: url, key: "k", maxResponseBytes: 256 << 10, retry: { maxAttempts: 1 }, ...opts });
    const err = await c.getRun("r1").catch((e) => e);
    assert.ok(err instanceof TransportError, String(err));
    assert.equal(err.status, 200);
    assert.match(String(err.cause?.message ?? err.message), /exceeds 262144 bytes/);
    assert.ok(sent >= 256 << 10, `the server sent ${sent} bytes`);
  });

  test(`${name}: an answer that trickles ends at the try's deadline`, async (t) => {
    const url = await serve(t, (req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const tick = setInterval(() => res.write(" "), 50);
      res.on("close", () => clearInterval(tick));
    });
    const c = new Client({ baseUrl: url, key: "k", timeoutMs: 400, retry: { maxAttempts: 1 }, ...opts });
    const t0 = Date.now();
    const err = await c.getRun("r1").catch((e) => e);
    const took = Date.now() - t0;
    assert.ok(err instanceof TransportError, String(err));
    assert.match(String(err.cause?.message ?? err.message), /within 400ms/);
    assert.ok(took < 5000, `ended after ${took} ms`);
  });

  test(`${name}: a slow head ends at the try's deadline too`, async (t) => {
    const url = await serve(t, () => {});
    const c = new Client({ baseUrl: url, key: "k", timeoutMs: 300, retry: { maxAttempts: 1 }, ...opts });
    const err = await c.getRun("r1").catch((e) => e);
    assert.ok(err instanceof TransportError && err.sent, String(err));
  });

  for (const status of [301, 302, 303, 307, 308]) {
    test(`${name}: a ${status} is refused, never followed`, async (t) => {
      let elsewhere = 0;
      const other = await serve(t, (req, res) => {
        elsewhere++;
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"items":[]}');
      });
      const url = await serve(t, (req, res) => {
        res.writeHead(status, { location: `${other}/v1/runs` });
        res.end();
      });
      const c = new Client({ baseUrl: url, key: "k", ...opts });
      const err = await c.enqueueRun(run).catch((e) => e);
      assert.ok(err instanceof LedgerProblem, String(err));
      assert.equal(err.status, status);
      assert.match(err.detail, /redirect to .*not followed/);
      assert.equal(elsewhere, 0, "the redirect was followed");
    });
  }

  test(`${name}: a refusal with a huge body is still that refusal`, async (t) => {
    const url = await serve(t, (req, res) => {
      res.writeHead(400, { "content-type": "application/problem+json" });
      res.end(Buffer.alloc(1 << 20, 0x20));
    });
    const c = new Client({ baseUrl: url, key: "k", maxResponseBytes: 64 << 10, ...opts });
    const err = await c.getRun("r1").catch((e) => e);
    assert.ok(err instanceof LedgerProblem, String(err));
    assert.equal(err.status, 400);
  });
}

test("node:http: connections are kept alive between calls", async (t) => {
  const sockets = new Set();
  const url = await serve(t, (req, res) => {
    sockets.add(req.socket);
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
  });
  const c = new Client({ baseUrl: url, key: "k" });
  for (let i = 0; i < 5; i++) await c.getRun("r1");
  assert.equal(sockets.size, 1);
});
