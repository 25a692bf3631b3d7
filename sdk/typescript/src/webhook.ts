// Verifying a webhook the service sent, by the Standard Webhooks specification
// (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
// HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}" with the endpoint's secret,
// sent as "v1,<base64>" in webhook-signature. The Go SDK's client.VerifyWebhook is the same.
import { createHmac, timingSafeEqual } from "node:crypto";

/** WebhookVerificationError: the webhook is not one the holder of the secret sent, or is too old or too new. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

/** The headers of a webhook: a plain object (node:http's IncomingHttpHeaders fits) or a fetch Headers. */
export type WebhookHeaders = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** How far the webhook-timestamp may be from now, either way, seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, for tests (default Date.now()). */
  now?: Date;
}

const defaultToleranceSeconds = 5 * 60;

function header(h: WebhookHeaders, name: string): string | undefined {
  if (typeof (h as { get?: unknown }).get === "function") return (h as { get(n: string): string | null }).get(name) ?? undefined;
  const rec = h as Record<string, string | string[] | undefined>;
  let v = rec[name];
  if (v === undefined) {
    for (const k of Object.keys(rec)) if (k.toLowerCase() === name) v = rec[k];
  }
  return Array.isArray(v) ? v[0] : v;
}

/**
 * verifyWebhook checks that body (the request's raw bytes, exactly as received: parse it
 * only afterwards) was signed with secret (`whsec_<base64>`, as the endpoint was given it)
 * under the headers' webhook-id and webhook-timestamp, and that the timestamp is within the
 * tolerance of now. Any one of the space-separated signatures may match (two are sent while
 * a secret rotates); signatures of versions other than v1 are ignored. The comparison is in
 * constant time. It throws WebhookVerificationError, saying why, when the webhook fails.
 */
export function verifyWebhook(secret: string, headers: WebhookHeaders, body: string | Uint8Array, opts: VerifyWebhookOptions = {}): void {
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
  if (key.length === 0) throw new WebhookVerificationError("ledger webhook: the secret is empty or not base64");
  const id = header(headers, "webhook-id");
  const ts = header(headers, "webhook-timestamp");
  const sigs = header(headers, "webhook-signature");
  if (!id || !ts || !sigs) throw new WebhookVerificationError("ledger webhook: missing webhook-id, webhook-timestamp or webhook-signature");
  if (!/^\d{1,12}$/.test(ts)) throw new WebhookVerificationError("ledger webhook: webhook-timestamp is not whole seconds since 1970");
  const tolerance = opts.toleranceSeconds ?? defaultToleranceSeconds;
  const now = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  const at = Number(ts);
  if (at < now - tolerance) throw new WebhookVerificationError("ledger webhook: the timestamp is too old");
  if (at > now + tolerance) throw new WebhookVerificationError("ledger webhook: the timestamp is in the future");
  const mac = createHmac("sha256", key);
  mac.update(`${id}.${ts}.`);
  mac.update(typeof body === "string" ? Buffer.from(body, "utf8") : body);
  const want = mac.digest();
  for (const s of sigs.split(" ")) {
    const comma = s.indexOf(",");
    if (comma < 0 || s.slice(0, comma) !== "v1") continue;
    const got = Buffer.from(s.slice(comma + 1), "base64");
    if (got.length === want.length && timingSafeEqual(got, want)) return;
  }
  throw new WebhookVerificationError("ledger webhook: no signature matches");
}
