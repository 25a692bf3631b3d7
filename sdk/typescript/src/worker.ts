import { setMaxListeners } from "node:events";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { Client, HeldError, sleep } from "./client.js";
import type { ClaimRequest } from "./generated.js";
import { CancelRequestedError, Lease, LeaseLostError, ParkedError, ShutdownError, defaultParkAfterMs } from "./lease.js";
import { LedgerProblem } from "./problem.js";
import { equalJitter, fullJitter } from "./retry.js";
import { behaviour } from "./behaviour.js";
import { errorOf } from "./errors.js";

/** Refused claims back off from refusalBackoffMs, doubling to refusalBackoffMaxMs; each cause is logged at most once per refusalLogEveryMs. */
export const refusalBackoffMs = behaviour.claimBackoff.refusedBaseMs;
export const refusalBackoffMaxMs = behaviour.claimBackoff.refusedMaxMs;
export const refusalLogEveryMs = behaviour.claimBackoff.refusalLogEveryMs;

/**
 * refusedClaim: the service refused a claim for what it asks (a 4xx other than 408 and 429:
 * a release that is not active, an unknown project), which an operator may fix while the
 * worker waits: it keeps trying, slowly.
 */
function refusedClaim(err: unknown): err is LedgerProblem {
  const r = behaviour.refusalClasses.refused;
  return err instanceof LedgerProblem && err.status >= r.statusFrom && err.status <= r.statusTo && !(r.except as readonly number[]).includes(err.status);
}

/**
 * Handler does the work of one claimed run. Its signal aborts when the lease is lost
 * (reason LeaseLostError), when the run is cancelled (CancelRequestedError) or when the
 * Worker's shutdown grace runs out (ShutdownError). How it settles decides how the attempt
 * ends: resolved, completed succeeded; rejected with permanent(err), completed failed;
 * rejected otherwise, released with a charge (due after retryAfter(err, ms) when given);
 * anything after a cancel request, completed cancelled. After the lease is lost nothing is
 * sent. A handler may end its lease itself (lease.complete, lease.release).
 */
export type Handler = (lease: Lease, signal: AbortSignal) => Promise<void>;

/** PermanentError marks a handler's failure as final: the attempt completes failed. */
export class PermanentError extends Error {
  override name = "PermanentError";
  constructor(cause: unknown) {
    super(`permanent: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** permanent marks err as final: the Worker completes the attempt as failed instead of releasing it. */
export function permanent(err: unknown): PermanentError {
  return new PermanentError(err);
}

/** RetryAfterError carries when the run should be tried again. */
export class RetryAfterError extends Error {
  override name = "RetryAfterError";
  constructor(
    cause: unknown,
    readonly retryAfterMs: number,
  ) {
    super((cause as Error)?.message ?? String(cause), { cause });
  }
}

/** retryAfter marks err with when the run should be tried again (released charged, due after ms). */
export function retryAfter(err: unknown, ms: number): RetryAfterError {
  return new RetryAfterError(err, ms);
}

/** How a run whose handler failed is released. */
export interface Retry {
  charge: boolean;
  /** When it is due again, ms (undefined: the service's backoff). */
  afterMs?: number;
}

/** How a claimed run's lease was settled. */
export type Outcome =
  | "succeeded"
  | "failed"
  | "cancelled"
  | "released"
  | "lease_lost"
  | "shutdown_released"
  | "settled_by_handler"
  | "unsettled"
  /** The handler parked the run (decide, waitChildren or lease.park) to wait without a lease. */
  | "parked";

/** What became of one claimed run. */
export interface Result {
  lease: Lease;
  outcome: Outcome;
  /** What the handler threw (undefined when it resolved). */
  error?: unknown;
  durationMs: number;
  /** Why the complete or release failed (outcome unsettled or lease_lost). */
  settleError?: unknown;
}

/** A structured logger (console's methods fit). */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Warnings and errors as JSON lines on standard error. */
const defaultLogger: Logger = {
  debug() {},
  info() {},
  warn: (msg, fields) => console.error(JSON.stringify({ level: "warn", msg, ...fields })),
  error: (msg, fields) => console.error(JSON.stringify({ level: "error", msg, ...fields })),
};

/** Optional callbacks for metrics. */
export interface Hooks {
  claimed?(lease: Lease): void;
  held?(retryAfterSeconds: number): void;
  claimFailed?(err: unknown): void;
  finished?(r: Result): void;
}

/** WorkerConfig: releaseId, adapterVersion and modelProfileId are required. */
export interface WorkerConfig {
  /** Names this worker in the runs it leases (default: host, pid and a random suffix). */
  holderId?: string;
  releaseId: string;
  adapterVersion: string;
  modelProfileId: string;
  /** Each lease's length, 1..3600 (default: the service's). */
  leaseSeconds?: number;
  kinds?: string[];
  agentIds?: string[];
  projectIds?: string[];
  /** How many handlers run at once (default 1). */
  concurrency?: number;
  /** How many claims may wait for work at once (default 2, at most concurrency). */
  longPolls?: number;
  /** Each claim's long poll, 0..30 (default 5; -1: 0, paced by idleWaitMs). */
  waitSeconds?: number;
  /** The pause after an empty claim when waitSeconds is -1 (default 1000). */
  idleWaitMs?: number;
  /** How often a lease is renewed (default: a third of its length). */
  heartbeatEveryMs?: number;
  /** How long running handlers may finish after the stop signal (default 30000). */
  shutdownGraceMs?: number;
  /** How long a handler's decide or waitChildren waits before it parks the run, ms (default 30000). While the Worker stops they park at once. */
  parkAfterMs?: number;
  /** How a run whose handler failed is released (default: charged, due after retryAfter's delay if any). */
  onError?(lease: Lease, err: unknown): Retry;
  logger?: Logger;
  hooks?: Hooks;
}

/** describe is an error's text for a log line, whatever was thrown. */
function describe(err: unknown): string {
  try {
    return err instanceof Error ? String(err) : `non-Error thrown: ${typeof err === "object" ? JSON.stringify(err) : String(err)}`;
  } catch {
    return "non-Error thrown (not printable)";
  }
}

/** fatal: a claim error that trying again will not pass. */
function fatal(err: unknown): boolean {
  return err instanceof LedgerProblem && (behaviour.refusalClasses.fatal as readonly string[]).includes(err.code);
}

/**
 * Beat paces one lease's renewals: a timer between them and, only while one is in flight,
 * an AbortController that stop() aborts. A run that ends before its first renewal makes
 * neither a controller nor a listener.
 */
class Beat {
  stopped = false;
  private timer?: NodeJS.Timeout;
  private wake?: (more: boolean) => void;
  private inflight?: AbortController;

  /** sleep resolves true after ms, false once stopped. */
  sleep(ms: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    this.inflight = undefined;
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(() => {
        this.wake = undefined;
        resolve(true);
      }, ms);
    });
  }

  /** request is the signal of the renewal about to be sent. */
  request(): AbortSignal {
    this.inflight = new AbortController();
    return this.inflight.signal;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake?.(false);
    this.inflight?.abort();
  }
}

/** A counting semaphore whose waits end with a signal. */
class Slots {
  private waiters: (() => void)[] = [];
  constructor(private free: number) {}
  async take(signal?: AbortSignal): Promise<boolean> {
    if (this.free > 0) {
      this.free--;
      return true;
    }
    if (signal?.aborted) return false;
    return new Promise((resolve) => {
      const w = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      };
      const onAbort = () => {
        this.waiters = this.waiters.filter((x) => x !== w);
        resolve(false);
      };
      this.waiters.push(w);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
  give(): void {
    const w = this.waiters.shift();
    if (w) w();
    else this.free++;
  }
  /** kick wakes one waiter, or leaves one slot for the next taker (at most one). */
  kick(): void {
    const w = this.waiters.shift();
    if (w) w();
    else this.free = 1;
  }
}

/**
 * Worker claims runs and runs a Handler for each, keeping its lease renewed; it mirrors the
 * Go SDK's client.Worker.
 */
export class Worker {
  readonly holderId: string;
  private readonly cfg: Required<Pick<WorkerConfig, "concurrency" | "longPolls" | "waitSeconds" | "idleWaitMs" | "shutdownGraceMs">> & WorkerConfig;
  private readonly log: Logger;
  private readonly leases = new Set<Lease>();
  private forced = false;
  /** When each cause of a refused claim was last logged, and how many went unlogged since. */
  private readonly refusals = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly client: Client,
    cfg: WorkerConfig,
    private readonly handler: Handler,
  ) {
    if (!cfg.releaseId || !cfg.adapterVersion || !cfg.modelProfileId) {
      throw new TypeError("ledger worker: releaseId, adapterVersion and modelProfileId are required");
    }
    if (cfg.leaseSeconds !== undefined && (cfg.leaseSeconds < 0 || cfg.leaseSeconds > 3600)) {
      throw new RangeError(`ledger worker: leaseSeconds ${cfg.leaseSeconds} is outside 0..3600`);
    }
    if (cfg.waitSeconds !== undefined && (cfg.waitSeconds < -1 || cfg.waitSeconds > 30)) {
      throw new RangeError(`ledger worker: waitSeconds ${cfg.waitSeconds} is outside -1..30`);
    }
    const concurrency = Math.max(1, cfg.concurrency ?? 1);
    const wait = cfg.waitSeconds === undefined || cfg.waitSeconds === 0 ? behaviour.claim.waitSeconds : cfg.waitSeconds === -1 ? 0 : cfg.waitSeconds;
    this.cfg = {
      ...cfg,
      concurrency,
      longPolls: Math.min(Math.max(1, cfg.longPolls ?? behaviour.claim.longPolls), concurrency),
      waitSeconds: wait,
      idleWaitMs: cfg.idleWaitMs ?? behaviour.claim.idleWaitMs,
      shutdownGraceMs: cfg.shutdownGraceMs ?? behaviour.shutdown.graceMs,
    };
    this.holderId = cfg.holderId || `${hostname() || "worker"}-${process.pid}-${randomBytes(4).toString("hex")}`.slice(-128);
    this.log = cfg.logger ?? defaultLogger;
  }

  /**
   * hook calls one of the user's hooks, containing what it throws: a sync throw, a
   * rejected promise (an async hook) or a non-Error value is logged once and changes
   * nothing else; the run goes on as if the hook had returned.
   */
  private hook<A>(name: keyof Hooks, arg: A): void {
    const f = this.cfg.hooks?.[name] as ((a: A) => unknown) | undefined;
    if (!f) return;
    try {
      const p = f.call(this.cfg.hooks, arg);
      if (p && typeof (p as Promise<unknown>).then === "function") {
        (p as Promise<unknown>).then(undefined, (err: unknown) => this.log.error("a hook failed", { hook: name, err: describe(err) }));
      }
    } catch (err) {
      this.log.error("a hook failed", { hook: name, err: describe(err) });
    }
  }

  /** How many handlers are running now. */
  get running(): number {
    return this.leases.size;
  }

  /**
   * run claims and handles runs until stop aborts, then shuts down: it stops claiming, lets
   * running handlers and claims in flight finish within shutdownGraceMs (a run claimed while
   * stopping is released uncharged at once), then aborts the remaining handlers' signals
   * with ShutdownError and releases their leases uncharged, and resolves once every handler
   * has settled. It rejects with the error that stopped claiming for good (unauthorized,
   * forbidden, invalid_request) after shutting down the same way.
   */
  async run(stop: AbortSignal): Promise<void> {
    this.forced = false;
    const stopping = new AbortController();
    const onStop = () => stopping.abort(stop.reason);
    if (stop.aborted) onStop();
    else stop.addEventListener("abort", onStop, { once: true });
    // Claims outlive the stop signal: they end by the grace, not by the caller.
    const claims = new AbortController();
    // Each poller listens on both while it waits or claims (a claim's transport on claims, a
    // wait on stopping): up to two per handler, all removed when each ends, so more than ten
    // handlers are no leak for Node to warn of.
    const listeners = 2 * this.cfg.concurrency + 8;
    setMaxListeners(listeners, stopping.signal, claims.signal);
    let fatalErr: unknown;
    const slots = new Slots(this.cfg.concurrency);
    const turns = { long: new Slots(this.cfg.longPolls), kick: new Slots(0) };
    const handlers = new Set<Promise<void>>();
    const pollers: Promise<void>[] = [];
    for (let i = 0; i < this.cfg.concurrency; i++) {
      pollers.push(
        this.poll(stopping.signal, claims.signal, slots, turns, handlers).catch((err) => {
          fatalErr ??= err;
          stopping.abort(err);
        }),
      );
    }
    const all = async () => {
      await Promise.all(pollers);
      while (handlers.size > 0) await Promise.all([...handlers]);
    };
    const done = all();
    await Promise.race([done, new Promise<void>((r) => stopping.signal.addEventListener("abort", () => r(), { once: true }))]);
    if (stopping.signal.aborted) {
      this.log.info("worker stopping", { graceMs: this.cfg.shutdownGraceMs, running: this.running });
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<"grace">((r) => (timer = setTimeout(() => r("grace"), this.cfg.shutdownGraceMs)));
      const first = await Promise.race([done.then(() => "done" as const), grace]);
      clearTimeout(timer);
      if (first === "grace") {
        claims.abort(new ShutdownError("the grace ran out"));
        await this.forceRelease();
      }
      await done;
    }
    stop.removeEventListener("abort", onStop);
    if (fatalErr !== undefined) throw fatalErr;
  }

  /** forceRelease ends every running lease with ShutdownError and releases it uncharged. */
  private async forceRelease(): Promise<void> {
    this.forced = true;
    const work: Promise<void>[] = [];
    for (const l of this.leases) {
      if (!l.end(new ShutdownError(`the grace of ${this.cfg.shutdownGraceMs}ms ran out`))) continue;
      work.push(this.releaseUncharged(l, "shutdown grace ran out"));
    }
    await Promise.all(work);
  }

  /** releaseUncharged gives a run back as it was, due at once, bypassing the lease's local refusal. */
  private async releaseUncharged(l: Lease, why: string): Promise<void> {
    try {
      await this.client.releaseAttempt(
        l.attemptId,
        { fencingToken: l.fencingToken, retryAfterSeconds: 0 },
        { timeoutMs: Math.max(l.lengthMs, behaviour.shutdown.settleTimeoutMinMs) },
      );
      this.log.info("released the lease uncharged", { why, runId: l.runId });
    } catch (err) {
      this.log.warn("releasing the lease failed; the reaper takes the run back when it passes", { why, err: String(err) });
    }
  }

  private async poll(
    stop: AbortSignal,
    claims: AbortSignal,
    slots: Slots,
    turns: { long: Slots; kick: Slots },
    handlers: Set<Promise<void>>,
  ): Promise<void> {
    const req: ClaimRequest = {
      holderId: this.holderId,
      releaseId: this.cfg.releaseId,
      adapterVersion: this.cfg.adapterVersion,
      modelProfileId: this.cfg.modelProfileId,
      waitSeconds: this.cfg.waitSeconds,
      kinds: this.cfg.kinds,
      agentIds: this.cfg.agentIds,
      projectIds: this.cfg.projectIds,
      leaseSeconds: this.cfg.leaseSeconds || undefined,
    };
    const state = { failures: 0, refused: 0 };
    for (;;) {
      if (!(await slots.take(stop))) return; // a free slot first: a claim holds its run from the moment it answers
      const got = await this.claimOne(stop, claims, req, turns, state);
      if (!got) {
        slots.give();
        return;
      }
      const [l, sent] = got;
      if (stop.aborted) {
        l.end(new ShutdownError("claimed while stopping"));
        await this.releaseUncharged(l, "claimed while stopping");
        this.hook("finished", { lease: l, outcome: "shutdown_released", durationMs: 0 } as Result);
        slots.give();
        return;
      }
      const h = this.handle(l, sent, stop).finally(() => {
        handlers.delete(h);
        slots.give();
      });
      handlers.add(h);
    }
  }

  /** claimOne claims until it leases a run, until stop aborts (undefined), or throws a fatal claim error. */
  private async claimOne(
    stop: AbortSignal,
    claims: AbortSignal,
    req: ClaimRequest,
    turns: { long: Slots; kick: Slots },
    state: { failures: number; refused: number },
  ): Promise<[Lease, number] | undefined> {
    const quick = { ...req, waitSeconds: 0 };
    let waiting = false; // the last claim found nothing: wait for a turn
    while (!stop.aborted) {
      let r: ClaimRequest = quick;
      let long = false;
      if (waiting && this.cfg.waitSeconds > 0) {
        // A long-poll turn, or a kick (another poller found a run: there may be more).
        const ac = new AbortController();
        const onStop = () => ac.abort();
        stop.addEventListener("abort", onStop, { once: true });
        let gotLong = false;
        let gotKick = false;
        const pl = turns.long.take(ac.signal).then((ok) => void (gotLong = ok));
        const pk = turns.kick.take(ac.signal).then((ok) => void (gotKick = ok));
        await Promise.race([pl, pk]);
        ac.abort();
        await Promise.all([pl, pk]);
        stop.removeEventListener("abort", onStop);
        if (gotLong && gotKick) turns.kick.kick(); // both came: the kick is another poller's
        if (stop.aborted) {
          if (gotLong) turns.long.give();
          return undefined;
        }
        if (gotLong) {
          r = req;
          long = true;
        }
      }
      const sent = Date.now();
      try {
        const cl = await this.client.claimRun(r, { signal: claims });
        if (long) turns.long.give();
        state.failures = 0;
        state.refused = 0;
        if (!cl) {
          waiting = true;
          if (this.cfg.waitSeconds === 0) await sleep(this.cfg.idleWaitMs, stop).catch(() => undefined);
          continue;
        }
        turns.kick.kick(); // where there was a run there may be more: one waiting poller claims too
        return [new Lease(this.client, cl), sent];
      } catch (err) {
        if (long) turns.long.give();
        if (err instanceof HeldError) {
          state.failures = 0;
          state.refused = 0;
          this.hook("held", err.retryAfter);
          const ms = err.retryAfter * 1000;
          const b = behaviour.claimBackoff;
          await sleep(ms + fullJitter(ms / b.heldJitterDivisor + 1, b.heldJitterMaxMs, 1), stop).catch(() => undefined);
          continue;
        }
        if (claims.aborted) return undefined;
        this.hook("claimFailed", err);
        if (fatal(err)) {
          this.log.error("claim refused; the worker stops", { err: String(err) });
          throw err;
        }
        if (refusedClaim(err)) {
          state.failures = 0;
          state.refused++;
          const wait = equalJitter(behaviour.claimBackoff.refusedBaseMs, behaviour.claimBackoff.refusedMaxMs, state.refused);
          this.logRefusal(err, wait);
          await sleep(wait, stop).catch(() => undefined);
          continue;
        }
        state.refused = 0;
        state.failures++;
        let wait = fullJitter(behaviour.claimBackoff.failedBaseMs, behaviour.claimBackoff.failedMaxMs, state.failures);
        if (err instanceof LedgerProblem && err.retryAfter && err.retryAfter * 1000 > wait) wait = err.retryAfter * 1000;
        this.log.warn("claim failed; trying again", { err: String(err), waitMs: wait });
        await sleep(wait, stop).catch(() => undefined);
      }
    }
    return undefined;
  }

  /** logRefusal logs a refused claim unless its cause was logged less than refusalLogEveryMs ago. */
  private logRefusal(err: LedgerProblem, waitMs: number): void {
    const cause = `${err.status} ${err.code}`;
    const now = Date.now();
    const last = this.refusals.get(cause);
    if (last && now - last.at < behaviour.claimBackoff.refusalLogEveryMs) {
      last.suppressed++;
      return;
    }
    this.refusals.set(cause, { at: now, suppressed: 0 });
    this.log.error("claim refused: check the worker's configuration (release, project, kinds); trying again with backoff", {
      err: String(err),
      status: err.status,
      code: err.code,
      waitMs,
      unloggedSinceLast: last?.suppressed ?? 0,
    });
  }

  /** handle runs the handler for one lease with its heartbeat, then settles the lease. */
  private async handle(l: Lease, sent: number, stopping: AbortSignal): Promise<void> {
    if (this.forced) {
      l.end(new ShutdownError("the grace ran out"));
      await this.releaseUncharged(l, "shutdown grace ran out");
      this.hook("finished", { lease: l, outcome: "shutdown_released", durationMs: 0 } as Result);
      return;
    }
    const ac = new AbortController();
    l.onEnd = (cause) => {
      if (cause instanceof LeaseLostError || cause instanceof ShutdownError) ac.abort(cause);
    };
    l.parkAfterMs = this.cfg.parkAfterMs && this.cfg.parkAfterMs > 0 ? this.cfg.parkAfterMs : defaultParkAfterMs;
    l.stopping = stopping;
    this.leases.add(l);
    try {
      if (l.fencingToken > 1) {
        // Claimed before: a holder that died mid-run (SIGKILL) cost the run one of its attempts.
        this.log.warn("resuming run", {
          runId: l.runId,
          attempt: l.run.attemptsSpent + 1,
          maxAttempts: l.run.maxAttempts,
          epoch: l.fencingToken,
          note: "a run whose attempts are all spent ends exhausted",
        });
      }
      this.hook("claimed", l);
      const beat = new Beat();
      const beating = this.heartbeat(l, sent, ac, beat);
      const start = Date.now();
      let herr: unknown;
      let failed = false;
      try {
        // A sync throw, a rejected promise and a thrown non-Error all land here alike.
        await this.handler(l, ac.signal);
      } catch (err) {
        herr = err;
        failed = true;
      }
      const durationMs = Date.now() - start;
      beat.stop();
      await beating;
      const r = await this.settle(l, failed, herr);
      r.durationMs = durationMs;
      this.hook("finished", r);
    } finally {
      this.leases.delete(l);
    }
  }

  /**
   * heartbeat renews the lease every heartbeatEveryMs until beat stops. A refusal that
   * means the lease is gone ends it (which aborts the handler); so do renewals that keep
   * failing until the lease has passed by this machine's clock. A pending cancel is
   * acknowledged once and aborts the handler's signal with CancelRequestedError.
   */
  private async heartbeat(l: Lease, sent: number, handler: AbortController, beat: Beat): Promise<void> {
    const every = Math.max(this.cfg.heartbeatEveryMs ?? l.lengthMs / behaviour.heartbeat.leaseDivisor, behaviour.heartbeat.minMs);
    let deadline = sent + l.lengthMs;
    let acked = false;
    let wait = every;
    for (;;) {
      if (!(await beat.sleep(wait))) return;
      if (l.err) return;
      const hbSent = Date.now();
      const signal = beat.request(); // made only when a renewal is sent: most runs send none
      try {
        const hb = await l.heartbeat({ signal, timeoutMs: Math.max(1, deadline - Date.now()) });
        deadline = hbSent + l.lengthMs;
        wait = every;
        if (hb.cancelRequested && !acked) {
          acked = true;
          try {
            await l.acknowledgeCancellation({ signal });
          } catch (err) {
            if (!(err instanceof LeaseLostError)) this.log.warn("acknowledging the cancel request failed", { err: String(err) });
          }
          this.log.info("run cancel requested", { runId: l.runId });
          handler.abort(new CancelRequestedError());
        }
      } catch (err) {
        const ended = l.err as Error | undefined; // the heartbeat may have ended it meanwhile
        if (ended) {
          if (ended instanceof LeaseLostError) this.log.warn("lease lost", { err: String(err), runId: l.runId });
          return;
        }
        if (beat.stopped) return;
        if (Date.now() >= deadline) {
          const e = l.lost("renewals failed until the lease passed by this machine's clock", err);
          this.log.warn("lease lost", { err: String(e), runId: l.runId });
          return;
        }
        wait = Math.min(every, Math.max((deadline - Date.now()) / 3, 10));
        this.log.warn("renewing the lease failed; trying again", { err: String(err), waitMs: wait });
      }
    }
  }

  /** retryOf is how a failed run is released: onError's answer, or the default when there is none or it throws. */
  private retryOf(l: Lease, herr: unknown): Retry {
    const dflt = { charge: true, afterMs: herr instanceof RetryAfterError ? herr.retryAfterMs : undefined };
    if (!this.cfg.onError) return dflt;
    try {
      return this.cfg.onError(l, herr);
    } catch (err) {
      this.log.error("a hook failed", { hook: "onError", err: describe(err) });
      return dflt;
    }
  }

  /** settle ends the attempt as the handler's outcome says, unless the lease has ended. */
  private async settle(l: Lease, failed: boolean, herr: unknown): Promise<Result> {
    const r: Result = { lease: l, outcome: "succeeded", error: failed && !(herr instanceof ParkedError) ? herr : undefined, durationMs: 0 };
    if (l.err) {
      r.outcome = l.err instanceof LeaseLostError ? "lease_lost" : l.err instanceof ShutdownError ? "shutdown_released" : l.parked ? "parked" : "settled_by_handler";
      if (r.outcome === "parked") this.log.info("run parked", { runId: l.runId });
      if (r.outcome === "lease_lost" && !failed) this.log.warn("handler returned after its lease was lost; nothing was recorded of its end", { runId: l.runId });
      return r;
    }
    const o = { timeoutMs: Math.max(l.lengthMs, behaviour.shutdown.settleTimeoutMinMs) };
    try {
      if (l.cancelRequested) {
        r.outcome = "cancelled";
        await l.completeWithError("cancelled", failed ? errorOf(herr) : undefined, undefined, o);
      } else if (!failed) {
        r.outcome = "succeeded";
        await l.complete("succeeded", undefined, o);
      } else if (herr instanceof PermanentError) {
        r.outcome = "failed";
        await l.completeWithError("failed", errorOf(herr), undefined, o);
      } else {
        r.outcome = "released";
        const retry = this.retryOf(l, herr);
        await l.releaseWithError(retry.charge, retry.afterMs, errorOf(herr), o);
      }
      if (failed || r.outcome === "cancelled") this.log.warn("run settled", { outcome: r.outcome, err: describe(herr) });
    } catch (err) {
      r.settleError = err;
      if (err instanceof LeaseLostError) {
        r.outcome = "lease_lost";
        this.log.warn("lease lost before it was settled", { err: String(err) });
      } else {
        r.outcome = "unsettled";
        this.log.error("settling the lease failed; the reaper takes the run back when it passes", { err: String(err) });
      }
    }
    return r;
  }
}
