package client

import "time"

// The Worker's behaviour table: ../api/worker.json, the one table of the three SDKs'
// Workers (TestWorkerBehaviourTable checks that these are that file's values, and the
// TypeScript and Python SDKs' tests check theirs against the same file).
const (
	heartbeatDivisor     = 3                      // a lease is renewed every third of its length
	heartbeatMin         = 10 * time.Millisecond  // and never more often than this
	defaultWaitSeconds   = 5                      // each claim's long poll
	defaultLongPolls     = 2                      // claims waiting for work at once
	defaultIdleWait      = time.Second            // the pause after an empty claim without long polls
	claimBackoffBase     = 500 * time.Millisecond // a failed claim's backoff, full jitter, doubling
	claimBackoffMax      = 30 * time.Second
	heldJitterDivisor    = 8 // a held claim waits Retry-After and up to an eighth more
	heldJitterMax        = time.Minute
	defaultShutdownGrace = 30 * time.Second
	settleTimeoutMin     = 5 * time.Second // the least time a Worker's complete or release gets
)
