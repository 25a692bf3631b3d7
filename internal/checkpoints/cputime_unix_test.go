//go:build unix

package checkpoints_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used (user and system). Benchmarks report it per
// operation beside the wall time, which on a shared machine mostly measures the wait for a
// CPU.
func cpuTime() time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
