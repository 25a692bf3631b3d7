// verifyWebhook against the Standard Webhooks specification's published test vector
// (spec/standard-webhooks.md and its libraries' tests), and each way a webhook fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import { verifyWebhook, WebhookVerificationError } from "../dist/index.js";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const ts = "1614265330";
const body = '{"test": 2432232314}';
const sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const now = new Date(Number(ts) * 1000);
const headers = (more = {}) => ({ "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig, ...more });

test("the specification's test vector verifies", () => {
  verifyWebhook(secret, headers(), body, { now });
  verifyWebhook(secret, new Headers(headers()), Buffer.from(body), { now });
  // Several signatures: any one that matches will do, other versions are ignored.
  verifyWebhook(secret, headers({ "webhook-signature": `v1a,abc v1,Zm9v ${sig}` }), body, { now });
  // Within the tolerance either way.
  verifyWebhook(secret, headers(), body, { now: new Date(now.getTime() + 299_000) });
  verifyWebhook(secret, headers(), body, { now: new Date(now.getTime() - 299_000) });
});

test("a changed byte anywhere fails", () => {
  const fails = (h, b, why) => assert.throws(() => verifyWebhook(secret, h, b, { now }), (e) => e instanceof WebhookVerificationError && why.test(e.message));
  for (let i = 0; i < body.length; i++) {
    const b = Buffer.from(body);
    b[i] ^= 1;
    fails(headers(), b, /no signature matches/);
  }
  fails(headers({ "webhook-id": id.slice(0, -1) + "K" }), body, /no signature matches/);
  fails(headers({ "webhook-timestamp": String(Number(ts) + 1) }), body, /no signature matches/);
  fails(headers({ "webhook-signature": sig.replace("g0h", "g1h") }), body, /no signature matches/);
  fails(headers({ "webhook-signature": sig.replace("v1,", "v2,") }), body, /no signature matches/);
  assert.throws(() => verifyWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx", headers(), body, { now }), WebhookVerificationError);
});

test("too old, too new, missing or malformed headers fail", () => {
  assert.throws(() => verifyWebhook(secret, headers(), body, { now: new Date(now.getTime() + 301_000) }), /too old/);
  assert.throws(() => verifyWebhook(secret, headers(), body, { now: new Date(now.getTime() - 301_000) }), /future/);
  assert.throws(() => verifyWebhook(secret, headers(), body, { now: new Date(now.getTime() + 3_601_000), toleranceSeconds: 3600 }), /too old/);
  verifyWebhook(secret, headers(), body, { now: new Date(now.getTime() + 3_599_000), toleranceSeconds: 3600 });
  assert.throws(() => verifyWebhook(secret, headers({ "webhook-signature": undefined }), body, { now }), /missing/);
  assert.throws(() => verifyWebhook(secret, headers({ "webhook-timestamp": "1614265330.5" }), body, { now }), /whole seconds/);
  assert.throws(() => verifyWebhook("whsec_", headers(), body, { now }), /secret/);
});
