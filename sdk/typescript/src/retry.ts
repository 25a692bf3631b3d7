import { operations, retryTable, type OperationId } from "./generated.js";

/** How a Client retries (api/retry.json's policy is the default). */
export interface RetryPolicy {
  /** How many times a call is sent at most (1: no retries). */
  maxAttempts: number;
  /** The first backoff and the cap of every backoff, in milliseconds. */
  baseMs: number;
  maxMs: number;
  /** The greatest Retry-After waited for; past it the call fails with the server's problem. */
  maxRetryAfterMs: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  maxAttempts: retryTable.policy.maxAttempts,
  baseMs: retryTable.policy.baseMs,
  maxMs: retryTable.policy.maxMs,
  maxRetryAfterMs: retryTable.policy.maxRetryAfterMs,
};

/** A failure class of api/retry.json. */
export type FailureClass = keyof typeof retryTable.failures;
/** A repeat class of api/retry.json. */
export type RepeatClass = keyof typeof retryTable.repeatClasses;

interface OperationRule {
  repeat: RepeatClass;
  whenBody?: Record<string, RepeatClass>;
  whenIfMatch?: RepeatClass;
  ambiguous?: readonly string[];
}

/** ruleOf is op's repeat rule, read from its row of the operation table (api/operations.json). */
function ruleOf(op: OperationId): OperationRule {
  const ops = operations as Record<string, OperationRule>;
  const r = ops[op.endsWith("Head") ? op.slice(0, -4) : op];
  if (!r) throw new Error(`ledger: ${op} has no entry in the operation table`);
  return r;
}

/** present: the dotted member of body is there and not null, false or empty. */
export function present(body: unknown, dotted: string): boolean {
  let v: unknown = body;
  for (const part of dotted.split(".")) {
    if (v === null || typeof v !== "object") return false;
    v = (v as Record<string, unknown>)[part];
  }
  if (v !== null && typeof v === "object") return Object.keys(v).length > 0; // [] and {} are empty
  return !(v === undefined || v === null || v === false || v === "");
}

/** repeatClassOf is the repeat class api/retry.json gives a call of op with body and If-Match. */
export function repeatClassOf(op: OperationId, body: unknown, ifMatch: boolean): RepeatClass {
  const r = ruleOf(op);
  let c = r.repeat;
  for (const [member, cls] of Object.entries(r.whenBody ?? {})) {
    if (present(body, member)) c = cls;
  }
  if (ifMatch && r.whenIfMatch) c = r.whenIfMatch;
  return c;
}

/** ambiguousCodes are the codes a repeat of an applied conditional call of op gets. */
export function ambiguousCodes(op: OperationId): readonly string[] {
  return ruleOf(op).ambiguous ?? [];
}

/** mayRepeat says whether a call of class is sent again after a failure of kind. */
export function mayRepeat(kind: FailureClass, cls: RepeatClass): boolean {
  switch (retryTable.failures[kind]) {
    case "always":
      return true;
    case "unlessOnce":
      return cls !== "once";
    default:
      return false;
  }
}

/** failureOfStatus is the failure class of a problem answer's status. */
export function failureOfStatus(status: number): FailureClass {
  switch (status) {
    case 429:
      return "status429";
    case 502:
      return "status502";
    case 503:
      return "status503";
    case 504:
      return "status504";
    default:
      return "otherStatus";
  }
}

/** doubled is min(max, base * 2^(n-1)). */
function doubled(baseMs: number, maxMs: number, n: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(n - 1, 0), 30));
}

/** fullJitter is a uniform wait in [1ms, doubled(base, max, n)]. */
export function fullJitter(baseMs: number, maxMs: number, n: number): number {
  return 1 + Math.random() * doubled(baseMs, maxMs, n);
}

/** equalJitter is a uniform wait in [d/2, d], d = doubled(base, max, n). */
export function equalJitter(baseMs: number, maxMs: number, n: number): number {
  const d = doubled(baseMs, maxMs, n);
  return d / 2 + Math.random() * (d / 2);
}

/** backoffMs is the wait before try n+1, given the server's Retry-After (ms, 0: none). */
export function backoffMs(p: RetryPolicy, n: number, retryAfterMs: number): number {
  if (retryAfterMs > 0) return retryAfterMs + Math.random() * retryAfterMs * retryTable.policy.retryAfterJitter;
  return fullJitter(p.baseMs, p.maxMs, n);
}
