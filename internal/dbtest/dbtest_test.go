package dbtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRunSkipsSQLServerOnceWithOneLine runs three suites in a child test process with no
// SQL Server and reads its verbose output: one skipped sqlserver subtest with one line
// saying why, and every SQLite case run.
func TestRunSkipsSQLServerOnceWithOneLine(t *testing.T) {
	if os.Getenv("LEDGER_TEST_MSSQL_DSN") != "" {
		t.Skip("LEDGER_TEST_MSSQL_DSN is set: SQL Server runs, nothing is skipped")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "LEDGER_DBTEST_CHILD=1", "LEDGER_TEST_NO_DOCKER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	text := string(out)
	if n := strings.Count(text, "--- SKIP"); n != 1 {
		t.Fatalf("%d skip lines, want 1:\n%s", n, text)
	}
	if n := strings.Count(text, "sqlserver: LEDGER_TEST_MSSQL_DSN is not set"); n != 1 {
		t.Fatalf("the reason appears %d times, want once:\n%s", n, text)
	}
	for _, suite := range []string{"A", "B", "C"} {
		if !strings.Contains(text, "--- PASS: TestRunChild/"+suite+"/sqlite") {
			t.Fatalf("suite %s did not run on SQLite:\n%s", suite, text)
		}
	}
}

// TestRunChild is the child of TestRunSkipsSQLServerOnceWithOneLine; it does nothing in an
// ordinary run.
func TestRunChild(t *testing.T) {
	if os.Getenv("LEDGER_DBTEST_CHILD") == "" {
		return
	}
	for _, suite := range []string{"A", "B", "C"} {
		t.Run(suite, func(t *testing.T) {
			Run(t, func(t *testing.T, tgt Target) {
				if tgt.Name != "sqlite" {
					t.Fatalf("ran on %s with no SQL Server", tgt.Name)
				}
			})
		})
	}
}
