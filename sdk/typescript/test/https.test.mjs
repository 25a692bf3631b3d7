// The default transport over TLS, and a caller's abort, against fake servers. The certificate
// is made here with openssl (skipped where there is none) and trusted by a child process
// through NODE_EXTRA_CA_CERTS, as a deployment with a private CA would.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, TransportError } from "../dist/index.js";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist", "index.js");

function haveOpenssl() {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** tlsServer: an https server with a fresh self-signed certificate for 127.0.0.1, counting its connections. */
async function tlsServer(t) {
  const dir = mkdtempSync(join(tmpdir(), "ledger-tls-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
  const seen = { connections: 0, requests: [] };
  const srv = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    seen.requests.push({ url: req.url, authorization: req.headers.authorization });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ runId: "r1" }));
  });
  srv.on("secureConnection", () => seen.connections++);
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => {
    srv.closeAllConnections();
    return new Promise((r) => srv.close(r));
  });
  return { url: `https://127.0.0.1:${srv.address().port}`, cert, seen };
}

test("node:https: calls go over TLS on one kept-alive connection", { skip: !haveOpenssl() && "no openssl" }, async (t) => {
  const { url, cert, seen } = await tlsServer(t);
  const script = `
    const { Client } = await import(${JSON.stringify(dist)});
    const c = new Client({ baseUrl: process.argv[1], key: "k" });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await c.getRun("r1")).runId);
    console.log(JSON.stringify(ids));`;
  const out = await new Promise((resolve, reject) =>
    execFile(process.execPath, ["--input-type=module", "-e", script, url], { env: { ...process.env, NODE_EXTRA_CA_CERTS: cert } }, (err, stdout, stderr) =>
      err ? reject(new Error(stderr || String(err))) : resolve(stdout),
    ),
  );
  assert.deepEqual(JSON.parse(out), ["r1", "r1", "r1", "r1"]);
  assert.equal(seen.requests.length, 4);
  assert.ok(seen.requests.every((r) => r.url === "/v1/runs/r1" && r.authorization === "Bearer k"));
  assert.equal(seen.connections, 1, "each call opened a connection");
});

test("node:https: a certificate nobody trusts is refused, nothing sent", { skip: !haveOpenssl() && "no openssl" }, async (t) => {
  const { url, seen } = await tlsServer(t);
  const c = new Client({ baseUrl: url, key: "k", retry: { maxAttempts: 1 } });
  const err = await c.getRun("r1").catch((e) => e);
  assert.ok(err instanceof TransportError, String(err));
  assert.equal(seen.requests.length, 0);
});

test("node:http: a caller's abort ends the call with its reason and closes the request's socket", async (t) => {
  let closed;
  const gone = new Promise((r) => (closed = r));
  const srv = createHttpServer((req) => req.socket.once("close", closed)); // never answers
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => {
    srv.closeAllConnections();
    return new Promise((r) => srv.close(r));
  });
  const c = new Client({ baseUrl: `http://127.0.0.1:${srv.address().port}`, key: "k" });
  const ac = new AbortController();
  const why = new Error("enough");
  setTimeout(() => ac.abort(why), 100);
  const err = await c.getRun("r1", {}, { signal: ac.signal }).catch((e) => e);
  assert.equal(err, why);
  await gone; // the server saw the connection end: the abort did not leave it open
});
