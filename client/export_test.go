package client

import (
	"context"
	"time"
)

// SetSleep replaces the waits of c's retries, polls and claim loop (not a Worker's
// heartbeats, which keep real time).
func SetSleep(c *Client, f func(ctx context.Context, d time.Duration) error) { c.sleep = f }

// Sleep is the real wait SetSleep replaces.
var Sleep = sleepCtx

// DefaultRetryPolicy is the policy of a Client made without WithRetry.
func DefaultRetryPolicy() RetryPolicy { return RetryPolicy{}.withDefaults() }

// Present is api/retry.json's whenBody test of a dotted member of a JSON value.
var Present = present
