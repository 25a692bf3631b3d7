package client

import (
	"math/rand/v2"
	"time"
)

// RetryPolicy says how a Client retries a call that failed in a way that may pass: a 429
// (every call: the server refused it before doing anything), a 502, 503 or 504, or a network
// error (only calls that are safe to repeat, unless the connection was never made). Waits
// grow exponentially from Base with full jitter, capped at Max; a Retry-After from the server
// is honoured as the least wait, with up to a quarter more of jitter so that clients told
// the same moment do not all come back at it. No wait outlives the call's context.
type RetryPolicy struct {
	// MaxAttempts is how many times a call is sent at most (default 6; 1: no retries).
	MaxAttempts int
	// Base is the first backoff (default 100ms); Max caps every backoff (default 10s).
	Base, Max time.Duration
	// MaxRetryAfter caps the wait a Retry-After may ask for (default 1m): past it, the call
	// fails with the server's problem instead of waiting.
	MaxRetryAfter time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 6
	}
	if p.Base <= 0 {
		p.Base = 100 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 10 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = time.Minute
	}
	return p
}

// backoff is the wait before try n+1 (n >= 1 tries failed), given the server's Retry-After.
func (p RetryPolicy) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter + rand.N(retryAfter/4+1)
	}
	return fullJitter(p.Base, p.Max, n)
}

// equalJitter is a uniform wait in [d/2, d], d = doubled(base, max, n).
func equalJitter(base, max time.Duration, n int) time.Duration {
	d := doubled(base, max, n)
	return d/2 + rand.N(d/2+1)
}

// fullJitter is a uniform wait in [0, doubled(base, max, n)], at least a millisecond.
func fullJitter(base, max time.Duration, n int) time.Duration {
	return time.Millisecond + rand.N(doubled(base, max, n))
}

// doubled is min(max, base*2^(n-1)), doubling step by step so that a large n cannot
// overflow.
func doubled(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
