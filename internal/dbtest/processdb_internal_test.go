package dbtest

import (
	"regexp"
	"testing"
)

// Each package's test process gets a database of its own on a shared SQL Server, named so
// that no two packages (or two runs of one) share it, and safe to splice into DDL.
func TestProcessDatabaseNames(t *testing.T) {
	t.Parallel()
	safe := regexp.MustCompile(`^ledger_test_[a-z0-9_]+_[0-9]+$`)
	calls, runs := processDatabaseName("calls.test", 41), processDatabaseName("runs.test", 41)
	if calls == runs || processDatabaseName("calls.test", 42) == calls {
		t.Fatalf("names collide: %s, %s", calls, runs)
	}
	for _, n := range []string{calls, processDatabaseName("Weird Name];DROP.test", 7), processDatabaseName(string(make([]byte, 300)), 1)} {
		if !safe.MatchString(n) || len(n) > 128 {
			t.Errorf("database name %q is not [a-z0-9_] within 128 characters", n)
		}
	}
}
