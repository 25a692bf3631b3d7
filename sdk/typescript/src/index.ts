export * from "./generated.js";
export { LedgerProblem, TransportError, MaybeAppliedError, isMaybeApplied } from "./problem.js";
export { Client, HeldError, sleep, type ClientOptions, type CallOptions, type Tagged, type Page, type PageQuery } from "./client.js";
export { behaviour } from "./behaviour.js";
export { verifyWebhook, WebhookVerificationError, type WebhookHeaders, type VerifyWebhookOptions } from "./webhook.js";
export { errorOf } from "./errors.js";
export { canonicalJSON, manifestHash, sha256Hex } from "./jcs.js";
export {
  defaultRetryPolicy,
  repeatClassOf,
  mayRepeat,
  failureOfStatus,
  ambiguousCodes,
  type RetryPolicy,
  type FailureClass,
  type RepeatClass,
} from "./retry.js";
export {
  Lease,
  LeaseLostError,
  LeaseEndedError,
  CancelRequestedError,
  ShutdownError,
  ParkedError,
  defaultParkAfterMs,
  uuidV5,
  type CheckpointInput,
  type CallInput,
  type CallReport,
  type DecisionInput,
} from "./lease.js";
export {
  Worker,
  refusalBackoffMs,
  refusalBackoffMaxMs,
  refusalLogEveryMs,
  PermanentError,
  RetryAfterError,
  permanent,
  retryAfter,
  type Handler,
  type WorkerConfig,
  type Retry,
  type Outcome,
  type Result,
  type Logger,
  type Hooks,
} from "./worker.js";
