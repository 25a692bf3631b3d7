import {
  operations,
  type AnswerDecisionRequest,
  type Attempt,
  type AttemptItem,
  type AttemptsPerRun,
  type BatchEnqueueRequest,
  type BulkRunsRequest,
  type Operation,
  type BatchEnqueueResponse,
  type DecisionItem,
  type ForkRequest,
  type InsightUsageQuery,
  type ListRunDecisionsQuery,
  type ListSchedulesQuery,
  type ListWebhookDeliveriesQuery,
  type ListWebhooksQuery,
  type ParkAttemptRequest,
  type PutScheduleRequest,
  type PutWebhookRequest,
  type Schedule,
  type ScheduleItem,
  type UsageTotals,
  type Webhook,
  type WebhookDelivery,
  type WebhookItem,
  type CallInsights,
  type ClaimLatency,
  type DecisionInsights,
  type InsightAttemptsEndedQuery,
  type InsightAttemptsPerRunQuery,
  type InsightCallsQuery,
  type InsightClaimLatencyQuery,
  type InsightDecisionsQuery,
  type InsightLeasesLostQuery,
  type InsightRunsEndedQuery,
  type InsightSeries,
  type Call,
  type CallRequest,
  type Checkpoint,
  type CheckpointRequest,
  type Claim,
  type ClaimRequest,
  type CompleteAttemptRequest,
  type ContinueRequest,
  type Decision,
  type DecisionRequest,
  type Delegation,
  type DelegationRequest,
  type EnqueueRequest,
  type FencedRequest,
  type FinishCallRequest,
  type Health,
  type Heartbeat,
  type HeartbeatRequest,
  type LastCheckpoint,
  type ListAttemptsQuery,
  type ListTenantCallsQuery,
  type CallItem,
  type ListDecisionsQuery,
  type ListReleasesQuery,
  type ListRunsQuery,
  type LockRequest,
  type OperationId,
  type PatchAttemptRequest,
  type ProblemCode,
  type Project,
  type PutProjectRequest,
  type PutReleaseRequest,
  type Release,
  type ReleaseAttemptRequest,
  type Run,
  type RunItem,
  type TaskLock,
  type TimelineEntry,
} from "./generated.js";
import { LedgerProblem, MaybeAppliedError, TransportError, codeOfStatus } from "./problem.js";
import { fetchTransport, nodeTransport, TransportFailure, type Transport, type TransportAnswer } from "./transport.js";
import {
  ambiguousCodes,
  backoffMs,
  defaultRetryPolicy,
  equalJitter,
  failureOfStatus,
  mayRepeat,
  repeatClassOf,
  type FailureClass,
  type RetryPolicy,
} from "./retry.js";

/** Options of a Client. */
export interface ClientOptions {
  /** The service's base URL (scheme, host, optional path prefix), e.g. https://ledger.example.com. */
  baseUrl: string;
  /** The API key sent as `Authorization: Bearer <key>`; it decides the tenant and the role. */
  key?: string;
  /**
   * A fetch for calls to go through (default: none; node:http with a keep-alive agent). Given
   * one, redirects are still never followed and answers are still capped.
   */
  fetch?: typeof fetch;
  /**
   * How long one try may take, from sending to the answer's last byte, ms (default 60000; a
   * long poll's wait is added). A try past it fails as an answer that never came.
   */
  timeoutMs?: number;
  /** The largest answer body read, bytes (default 8 MiB; the service's pages are at most 1 MiB). */
  maxResponseBytes?: number;
  /** Called after each try with its answer's status (0: none came), for metrics. */
  onAnswer?: (status: number, method: string, path: string) => void;
  /** How calls are retried (default: api/retry.json's policy; maxAttempts 1 turns retries off). */
  retry?: Partial<RetryPolicy>;
  userAgent?: string;
  /**
   * The pause after a wait the server answered early and unfinished (its cap of waiting
   * reads), doubling from least to greatest (default 250 ms and 5 s).
   */
  polling?: { leastMs: number; greatestMs: number };
}

/** Per-call options: an AbortSignal ends the call (and its retries) with its reason. */
export interface CallOptions {
  signal?: AbortSignal;
  /** How long each try of this call may take, ms (default: the client's timeoutMs). */
  timeoutMs?: number;
}

/** A resource with the ETag it was read or written with (for If-Match). */
export interface Tagged<T> {
  value: T;
  etag: string;
}

/** A page of a listing. */
export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

/** Paging of a listing: the page size, and the nextCursor of the previous page. */
export interface PageQuery {
  limit?: number;
  cursor?: string;
}

interface Request {
  op: OperationId;
  params?: Record<string, string>;
  query?: object;
  body?: unknown;
  ifMatch?: string;
  ifNoneMatch?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** text: the answer is read as text (getMetrics). */
  text?: boolean;
}

interface Answer<T> {
  status: number;
  body: T;
  etag: string;
  headers: { get(name: string): string | null };
}

/** The deadline of one try unless told otherwise. */
const defaultTimeoutMs = 60_000;
/** The largest answer read unless told otherwise: 8 times the service's largest page. */
const defaultMaxResponseBytes = 8 << 20;

/** The greatest wait a waiting read asks the server for (its cap). */
const waitSeconds = 30;
/** How many times an update helper reads, changes and writes before it gives up on 412s. */
const maxUpdateTries = 8;

/** sleep waits ms or until signal aborts (then it throws the signal's reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** waitOf is a long poll's wait in seconds (a claim's body or a read's query), added to the try's deadline. */
function waitOf(r: Request): number {
  const w = (r.body as { waitSeconds?: unknown } | undefined)?.waitSeconds ?? (r.query as { waitSeconds?: unknown } | undefined)?.waitSeconds;
  return typeof w === "number" && w > 0 ? w : 0;
}

/** retryAfterOf reads a Retry-After header (seconds or an HTTP date) in seconds. */
function retryAfterOf(h: { get(name: string): string | null }): number | undefined {
  const v = h.get("retry-after");
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/**
 * Client is a typed client of every route of the service. Each method takes the wire
 * types of its request and answers with the wire types of its answer; a problem answer
 * throws a LedgerProblem (see the is<Code> type guards). Calls are retried as api/retry.json
 * says: which call may be sent again after which failure, Retry-After honoured.
 */
export class Client {
  readonly baseUrl: string;
  // A private field: console.log, util.inspect and JSON.stringify cannot reach it.
  readonly #key?: string;
  readonly #transport: Transport;
  readonly #prefix: string;
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  readonly #onAnswer?: (status: number, method: string, path: string) => void;
  readonly retry: RetryPolicy;
  private readonly userAgent: string;
  private readonly polling: { leastMs: number; greatestMs: number };
  /** Replaced by tests to observe the waits of retries and polls. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void> = sleep;

  constructor(opts: ClientOptions) {
    const u = new URL(opts.baseUrl);
    if ((u.protocol !== "http:" && u.protocol !== "https:") || !u.host) {
      throw new TypeError(`ledger: base URL ${opts.baseUrl}: want http(s)://host[:port][/prefix]`);
    }
    this.baseUrl = `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`;
    this.#key = opts.key;
    this.#transport = opts.fetch ? fetchTransport(opts.fetch, u) : nodeTransport(u);
    this.#prefix = u.pathname.replace(/\/+$/, "");
    this.timeoutMs = opts.timeoutMs ?? defaultTimeoutMs;
    this.maxResponseBytes = opts.maxResponseBytes ?? defaultMaxResponseBytes;
    this.#onAnswer = opts.onAnswer;
    this.retry = { ...defaultRetryPolicy, ...opts.retry };
    this.userAgent = opts.userAgent ?? "ledger-client-ts/0.1.0";
    this.polling = opts.polling ?? { leastMs: 250, greatestMs: 5000 };
  }

  /** send sends one call, retrying as api/retry.json allows, and reads its answer. */
  private async send<T>(r: Request): Promise<Answer<T>> {
    const def = operations[r.op];
    const path = def.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const v = r.params?.[name];
      if (v === undefined || v === "") throw new TypeError(`ledger: ${r.op}: ${name} is required`);
      return encodeURIComponent(v);
    });
    const qs = new URLSearchParams();
    for (const name of def.query as readonly string[]) {
      const v = (r.query as Record<string, unknown> | undefined)?.[name];
      // A list (the not* filters) goes as the parameter repeated, one item each, in order.
      if (Array.isArray(v)) for (const item of v) qs.append(name, String(item));
      else if (v !== undefined && v !== null) qs.append(name, String(v));
    }
    const url = this.#prefix + path + (qs.size > 0 ? `?${qs}` : "");
    const body = r.body === undefined ? undefined : JSON.stringify(r.body);
    const cls = repeatClassOf(r.op, r.body, !!r.ifMatch);
    let mayHaveApplied = false; // an earlier try may have reached the server and applied
    for (let n = 1; ; n++) {
      let kind: FailureClass;
      let retryAfterMs = 0;
      try {
        return await this.tryOnce<T>(r, def.method, path, url, body);
      } catch (err) {
        if (r.signal?.aborted) throw r.signal.reason;
        if (err instanceof LedgerProblem) {
          if (cls === "conditional" && mayHaveApplied && ambiguousCodes(r.op).includes(err.code)) {
            throw new MaybeAppliedError(err);
          }
          kind = failureOfStatus(err.status);
          retryAfterMs = (err.retryAfter ?? 0) * 1000;
        } else if (err instanceof TransportError) {
          kind = !err.sent ? "notSent" : err.status ? "unreadableAnswer" : "noAnswer";
        } else {
          throw err;
        }
        if (!mayRepeat(kind, cls) || n >= this.retry.maxAttempts || retryAfterMs > this.retry.maxRetryAfterMs) throw err;
        if (kind !== "notSent" && kind !== "status429") mayHaveApplied = true;
        await this.sleep(backoffMs(this.retry, n, retryAfterMs), r.signal);
      }
    }
  }

  private async tryOnce<T>(r: Request, method: string, path: string, url: string, body?: string): Promise<Answer<T>> {
    const headers: Record<string, string> = {
      accept: "application/json, application/problem+json",
      "user-agent": this.userAgent,
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.#key) headers.authorization = `Bearer ${this.#key}`;
    if (r.ifMatch) headers["if-match"] = r.ifMatch;
    if (r.ifNoneMatch) headers["if-none-match"] = r.ifNoneMatch;
    let res: TransportAnswer;
    try {
      res = await this.#transport({
        method,
        path: url,
        headers,
        body,
        signal: r.signal,
        timeoutMs: (r.timeoutMs ?? this.timeoutMs) + waitOf(r) * 1000,
        maxBytes: this.maxResponseBytes,
      });
    } catch (err) {
      this.#onAnswer?.((err as TransportFailure)?.status ?? 0, method, path);
      if (r.signal?.aborted) throw r.signal.reason;
      if (!(err instanceof TransportFailure)) throw new TransportError(method, path, true, err);
      if (err.status !== undefined && (err.status < 200 || err.status >= 300)) {
        // A refusal whose body could not be read is still a refusal of that status.
        throw this.problem(method, path, err.status, "", { get: () => null }, "", {});
      }
      throw new TransportError(method, path, err.sent, err, err.status);
    }
    this.#onAnswer?.(res.status, method, path);
    const h = { get: (name: string) => res.header(name) ?? null };
    const etag = h.get("etag") ?? "";
    if (res.status === 204 || res.status === 304) {
      return { status: res.status, body: undefined as T, etag, headers: h };
    }
    if (res.status >= 200 && res.status < 300) {
      if (r.text) return { status: res.status, body: res.text as T, etag, headers: h };
      try {
        return { status: res.status, body: (res.text === "" ? undefined : JSON.parse(res.text)) as T, etag, headers: h };
      } catch (err) {
        throw new TransportError(method, path, true, err, res.status);
      }
    }
    let doc: any = {};
    if (/json/.test(h.get("content-type") ?? "")) {
      try {
        doc = JSON.parse(res.text) ?? {};
      } catch {
        doc = {}; // a partial document says no more than none
      }
    }
    throw this.problem(method, path, res.status, res.statusText, h, res.text, doc);
  }

  /** problem makes the LedgerProblem of an answer that is not 2xx (a redirect included: never followed). */
  private problem(method: string, path: string, status: number, statusText: string, h: { get(name: string): string | null }, text: string, doc: any): LedgerProblem {
    return new LedgerProblem({
      status,
      code: (typeof doc.code === "string" ? doc.code : codeOfStatus(status)) as ProblemCode,
      title: doc.title ?? statusText,
      detail: doc.detail ?? (doc.code ? "" : (status >= 300 && status < 400 ? `a redirect to ${h.get("location") ?? "nowhere"}, not followed: ` : "") + text.slice(0, 512)),
      type: doc.type,
      instance: doc.instance,
      fieldErrors: Array.isArray(doc.errors) ? doc.errors : [],
      moreFieldErrors: typeof doc.moreErrors === "number" ? doc.moreErrors : 0,
      requestId: h.get("x-request-id") ?? undefined,
      retryAfter: retryAfterOf(h),
      method,
      path,
    });
  }

  private async body<T>(r: Request): Promise<T> {
    return (await this.send<T>(r)).body;
  }

  private async tagged<T>(r: Request): Promise<Tagged<T>> {
    const a = await this.send<T>(r);
    return { value: a.body, etag: a.etag };
  }

  /** pages follows nextCursor from the first page, yielding every item. */
  private async *pages<T>(first: PageQuery, get: (q: PageQuery) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
    let q = { ...first };
    for (;;) {
      const p = await get(q);
      yield* p.items;
      if (!p.nextCursor) return;
      q = { ...q, cursor: p.nextCursor };
    }
  }

  // Runs.

  /** Queues a run (an exact repeat of an idempotencyKey answers the existing run). */
  enqueueRun(req: EnqueueRequest, o: CallOptions = {}): Promise<Run> {
    return this.body({ op: "enqueueRun", body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Leases one due run and starts its attempt; null when nothing is due. Throws HeldError when held back. */
  async claimRun(req: ClaimRequest, o: CallOptions = {}): Promise<Claim | null> {
    const a = await this.send<Claim>({ op: "claimRun", body: req, signal: o.signal, timeoutMs: o.timeoutMs });
    if (a.status === 204) {
      const ra = retryAfterOf(a.headers);
      if (ra !== undefined) throw new HeldError(ra);
      return null;
    }
    return a.body;
  }

  /** Reads a run; with waitSeconds the server answers when it has ended (or then). */
  getRun(runId: string, q: { waitSeconds?: number } = {}, o: CallOptions = {}): Promise<Run> {
    return this.body({ op: "getRun", params: { runId }, query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Runs ended per bucket by outcome (admin; GET /v1/insights/runs). */
  insightRunsEnded(q: InsightRunsEndedQuery = {}, o: CallOptions = {}): Promise<InsightSeries> {
    return this.body({ op: "insightRunsEnded", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Attempts ended per bucket by state (admin; GET /v1/insights/attempts). */
  insightAttemptsEnded(q: InsightAttemptsEndedQuery = {}, o: CallOptions = {}): Promise<InsightSeries> {
    return this.body({ op: "insightAttemptsEnded", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Leases lost per bucket (admin; GET /v1/insights/leases-lost). */
  insightLeasesLost(q: InsightLeasesLostQuery = {}, o: CallOptions = {}): Promise<InsightSeries> {
    return this.body({ op: "insightLeasesLost", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Attempts per finished run (admin; GET /v1/insights/attempts-per-run). */
  insightAttemptsPerRun(q: InsightAttemptsPerRunQuery = {}, o: CallOptions = {}): Promise<AttemptsPerRun> {
    return this.body({ op: "insightAttemptsPerRun", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Time from enqueue to first claim, p50 and p95 (admin; GET /v1/insights/claim-latency). */
  insightClaimLatency(q: InsightClaimLatencyQuery = {}, o: CallOptions = {}): Promise<ClaimLatency> {
    return this.body({ op: "insightClaimLatency", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Calls per target (admin; GET /v1/insights/calls). */
  insightCalls(q: InsightCallsQuery = {}, o: CallOptions = {}): Promise<CallInsights> {
    return this.body({ op: "insightCalls", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Decisions per kind (admin; GET /v1/insights/decisions). */
  insightDecisions(q: InsightDecisionsQuery = {}, o: CallOptions = {}): Promise<DecisionInsights> {
    return this.body({ op: "insightDecisions", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listRuns(q: ListRunsQuery = {}, o: CallOptions = {}): Promise<Page<RunItem>> {
    return this.body({ op: "listRuns", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Every run of the listing, following nextCursor. */
  runs(q: ListRunsQuery = {}, o: CallOptions = {}): AsyncGenerator<RunItem, void, undefined> {
    return this.pages(q, (p) => this.listRuns({ ...q, ...p }, o));
  }

  cancelRun(runId: string, o: CallOptions = {}): Promise<Run> {
    return this.body({ op: "cancelRun", params: { runId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  continueRun(runId: string, req?: ContinueRequest, o: CallOptions = {}): Promise<Run> {
    return this.body({ op: "continueRun", params: { runId }, body: req ?? {}, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** The last checkpoint of a run's chain; null when it has none (404 only when the run does not exist). */
  async lastCheckpoint(runId: string, o: CallOptions & { runExists?: boolean } = {}): Promise<LastCheckpoint | null> {
    try {
      return await this.body<LastCheckpoint>({ op: "getLastCheckpoint", params: { runId }, signal: o.signal, timeoutMs: o.timeoutMs });
    } catch (err) {
      if (!(err instanceof LedgerProblem) || err.code !== "not_found") throw err;
      if (o.runExists) return null;
      try {
        await this.getRun(runId, {}, o);
      } catch {
        throw err;
      }
      return null;
    }
  }

  // Attempts.

  heartbeat(attemptId: string, req: HeartbeatRequest, o: CallOptions = {}): Promise<Heartbeat> {
    return this.body({ op: "heartbeatAttempt", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  completeAttempt(attemptId: string, req: CompleteAttemptRequest, o: CallOptions = {}): Promise<Attempt> {
    return this.body({ op: "completeAttempt", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  releaseAttempt(attemptId: string, req: ReleaseAttemptRequest, o: CallOptions = {}): Promise<Attempt> {
    return this.body({ op: "releaseAttempt", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  patchAttempt(attemptId: string, req: PatchAttemptRequest, o: CallOptions = {}): Promise<Attempt> {
    return this.body({ op: "patchAttempt", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  acknowledgeCancellation(attemptId: string, req: FencedRequest, o: CallOptions = {}): Promise<Attempt> {
    return this.body({ op: "acknowledgeCancellation", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  getAttempt(attemptId: string, o: CallOptions = {}): Promise<Tagged<Attempt>> {
    return this.tagged({ op: "getAttempt", params: { attemptId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listAttempts(q: ListAttemptsQuery = {}, o: CallOptions = {}): Promise<Page<AttemptItem>> {
    return this.body({ op: "listAttempts", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  attempts(q: ListAttemptsQuery = {}, o: CallOptions = {}): AsyncGenerator<AttemptItem, void, undefined> {
    return this.pages(q, (p) => this.listAttempts({ ...q, ...p }, o));
  }

  getAttemptTimeline(attemptId: string, q: PageQuery = {}, o: CallOptions = {}): Promise<Page<TimelineEntry>> {
    return this.body({ op: "getAttemptTimeline", params: { attemptId }, query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  timeline(attemptId: string, o: CallOptions = {}): AsyncGenerator<TimelineEntry, void, undefined> {
    return this.pages({}, (p) => this.getAttemptTimeline(attemptId, p, o));
  }

  // Checkpoints and calls.

  appendCheckpoint(attemptId: string, req: CheckpointRequest, o: CallOptions = {}): Promise<Checkpoint> {
    return this.body({ op: "appendCheckpoint", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  getCheckpoint(attemptId: string, checkpointId: string, o: CallOptions = {}): Promise<Checkpoint> {
    return this.body({ op: "getCheckpoint", params: { attemptId, checkpointId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listCheckpoints(attemptId: string, q: PageQuery = {}, o: CallOptions = {}): Promise<Page<Checkpoint>> {
    return this.body({ op: "listCheckpoints", params: { attemptId }, query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  checkpoints(attemptId: string, o: CallOptions = {}): AsyncGenerator<Checkpoint, void, undefined> {
    return this.pages({}, (p) => this.listCheckpoints(attemptId, p, o));
  }

  recordCall(attemptId: string, req: CallRequest, o: CallOptions = {}): Promise<Tagged<Call>> {
    return this.tagged({ op: "recordCall", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Finishes a call; ifMatch, when given, is sent as If-Match. */
  finishCall(attemptId: string, callId: string, req: FinishCallRequest, ifMatch?: string, o: CallOptions = {}): Promise<Call> {
    return this.body({ op: "finishCall", params: { attemptId, callId }, body: req, ifMatch, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  getCall(attemptId: string, callId: string, o: CallOptions = {}): Promise<Tagged<Call>> {
    return this.tagged({ op: "getCall", params: { attemptId, callId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listCalls(attemptId: string, q: PageQuery = {}, o: CallOptions = {}): Promise<Page<Call>> {
    return this.body({ op: "listCalls", params: { attemptId }, query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  calls(attemptId: string, o: CallOptions = {}): AsyncGenerator<Call, void, undefined> {
    return this.pages({}, (p) => this.listCalls(attemptId, p, o));
  }

  /** One page of the tenant's calls (GET /v1/calls): started in a window, newest start first, or
   * with endedFrom/endedTo finished in one, newest end first, as the calls and usage insights count them. */
  listTenantCalls(q: ListTenantCallsQuery = {}, o: CallOptions = {}): Promise<Page<CallItem>> {
    return this.body({ op: "listTenantCalls", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Every call of the tenant's listing, following nextCursor. */
  tenantCalls(q: ListTenantCallsQuery = {}, o: CallOptions = {}): AsyncGenerator<CallItem, void, undefined> {
    return this.pages(q, (p) => this.listTenantCalls({ ...q, ...p }, o));
  }

  // Decisions and delegations.

  requestDecision(attemptId: string, req: DecisionRequest, o: CallOptions = {}): Promise<Decision> {
    return this.body({ op: "requestDecision", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Reads a decision; with waitSeconds the server answers when it closes (or then). */
  getDecision(decisionId: string, q: { waitSeconds?: number } = {}, o: CallOptions = {}): Promise<Tagged<Decision>> {
    return this.tagged({ op: "getDecision", params: { decisionId }, query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Answers a pending decision with the ETag it was read with (If-Match). */
  answerDecision(decisionId: string, etag: string, req: AnswerDecisionRequest, o: CallOptions = {}): Promise<Decision> {
    return this.body({ op: "answerDecision", params: { decisionId }, body: req, ifMatch: etag, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** Reads a decision and answers it with the ETag it read. */
  async answerPending(decisionId: string, req: AnswerDecisionRequest, o: CallOptions = {}): Promise<Decision> {
    const cur = await this.getDecision(decisionId, {}, o);
    return this.answerDecision(decisionId, cur.etag, req, o);
  }

  listDecisions(q: ListDecisionsQuery = {}, o: CallOptions = {}): Promise<Page<Decision>> {
    return this.body({ op: "listDecisions", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  decisions(q: ListDecisionsQuery = {}, o: CallOptions = {}): AsyncGenerator<Decision, void, undefined> {
    return this.pages(q, (p) => this.listDecisions({ ...q, ...p }, o));
  }

  listAttemptDecisions(attemptId: string, q: PageQuery = {}, o: CallOptions = {}): Promise<Page<Decision>> {
    return this.body({ op: "listAttemptDecisions", params: { attemptId }, query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  attemptDecisions(attemptId: string, o: CallOptions = {}): AsyncGenerator<Decision, void, undefined> {
    return this.pages({}, (p) => this.listAttemptDecisions(attemptId, p, o));
  }

  createDelegation(attemptId: string, req: DelegationRequest, o: CallOptions = {}): Promise<Delegation> {
    return this.body({ op: "createDelegation", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  getDelegation(delegationId: string, o: CallOptions = {}): Promise<Delegation> {
    return this.body({ op: "getDelegation", params: { delegationId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listDelegations(attemptId: string, q: PageQuery = {}, o: CallOptions = {}): Promise<Page<Delegation>> {
    return this.body({ op: "listDelegations", params: { attemptId }, query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  delegations(attemptId: string, o: CallOptions = {}): AsyncGenerator<Delegation, void, undefined> {
    return this.pages({}, (p) => this.listDelegations(attemptId, p, o));
  }

  /**
   * Waits until a decision is no longer pending and returns it. Each read asks the server
   * to wait for the close; a read answered early (the tenant's cap of waiting reads) is
   * followed by a pause.
   */
  async waitDecision(decisionId: string, o: CallOptions = {}): Promise<Decision> {
    return this.waitUntil(
      (w) => this.getDecision(decisionId, { waitSeconds: w }, o).then((t) => t.value),
      (d) => d.status !== "pending",
      o.signal,
    );
  }

  /** Waits until a delegation's child run has ended and returns the delegation. */
  async waitDelegation(delegationId: string, o: CallOptions = {}): Promise<Delegation> {
    for (let n = 1; ; n++) {
      const d = await this.getDelegation(delegationId, o);
      if (d.status === "succeeded" || d.status === "failed" || d.status === "cancelled") return d;
      await this.waitUntil((w) => this.getRun(d.childRunId, { waitSeconds: w }, o), (r) => r.state === "ended", o.signal);
      if (n > 1) {
        // The child ended before and the delegation follows its continuation: read again after a pause.
        await this.sleep(equalJitter(this.polling.leastMs, this.polling.greatestMs, n - 1), o.signal);
      }
    }
  }

  private async waitUntil<T>(read: (waitSeconds: number) => Promise<T>, done: (v: T) => boolean, signal?: AbortSignal): Promise<T> {
    for (let early = 0; ; ) {
      const start = Date.now();
      const v = await read(waitSeconds);
      if (done(v)) return v;
      if (Date.now() - start >= (waitSeconds * 1000) / 2) {
        early = 0;
        continue;
      }
      early++;
      await this.sleep(equalJitter(this.polling.leastMs, this.polling.greatestMs, early), signal);
    }
  }

  // Projects, releases, locks.

  putProject(projectId: string, req: PutProjectRequest, ifMatch?: string, o: CallOptions = {}): Promise<Tagged<Project>> {
    return this.tagged({ op: "putProject", params: { projectId }, body: req, ifMatch, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  getProject(projectId: string, o: CallOptions = {}): Promise<Tagged<Project>> {
    return this.tagged({ op: "getProject", params: { projectId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listProjects(q: PageQuery = {}, o: CallOptions = {}): Promise<Page<Project>> {
    return this.body({ op: "listProjects", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  projects(o: CallOptions = {}): AsyncGenerator<Project, void, undefined> {
    return this.pages({}, (p) => this.listProjects(p, o));
  }

  /**
   * Reads a project, lets change edit a request filled with its current values, and writes
   * it with the ETag it read; after a 412 (another writer got there first) it reads and
   * changes again, so change must say what the project should become.
   */
  async updateProject(projectId: string, change: (req: PutProjectRequest, cur: Project) => void | Promise<void>, o: CallOptions = {}): Promise<Project> {
    return this.update(`project ${projectId}`, async () => {
      const cur = await this.getProject(projectId, o);
      const req: PutProjectRequest = { active: cur.value.active, retentionDays: cur.value.retentionDays, dailyCostBudgetMicros: cur.value.dailyCostBudgetMicros };
      await change(req, cur.value);
      return (await this.putProject(projectId, req, cur.etag, o)).value;
    });
  }

  putRelease(releaseId: string, adapterVersion: string, req: PutReleaseRequest, ifMatch?: string, o: CallOptions = {}): Promise<Tagged<Release>> {
    return this.tagged({ op: "putRelease", params: { releaseId, adapterVersion }, body: req, ifMatch, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  getRelease(releaseId: string, adapterVersion: string, o: CallOptions = {}): Promise<Tagged<Release>> {
    return this.tagged({ op: "getRelease", params: { releaseId, adapterVersion }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listReleases(q: ListReleasesQuery = {}, o: CallOptions = {}): Promise<Page<Release>> {
    return this.body({ op: "listReleases", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  releases(q: ListReleasesQuery = {}, o: CallOptions = {}): AsyncGenerator<Release, void, undefined> {
    return this.pages(q, (p) => this.listReleases({ ...q, ...p }, o));
  }

  /** updateProject for a release adapter: only state and inFlightPolicy may change. */
  async updateRelease(
    releaseId: string,
    adapterVersion: string,
    change: (req: PutReleaseRequest, cur: Release) => void | Promise<void>,
    o: CallOptions = {},
  ): Promise<Release> {
    return this.update(`release ${releaseId} adapter ${adapterVersion}`, async () => {
      const cur = await this.getRelease(releaseId, adapterVersion, o);
      const req: PutReleaseRequest = {
        manifestHash: cur.value.manifestHash,
        contentRefs: cur.value.contentRefs,
        state: cur.value.state,
        inFlightPolicy: cur.value.inFlightPolicy,
      };
      await change(req, cur.value);
      return (await this.putRelease(releaseId, adapterVersion, req, cur.etag, o)).value;
    });
  }

  private async update<T>(what: string, once: () => Promise<T>): Promise<T> {
    let last: unknown;
    for (let i = 0; i < maxUpdateTries; i++) {
      try {
        return await once();
      } catch (err) {
        if (!(err instanceof LedgerProblem) || err.code !== "precondition_failed") throw err;
        last = err;
      }
    }
    throw new Error(`ledger: update ${what}: it kept changing under ${maxUpdateTries} tries`, { cause: last });
  }

  acquireTaskLock(agentId: string, taskId: string, req: LockRequest, o: CallOptions = {}): Promise<TaskLock> {
    return this.body({ op: "acquireTaskLock", params: { agentId, taskId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  async releaseTaskLock(agentId: string, taskId: string, holderId: string, o: CallOptions = {}): Promise<void> {
    await this.send({ op: "releaseTaskLock", params: { agentId, taskId }, query: { holderId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  // Batches and forks.

  /** enqueueRunBatch enqueues many runs in one request; each item answers on its own. */
  enqueueRunBatch(req: BatchEnqueueRequest, o: CallOptions = {}): Promise<BatchEnqueueResponse> {
    return this.body({ op: "enqueueRunBatch", body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /**
   * bulkRuns applies an action (cancel or continue) to runs named or matched by a filter, as a
   * background operation (admin). The same body within ten minutes, or the same idempotencyKey
   * at any time, is the same operation. Follow it with getOperation.
   */
  bulkRuns(req: BulkRunsRequest, o: CallOptions = {}): Promise<Operation> {
    return this.body({ op: "bulkRuns", body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** getOperation reads a background operation's progress and result. */
  getOperation(operationId: string, o: CallOptions = {}): Promise<Operation> {
    return this.body({ op: "getOperation", params: { operationId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** forkRun starts a new run from a run's checkpoint (repeatable with an idempotencyKey). */
  forkRun(runId: string, req: ForkRequest, o: CallOptions = {}): Promise<Run> {
    return this.body({ op: "forkRun", params: { runId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** parkAttempt ends an attempt as parked: the run waits (for a decision) without holding a lease. */
  parkAttempt(attemptId: string, req: ParkAttemptRequest, o: CallOptions = {}): Promise<Attempt> {
    return this.body({ op: "parkAttempt", params: { attemptId }, body: req, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listRunDecisions(runId: string, q: ListRunDecisionsQuery = {}, o: CallOptions = {}): Promise<Page<DecisionItem>> {
    return this.body({ op: "listRunDecisions", params: { runId }, query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  runDecisions(runId: string, o: CallOptions = {}): AsyncGenerator<DecisionItem, void, undefined> {
    return this.pages({}, (p) => this.listRunDecisions(runId, p, o));
  }

  // Usage.

  /** getAttemptUsage: the totals of the calls an attempt reported (tokens, cost). */
  getAttemptUsage(attemptId: string, o: CallOptions = {}): Promise<UsageTotals> {
    return this.body({ op: "getAttemptUsage", params: { attemptId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** getRunUsage: the totals of the calls every attempt of a run reported. */
  getRunUsage(runId: string, o: CallOptions = {}): Promise<UsageTotals> {
    return this.body({ op: "getRunUsage", params: { runId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  insightUsage(q: InsightUsageQuery = {}, o: CallOptions = {}): Promise<InsightSeries> {
    return this.body({ op: "insightUsage", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  // Schedules.

  putSchedule(scheduleId: string, req: PutScheduleRequest, ifMatch?: string, o: CallOptions = {}): Promise<Tagged<Schedule>> {
    return this.tagged({ op: "putSchedule", params: { scheduleId }, body: req, ifMatch, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  getSchedule(scheduleId: string, o: CallOptions = {}): Promise<Tagged<Schedule>> {
    return this.tagged({ op: "getSchedule", params: { scheduleId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  async deleteSchedule(scheduleId: string, o: CallOptions = {}): Promise<void> {
    await this.send({ op: "deleteSchedule", params: { scheduleId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listSchedules(q: ListSchedulesQuery = {}, o: CallOptions = {}): Promise<Page<ScheduleItem>> {
    return this.body({ op: "listSchedules", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  schedules(q: ListSchedulesQuery = {}, o: CallOptions = {}): AsyncGenerator<ScheduleItem, void, undefined> {
    return this.pages(q, (p) => this.listSchedules({ ...q, ...p }, o));
  }

  // Webhooks.

  putWebhook(webhookName: string, req: PutWebhookRequest, ifMatch?: string, o: CallOptions = {}): Promise<Tagged<Webhook>> {
    return this.tagged({ op: "putWebhook", params: { webhookName }, body: req, ifMatch, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  getWebhook(webhookName: string, o: CallOptions = {}): Promise<Tagged<Webhook>> {
    return this.tagged({ op: "getWebhook", params: { webhookName }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  async deleteWebhook(webhookName: string, o: CallOptions = {}): Promise<void> {
    await this.send({ op: "deleteWebhook", params: { webhookName }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listWebhooks(q: ListWebhooksQuery = {}, o: CallOptions = {}): Promise<Page<WebhookItem>> {
    return this.body({ op: "listWebhooks", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  webhooks(q: ListWebhooksQuery = {}, o: CallOptions = {}): AsyncGenerator<WebhookItem, void, undefined> {
    return this.pages(q, (p) => this.listWebhooks({ ...q, ...p }, o));
  }

  /** rotateWebhookSecret makes a new signing secret; the answer carries it once. */
  rotateWebhookSecret(webhookName: string, o: CallOptions = {}): Promise<Webhook> {
    return this.body({ op: "rotateWebhookSecret", params: { webhookName }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  listWebhookDeliveries(q: ListWebhookDeliveriesQuery = {}, o: CallOptions = {}): Promise<Page<WebhookDelivery>> {
    return this.body({ op: "listWebhookDeliveries", query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  webhookDeliveries(q: ListWebhookDeliveriesQuery = {}, o: CallOptions = {}): AsyncGenerator<WebhookDelivery, void, undefined> {
    return this.pages(q, (p) => this.listWebhookDeliveries({ ...q, ...p }, o));
  }

  redeliverWebhook(deliveryId: string, o: CallOptions = {}): Promise<WebhookDelivery> {
    return this.body({ op: "redeliverWebhook", params: { deliveryId }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  // Service.

  health(o: CallOptions = {}): Promise<Health> {
    return this.body({ op: "getHealth", signal: o.signal, timeoutMs: o.timeoutMs });
  }

  readiness(o: CallOptions = {}): Promise<Health> {
    return this.body({ op: "getReadiness", signal: o.signal, timeoutMs: o.timeoutMs });
  }

  metrics(o: CallOptions = {}): Promise<string> {
    return this.body({ op: "getMetrics", text: true, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  openAPI(o: CallOptions = {}): Promise<Record<string, unknown>> {
    return this.body({ op: "getOpenAPI", signal: o.signal, timeoutMs: o.timeoutMs });
  }
}

/**
 * HeldError: a claim was held back (the tenant's budget of leased runs is spent, or too
 * many of its claims wait at once); claim again after retryAfter seconds.
 */
export class HeldError extends Error {
  override name = "HeldError";
  constructor(readonly retryAfter: number) {
    super(`ledger: claim held back; retry after ${retryAfter}s`);
  }
}
