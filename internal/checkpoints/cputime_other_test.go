//go:build !unix

package checkpoints_test

import "time"

// cpuTime is not measured here; benchmarks then report 0 cpu-ns/op.
func cpuTime() time.Duration { return 0 }
