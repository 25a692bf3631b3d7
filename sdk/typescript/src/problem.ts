import type { FieldError, ProblemCode } from "./generated.js";

/**
 * LedgerProblem is an RFC 9457 problem answer of the service (or a status a proxy answered
 * without one): its HTTP status, its stable code, the detail, the field errors of a 400,
 * the request id the service logged it under, and the Retry-After it asked for.
 */
export class LedgerProblem extends Error {
  override name = "LedgerProblem";
  /** The HTTP status. */
  readonly status: number;
  /** The stable problem code (stale_lease, lease_expired, …). */
  readonly code: ProblemCode;
  readonly title: string;
  readonly detail: string;
  readonly type: string;
  readonly instance?: string;
  /** The invalid fields of a 400 invalid_request. */
  readonly fieldErrors: readonly FieldError[];
  /** How many more invalid fields there were than fieldErrors lists (the list is capped). */
  readonly moreFieldErrors: number;
  /** The X-Request-Id of the answer: quote it to the operators. */
  readonly requestId?: string;
  /** The Retry-After of the answer in seconds, when it had one. */
  readonly retryAfter?: number;
  /** The method and path of the request. */
  readonly method: string;
  readonly path: string;

  constructor(init: {
    status: number;
    code: ProblemCode;
    title?: string;
    detail?: string;
    type?: string;
    instance?: string;
    fieldErrors?: readonly FieldError[];
    moreFieldErrors?: number;
    requestId?: string;
    retryAfter?: number;
    method: string;
    path: string;
  }) {
    super(`ledger: ${init.method} ${init.path}: ${init.status} ${init.code}${init.detail ? ": " + init.detail : ""}`);
    this.status = init.status;
    this.code = init.code;
    this.title = init.title ?? "";
    this.detail = init.detail ?? "";
    this.type = init.type ?? `urn:ledger:problem:${init.code}`;
    this.instance = init.instance;
    this.fieldErrors = init.fieldErrors ?? [];
    this.moreFieldErrors = init.moreFieldErrors ?? 0;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.method = init.method;
    this.path = init.path;
  }
}

/** The code of an answer that carried no problem document, by its status. */
export function codeOfStatus(status: number): ProblemCode {
  switch (status) {
    case 400:
      return "invalid_request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 412:
      return "precondition_failed";
    case 413:
      return "body_too_large";
    case 415:
      return "unsupported_media_type";
    case 428:
      return "precondition_required";
    case 429:
      return "rate_limited";
    case 502:
    case 503:
    case 504:
      return "database_unavailable";
    default:
      return "internal";
  }
}

/**
 * TransportError is a call that got no usable answer: the connection could not be made
 * (sent is false), the answer never came, or a 2xx answer could not be read (status set).
 */
export class TransportError extends Error {
  override name = "TransportError";
  constructor(
    readonly method: string,
    readonly path: string,
    /** Whether the request may have reached the server. */
    readonly sent: boolean,
    cause: unknown,
    /** The status of an answer whose body could not be read (0: no answer). */
    readonly status = 0,
  ) {
    super(`ledger: ${method} ${path}: ${status ? `${status}: unreadable answer` : sent ? "no answer" : "not sent"}: ${String((cause as Error)?.message ?? cause)}`, { cause });
  }
}

/**
 * MaybeAppliedError: a conditional (If-Match) update was sent again after a try that may
 * have applied, and the repeat was refused with a code that an applied try would cause
 * (its cause is that LedgerProblem). Read the resource to learn which.
 */
export class MaybeAppliedError extends Error {
  override name = "MaybeAppliedError";
  constructor(readonly problem: LedgerProblem) {
    super(`ledger: the update may have applied before its repeat was refused: ${problem.message}`, { cause: problem });
  }
}

/** isMaybeApplied reports whether err is a MaybeAppliedError. */
export function isMaybeApplied(err: unknown): err is MaybeAppliedError {
  return err instanceof MaybeAppliedError;
}
