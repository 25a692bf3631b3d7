import type { Client, CallOptions } from "./client.js";
import type {
  AttemptError,
  Usage,
  Attempt,
  Call,
  CallFinishStatus,
  CallKind,
  Checkpoint,
  Claim,
  CompletionState,
  Decision,
  DecisionKind,
  Delegation,
  Heartbeat,
  LastCheckpoint,
  Phase,
  ProblemCode,
  Run,
  RunSpec,
} from "./generated.js";
import { LedgerProblem } from "./problem.js";
import { sha256Hex } from "./jcs.js";
import { createHash } from "node:crypto";
import { behaviour } from "./behaviour.js";

/**
 * LeaseLostError is the reason a handler's signal aborts with when its lease is lost: a
 * write or a heartbeat was refused with stale_lease, lease_expired or attempt_ended (or,
 * for a heartbeat, not_found), or renewals kept failing until the lease had passed by this
 * machine's clock. A lost Lease refuses every further write without sending it.
 */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(`ledger: lease lost: ${message}`, options);
  }
}

/** LeaseEndedError: a write after this holder's own complete or release. */
export class LeaseEndedError extends Error {
  override name = "LeaseEndedError";
  constructor(how: string) {
    super(`ledger: lease ended: ${how}`);
  }
}

/**
 * CancelRequestedError is the reason a handler's signal aborts with when an admin cancelled
 * its run. The lease stays usable (a last checkpoint may be written); whatever the handler
 * does then, the Worker completes the attempt as cancelled.
 */
export class CancelRequestedError extends Error {
  override name = "CancelRequestedError";
  constructor() {
    super("ledger: run cancel requested");
  }
}

/** ShutdownError: the Worker's shutdown grace ran out; the lease was released uncharged. */
export class ShutdownError extends Error {
  override name = "ShutdownError";
  constructor(why: string) {
    super(`ledger: worker shutting down: ${why}`);
  }
}

/**
 * ParkedError is what decide and waitChildren throw when they parked the run instead of
 * waiting longer (past the park bound, or because the Worker is stopping): the handler
 * lets it through (or returns). The Worker then sends nothing more and counts no failure;
 * the run is claimed again when its conditions close, and the handler, run again from its
 * last checkpoint, gets the answer from the same decide call at once.
 */
export class ParkedError extends Error {
  override name = "ParkedError";
  constructor(why: string) {
    super(`ledger: run parked: ${why}`);
  }
}

/** How long decide and waitChildren wait in the handler before they park the run, ms. */
export const defaultParkAfterMs = 30_000;

/** uuidV5 is the name-based (SHA-1) UUID of name in namespace, as Go's uuid.NewSHA1 and Python's uuid5 make it. */
export function uuidV5(namespace: string, name: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ""), "hex");
  const b = createHash("sha1").update(ns).update(name, "utf8").digest().subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x50;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The refusals that mean the lease is gone for good (a heartbeat's not_found too). */
const leaseLossCodes: readonly ProblemCode[] = behaviour.refusalClasses.leaseLost;
const heartbeatLossCodes: readonly ProblemCode[] = behaviour.refusalClasses.heartbeatLost;

/** A checkpoint to append; the Lease adds the token, the sequence and the adapter version. */
export interface CheckpointInput {
  phase: Phase;
  /** Where the adapter's state is, or the state itself when small (up to 512 characters). */
  stateRef: string;
  /** The state's hash (default: hex SHA-256 of stateRef). */
  hash?: string;
  contextSnapshotRef?: string;
}

/** A call to record; the Lease adds the token and the sequence. */
export interface CallInput {
  kind: CallKind;
  target: string;
  /** Identifies the request (default: hex SHA-256 of target). */
  requestHash?: string;
  policyDecisionId?: string;
  /** Model, provider and operation name a model call (gen_ai.request.model, gen_ai.provider.name, gen_ai.operation.name). */
  model?: string;
  provider?: string;
  operation?: string;
}

/** What a model call reports when it finishes; every member is optional. */
export interface CallReport {
  usage?: Usage;
  responseModel?: string;
  finishReasons?: string[];
  /** The call's cost in millionths of the tenant's currency unit; the project's daily cost budget counts it. */
  costMicros?: number;
}

/** A decision to ask for; the Lease adds the token. */
export interface DecisionInput {
  kind: DecisionKind;
  proposalHash?: string;
  /** What a choice chooses from (any JSON; for a choice, an array). */
  options?: unknown;
  recommendation?: string;
  /** Closes the decision as expired that long after it is asked (whole seconds). */
  expiresInSeconds?: number;
  /**
   * Names the decision within the run's step: it is sent under the idempotency key
   * "decide:{stepId}:{key}", as the Go Lease does, so a retry or a resumed handler asking
   * again gets the same decision (and its answer) instead of asking anew. decide, given no
   * key, uses the call's order in the handler ("#1", "#2", …), which holds when the handler
   * asks its decisions in the same order every time it runs.
   */
  key?: string;
}

/**
 * Lease is one claimed run's lease: the fencing token bound to the attempt, and the writes
 * a holder makes under it. A Worker hands one to each handler and keeps it renewed.
 */
export class Lease {
  /** The lease's length in milliseconds: how long each renewal extends it. */
  readonly lengthMs: number;
  private endedWith?: Error;
  /**
   * How this holder's own complete or release ended it: the LeaseEndedError a later write
   * throws is made only then, so a run that settles normally makes no Error (and no stack).
   */
  private settledHow?: string;
  /**
   * Called once when the lease ends otherwise than by this holder's own complete or release
   * (the Worker aborts the handler's signal).
   */
  onEnd?: (cause: Error) => void;
  private leasedUntilAt: string;
  private cancelSeen = false;
  private resumed?: Promise<LastCheckpoint | null>;
  private nextSeq = 0;
  private nextCallSeq = 0;
  private settles = 0;
  private settling = 0;
  /** How many decide calls without a key this lease has made (their keys are "#1", "#2", …). */
  private decides = 0;
  /** How long decide and waitChildren wait before they park, ms (the Worker sets it). */
  parkAfterMs = defaultParkAfterMs;
  /** Aborts when the Worker running this lease stops: decide and waitChildren then park at once. */
  stopping?: AbortSignal;
  /** Whether this holder parked the run (park, decide or waitChildren). */
  parked = false;

  constructor(
    readonly client: Client,
    readonly claim: Claim,
  ) {
    this.leasedUntilAt = claim.lease.leasedUntil;
    const secs = claim.run.leaseSeconds;
    let ms = secs && secs > 0 ? secs * 1000 : Date.parse(claim.lease.leasedUntil) - Date.parse(claim.attempt.startedAt);
    if (!(ms > 0)) ms = 30_000; // the service's default lease
    this.lengthMs = ms;
  }

  get run(): Run {
    return this.claim.run;
  }
  get attempt(): Attempt {
    return this.claim.attempt;
  }
  get runId(): string {
    return this.claim.run.runId;
  }
  get attemptId(): string {
    return this.claim.attempt.attemptId;
  }
  /** The token every write under the lease presents. */
  get fencingToken(): number {
    return this.claim.lease.fencingToken;
  }
  /** The run's input (null when it has none). */
  get input(): unknown {
    return this.claim.run.input ?? null;
  }
  /** When the lease passes unless renewed, as the service last said. */
  get leasedUntil(): string {
    return this.leasedUntilAt;
  }
  /** Whether a heartbeat has said the run was cancelled. */
  get cancelRequested(): boolean {
    return this.cancelSeen;
  }
  /** Undefined while the lease may be written under, else why not. */
  get err(): Error | undefined {
    if (!this.endedWith && this.settledHow !== undefined) this.endedWith = new LeaseEndedError(this.settledHow);
    return this.endedWith;
  }

  /** end makes the lease refuse further writes with cause, once; it reports whether this call ended it. */
  end(cause: Error): boolean {
    if (this.endedWith || this.settledHow !== undefined) return false;
    this.endedWith = cause;
    this.onEnd?.(cause);
    return true;
  }

  /** settled ends the lease by this holder's own complete or release. */
  private settled(how: string): void {
    if (!this.endedWith && this.settledHow === undefined) this.settledHow = how;
  }

  /** lost ends the lease as lost because of err and returns the error a write reports. */
  lost(message: string, cause?: unknown): Error {
    const e = new LeaseLostError(message, { cause });
    if (!this.end(e) && !(this.err instanceof LeaseLostError)) return this.err!;
    return e;
  }

  /**
   * send sends one request under the lease, unless it has ended. A refusal with one of
   * lossCodes ends the lease as lost, unless this holder's own complete or release (other
   * than this request, when settle says it is one) was sent meanwhile: then the refusal is
   * that ending, seen by a request that lost the race to it.
   */
  private async send<T>(settle: boolean, lossCodes: readonly ProblemCode[], f: () => Promise<T>): Promise<T> {
    const ended = this.err;
    if (ended) throw ended;
    let before = this.settles;
    if (settle) {
      this.settles++;
      this.settling++;
      before++;
    }
    try {
      return await f();
    } catch (err) {
      const own = this.settles !== before || this.settling > (settle ? 1 : 0);
      if (err instanceof LedgerProblem && lossCodes.includes(err.code) && !own) {
        throw this.lost(err.message, err);
      }
      throw err;
    } finally {
      if (settle) this.settling--;
    }
  }

  private write<T>(f: () => Promise<T>): Promise<T> {
    return this.send(false, leaseLossCodes, f);
  }

  /**
   * The last checkpoint of the run's chain from before this lease (null for a fresh run):
   * a handler resumes from it, and checkpoint sequences continue after it.
   */
  resume(o: CallOptions = {}): Promise<LastCheckpoint | null> {
    if (!this.resumed) {
      // A run's epoch moves only when it is claimed: token 1 on a run that continues none is
      // the first attempt of a new chain, which has no checkpoint to read.
      const fresh = this.fencingToken === 1 && !this.claim.run.continuedFromRunId;
      this.resumed = (fresh ? Promise.resolve(null) : this.client.lastCheckpoint(this.runId, { ...o, runExists: true })).then((last) => {
        if (last) this.nextSeq = last.sequence + 1;
        return last;
      });
      this.resumed.catch(() => (this.resumed = undefined));
    }
    return this.resumed;
  }

  /** Appends a checkpoint; sequences continue from resume(). Retried safely. */
  async checkpoint(input: CheckpointInput, o: CallOptions = {}): Promise<Checkpoint> {
    await this.resume(o);
    const sequence = this.nextSeq++;
    return this.write(() =>
      this.client.appendCheckpoint(
        this.attemptId,
        {
          fencingToken: this.fencingToken,
          sequence,
          phase: input.phase,
          adapterStateRef: input.stateRef,
          adapterVersion: this.claim.attempt.adapterVersion,
          hash: input.hash ?? sha256Hex(input.stateRef),
          contextSnapshotRef: input.contextSnapshotRef,
        },
        o,
      ),
    );
  }

  /** Records a started call (sequences count from 0 in each attempt); finish it with finishCall. */
  async recordCall(input: CallInput, o: CallOptions = {}): Promise<Call> {
    const sequence = this.nextCallSeq++;
    const t = await this.write(() =>
      this.client.recordCall(
        this.attemptId,
        {
          fencingToken: this.fencingToken,
          sequence,
          kind: input.kind,
          target: input.target,
          requestHash: input.requestHash ?? sha256Hex(input.target),
          policyDecisionId: input.policyDecisionId,
          model: input.model,
          provider: input.provider,
          operation: input.operation,
        },
        o,
      ),
    );
    return t.value;
  }

  finishCall(callId: string, status: CallFinishStatus, receiptRef?: string, o: CallOptions = {}): Promise<Call> {
    return this.finishCallReport(callId, status, receiptRef, {}, o);
  }

  /** finishCall with what a model call reports: tokens, the model that answered, why it stopped, its cost. */
  finishCallReport(callId: string, status: CallFinishStatus, receiptRef: string | undefined, report: CallReport, o: CallOptions = {}): Promise<Call> {
    return this.write(() =>
      this.client.finishCall(this.attemptId, callId, { fencingToken: this.fencingToken, status, receiptRef, ...report }, undefined, o),
    );
  }

  /** Records a call, runs fn, and finishes the call: succeeded with fn's receipt, or failed when fn throws. */
  async call<T extends string | void>(input: CallInput, fn: () => Promise<T>, o: CallOptions = {}): Promise<T> {
    const c = await this.recordCall(input, o);
    let receipt: T;
    try {
      receipt = await fn();
    } catch (err) {
      await this.finishCall(c.callId, "failed", undefined, o);
      throw err;
    }
    await this.finishCall(c.callId, "succeeded", typeof receipt === "string" && receipt !== "" ? receipt : undefined, o);
    return receipt;
  }

  /** Moves the attempt to a phase. */
  setPhase(phase: Phase, o: CallOptions = {}): Promise<Attempt> {
    return this.write(() => this.client.patchAttempt(this.attemptId, { fencingToken: this.fencingToken, phase }, o));
  }

  /** Counts one correction; never repeated once it may have reached the service. */
  correct(o: CallOptions = {}): Promise<Attempt> {
    return this.write(() => this.client.patchAttempt(this.attemptId, { fencingToken: this.fencingToken, correction: true }, o));
  }

  setContextSnapshot(ref: string, o: CallOptions = {}): Promise<Attempt> {
    return this.write(() => this.client.patchAttempt(this.attemptId, { fencingToken: this.fencingToken, contextSnapshotRef: ref }, o));
  }

  /** Asks a person to decide; without input.key never repeated once it may have reached the service. */
  requestDecision(input: DecisionInput, o: CallOptions = {}): Promise<Decision> {
    return this.write(() =>
      this.client.requestDecision(
        this.attemptId,
        {
          fencingToken: this.fencingToken,
          kind: input.kind,
          proposalHash: input.proposalHash,
          options: input.options,
          recommendation: input.recommendation,
          expiresInSeconds: input.expiresInSeconds,
          ...(input.key !== undefined ? { idempotencyKey: `decide:${this.claim.run.stepId}:${input.key}` } : {}),
        },
        o,
      ),
    );
  }

  /** Waits until a decision is no longer pending (the server answers as it closes). */
  waitDecision(decisionId: string, o: CallOptions = {}): Promise<Decision> {
    return this.client.waitDecision(decisionId, o);
  }

  /**
   * Asks for a decision under an idempotency key derived from the run's step (input.key, or
   * the call's order in the handler) and waits for it to close. A decision the run already
   * asked under that key is not asked again: a resumed handler gets its answer at once.
   * Past parkAfterMs, or when the Worker is stopping (SIGTERM), it parks the run on the
   * decision and throws ParkedError, which the handler lets through.
   */
  async decide(input: DecisionInput, o: CallOptions = {}): Promise<Decision> {
    const key = input.key ?? `#${++this.decides}`;
    const d = await this.requestDecision({ ...input, key }, o);
    if (d.status !== "pending") return d;
    return this.waitOrPark((signal) => this.waitDecision(d.decisionId, { ...o, signal }), { decisionIds: [d.decisionId] }, o);
  }

  /**
   * Waits until every child run has ended and returns them as they then are; past
   * parkAfterMs, or when the Worker is stopping, it parks the run on them and throws
   * ParkedError (as decide does). A resumed handler that delegated with delegateStep finds
   * the same children, already ended.
   */
  waitChildren(childRunIds: string[], o: CallOptions = {}): Promise<Run[]> {
    return this.waitOrPark(
      async (signal) => {
        const out: Run[] = [];
        for (const id of childRunIds) {
          let r = await this.client.getRun(id, { waitSeconds: 30 }, { ...o, signal });
          while (r.state !== "ended") r = await this.client.getRun(id, { waitSeconds: 30 }, { ...o, signal });
          out.push(r);
        }
        return out;
      },
      { childRunIds },
      o,
    );
  }

  /**
   * waitOrPark runs read until it resolves, parkAfterMs passes or the Worker stops; in the
   * last two cases it parks the run on wait and throws ParkedError. The caller's own signal
   * aborting is the caller's: it is thrown, not parked on.
   */
  private async waitOrPark<T>(read: (signal: AbortSignal) => Promise<T>, wait: { decisionIds?: string[]; childRunIds?: string[] }, o: CallOptions): Promise<T> {
    const ac = new AbortController();
    let why: string | undefined;
    const timer = setTimeout(() => {
      why = `waited ${this.parkAfterMs}ms`;
      ac.abort(new ParkedError(why));
    }, this.parkAfterMs);
    const onStop = () => {
      why = "the worker is stopping";
      ac.abort(new ParkedError(why));
    };
    const onCaller = () => ac.abort(o.signal?.reason);
    if (this.stopping?.aborted) onStop();
    else this.stopping?.addEventListener("abort", onStop, { once: true });
    if (o.signal?.aborted) onCaller();
    else o.signal?.addEventListener("abort", onCaller, { once: true });
    try {
      return await read(ac.signal);
    } catch (err) {
      if (why === undefined || o.signal?.aborted) throw err;
    } finally {
      clearTimeout(timer);
      this.stopping?.removeEventListener("abort", onStop);
      o.signal?.removeEventListener("abort", onCaller);
    }
    await this.park(wait, { timeoutMs: Math.max(this.lengthMs, 5_000) });
    throw new ParkedError(why);
  }

  /**
   * delegateStep delegates as delegate does, with the child's stepId, snapshotId and
   * idempotency key derived from the parent's lease (its run, step and key), so that a
   * resumed handler delegating again sends exactly the same request and finds the same
   * child: every other field of child, and purpose, must be the same as well.
   */
  delegateStep(key: string, purpose: string, child: Omit<RunSpec, "stepId" | "snapshotId" | "idempotencyKey">, o: CallOptions = {}): Promise<Delegation> {
    const run = this.claim.run;
    return this.delegate(
      purpose,
      {
        ...child,
        stepId: uuidV5(run.stepId, `step:${key}`),
        snapshotId: uuidV5(run.runId, `snapshot:${key}`),
        idempotencyKey: `delegate:${run.runId}:${key}`,
      } as RunSpec,
      o,
    );
  }

  /**
   * Enqueues a child run for a sub-agent and records the delegation. Give
   * child.idempotencyKey a value naming this delegation so that a retry, or a resumed run
   * delegating again, finds the same child; without one the call is not retried.
   */
  delegate(purpose: string, child: RunSpec, o: CallOptions = {}): Promise<Delegation> {
    return this.write(() => this.client.createDelegation(this.attemptId, { fencingToken: this.fencingToken, purpose, child }, o));
  }

  /** Waits until a delegation's child run has ended. */
  waitDelegation(delegationId: string, o: CallOptions = {}): Promise<Delegation> {
    return this.client.waitDelegation(delegationId, o);
  }

  /** Renews the lease for its length and reports whether a cancel is pending (a Worker does this). */
  async heartbeat(o: CallOptions = {}): Promise<Heartbeat> {
    const hb = await this.send(false, heartbeatLossCodes, () =>
      this.client.heartbeat(this.attemptId, { fencingToken: this.fencingToken, leaseSeconds: Math.max(1, Math.round(this.lengthMs / 1000)) }, o),
    );
    this.leasedUntilAt = hb.leasedUntil;
    if (hb.cancelRequested) this.cancelSeen = true;
    return hb;
  }

  /** Records that the holder saw the cancel request. */
  async acknowledgeCancellation(o: CallOptions = {}): Promise<void> {
    await this.write(() => this.client.acknowledgeCancellation(this.attemptId, { fencingToken: this.fencingToken }, o));
  }

  /**
   * Ends the attempt parked: the run waits without a lease (no attempt spent) until every
   * named decision is closed and every named child run has ended, or until dueAt. The
   * handler should return at once; afterwards the lease refuses writes.
   */
  async park(wait: { decisionIds?: string[]; childRunIds?: string[]; dueAt?: string }, o: CallOptions = {}): Promise<Attempt> {
    const a = await this.send(true, leaseLossCodes, () => this.client.parkAttempt(this.attemptId, { fencingToken: this.fencingToken, ...wait }, o));
    this.parked = true;
    this.settled("parked");
    return a;
  }

  /** Ends the attempt and its run in state; afterwards the lease refuses writes. */
  async complete(state: CompletionState, outcomeHash?: string, o: CallOptions = {}): Promise<Attempt> {
    return this.completeWithError(state, undefined, outcomeHash, o);
  }

  /** complete, recording why the attempt failed or was cancelled (see errorOf). */
  async completeWithError(state: CompletionState, error: AttemptError | undefined, outcomeHash?: string, o: CallOptions = {}): Promise<Attempt> {
    const a = await this.send(true, leaseLossCodes, () =>
      this.client.completeAttempt(this.attemptId, { fencingToken: this.fencingToken, state, outcomeHash, ...(error ? { error } : {}) }, o),
    );
    this.settled(`completed ${state}`);
    return a;
  }

  /**
   * Gives the run back: charge spends one of its attempts; retryAfterMs, when given, is when
   * it is due again (whole seconds, up to a day; 0: at once; undefined: the service's backoff).
   */
  async release(charge: boolean, retryAfterMs?: number, o: CallOptions = {}): Promise<Attempt> {
    return this.releaseWithError(charge, retryAfterMs, undefined, o);
  }

  /** release, recording why the attempt gave the run back (see errorOf). */
  async releaseWithError(charge: boolean, retryAfterMs: number | undefined, error: AttemptError | undefined, o: CallOptions = {}): Promise<Attempt> {
    const retryAfterSeconds = retryAfterMs === undefined ? undefined : Math.round(Math.max(0, Math.min(retryAfterMs, 86_400_000)) / 1000);
    const a = await this.send(true, leaseLossCodes, () =>
      this.client.releaseAttempt(this.attemptId, { fencingToken: this.fencingToken, charge, retryAfterSeconds, ...(error ? { error } : {}) }, o),
    );
    this.settled("released");
    return a;
  }
}
