import type { AttemptError } from "./generated.js";

// Bounds of what errorOf sends, as the Go SDK's ErrorOf: the service refuses a longer
// message (2,000 UTF-16 code units: api.MaxErrorMessage, the document's AttemptError
// message maxLength, which a test holds this to) or larger details (16 KiB compacted); stacks and chains
// are cut well inside that.
const maxMessage = 2000;
const maxStackLines = 64;
const maxStackChars = 8 << 10;
const maxChain = 8;
const maxChainItem = 512;
const maxDetailsChars = 12 << 10;

const codeAlphabet = /^[a-z0-9_.-]{1,64}$/;
// Node's own error codes ("ENOENT", "ERR_INVALID_ARG_TYPE"), which it sets on errors whose
// class is only Error.
const nodeCode = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * errorOf describes what a handler threw for the ledger, as the Worker sends it with the
 * attempt's end: the code is the error's own `code` when it is a valid one (1 to 64 of a-z,
 * 0-9, '_', '.', '-') or one of Node's, lowered ("ENOENT" is "enoent"), else its class name
 * lowered and cut to that alphabet ("TypeError" is "typeerror"; a plain Error is "error"); the message is its own, cut to the service's bound;
 * the details hold the type, the stack and the chain of causes. The Worker's own markers
 * (permanent, retryAfter) are taken off first: they say how to settle, not what went wrong.
 */
export function errorOf(thrown: unknown): AttemptError {
  let err = thrown;
  for (let i = 0; i < 4 && err instanceof Error && (err.name === "PermanentError" || err.name === "RetryAfterError"); i++) err = err.cause;
  if (!(err instanceof Error)) {
    return { code: "thrown", message: cleanText(printable(err), maxMessage), details: { type: typeof err } };
  }
  const own = (err as { code?: unknown }).code;
  const code =
    typeof own === "string" && codeAlphabet.test(own)
      ? own
      : typeof own === "string" && nodeCode.test(own)
        ? own.toLowerCase()
        : codeOfName(err.constructor?.name || err.name);
  const details: Record<string, unknown> = { type: err.constructor?.name || err.name };
  if (err.stack) details.stack = stackLines(err.stack);
  const chain: string[] = [];
  for (let e: unknown = err; e !== undefined && e !== null && chain.length < maxChain; e = e instanceof Error ? e.cause : undefined) {
    chain.push(cleanText(e instanceof Error ? e.message : printable(e), maxChainItem));
  }
  if (chain.length > 1) details.chain = chain;
  return { code, message: cleanText(err.message, maxMessage), details: bounded(details) };
}

function codeOfName(name: string): string {
  const code = name
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, "_")
    .replace(/^[_.]+|[_.]+$/g, "")
    .slice(0, 64);
  return code || "error";
}

function printable(v: unknown): string {
  try {
    return typeof v === "object" ? JSON.stringify(v) ?? String(v) : String(v);
  } catch {
    return "(not printable)";
  }
}

function stackLines(stack: string): string[] {
  const out: string[] = [];
  let total = 0;
  for (const line of stack.split("\n").slice(0, maxStackLines)) {
    if (total + line.length > maxStackChars) break;
    total += line.length;
    out.push(cleanText(line, maxChainItem));
  }
  return out;
}

/** cleanText: text without control characters but tab and line breaks, at most max UTF-16 code units (cut on a character, ending in "…"). */
function cleanText(s: string, max: number): string {
  // eslint-disable-next-line no-control-regex
  let t = s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, " ").replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
  if (t.length > max) {
    let cut = max - 1;
    if (cut > 0 && t.charCodeAt(cut - 1) >= 0xd800 && t.charCodeAt(cut - 1) <= 0xdbff) cut--;
    t = t.slice(0, cut) + "\u2026";
  }
  return t;
}

function bounded(details: Record<string, unknown>): Record<string, unknown> | undefined {
  for (const drop of ["", "stack", "chain"]) {
    if (drop) delete details[drop];
    if (JSON.stringify(details).length <= maxDetailsChars) return details;
  }
  return undefined;
}
