package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

// childArgs is the variable that makes the test binary run `ledger` with these arguments
// (a JSON array) instead of the tests: a child process a test can kill without building
// the binary.
const childArgs = "LEDGER_TEST_CHILD_ARGS"

// childArgv is the variable that makes the test binary run `ledger` with its own command
// line (os.Args[1:]): what a shell script calls as ledger.
const childArgv = "LEDGER_TEST_CHILD_ARGV"

func TestMain(m *testing.M) {
	if os.Getenv(childArgv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	if a := os.Getenv(childArgs); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			os.Exit(3)
		}
		os.Exit(run(context.Background(), args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// child starts `ledger args…` in a process of its own.
func child(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: tests that kill a child process are skipped")
	}
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgs+"="+string(a))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// schemaObjects lists the tables, indexes and triggers of a SQLite file, read directly.
func schemaObjects(t *testing.T, path string) []string {
	t.Helper()
	db := openTestDB(t, path)
	var names []string
	if err := db.Raw().Select(&names, `SELECT type || ' ' || name FROM sqlite_master
		WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestKilledMigrationLeavesACleanVersion kills `migrate up`, and the first `serve` of a new
// file, with SIGKILL at random points, and checks each time that the file is at a clean
// version whose tables, indexes and triggers are exactly those of that version, and that
// `migrate up` (or serve) then finishes the job. Not parallel: it times its kills.
func TestKilledMigrationLeavesACleanVersion(t *testing.T) {
	n := latest(t)
	// The schema of every version, from a file migrated down one step at a time.
	want := map[uint][]string{}
	ref := tempDB(t)
	mustCLI(t, "migrate", "up", "--db", ref)
	for v := n; ; v-- {
		want[uint(v)] = schemaObjects(t, ref)
		if v == 0 {
			break
		}
		mustCLI(t, "migrate", "down", "1", "--db", ref)
	}

	// The kills land between the moment the child creates the file and the moment an
	// uninterrupted child is done with it (process start-up is of no interest).
	waitFile := func(path string, cmd *exec.Cmd) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				return
			}
		}
		_ = cmd.Process.Kill()
		t.Fatalf("the child did not create %s", path)
	}
	path := tempDB(t)
	cmd := child(t, "migrate", "up", "--db", path)
	waitFile(path, cmd)
	start := time.Now()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	upTime := time.Since(start)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
	seen := map[uint]int{}
	check := func(path, what string) {
		t.Helper()
		if _, err := os.Stat(path); err != nil {
			return // killed before it created the file
		}
		st, err := migrate.ReadState(context.Background(), openTestDB(t, path))
		if err != nil {
			t.Fatalf("%s: read the version: %v", what, err)
		}
		if st.Dirty {
			t.Fatalf("%s: left version %d dirty", what, st.Version)
		}
		// At version 0 golang-migrate may have been killed while making its version table
		// (a table and an index, each committed alone): part of it, or nothing, is version 0
		// too, and the next run completes it.
		got := schemaObjects(t, path)
		partOfZero := st.Version == 0 && !slices.ContainsFunc(got, func(o string) bool { return !slices.Contains(want[0], o) })
		if !slices.Equal(got, want[st.Version]) && !partOfZero {
			t.Fatalf("%s: version %d, but the schema is not that version's:\ngot  %v\nwant %v", what, st.Version, got, want[st.Version])
		}
		if !strings.Contains(what, "then") {
			seen[st.Version]++
		}
	}

	const kills = 12
	for i := range kills {
		path := filepath.Join(t.TempDir(), "ledger.db")
		args := []string{"migrate", "up", "--db", path}
		if i%3 == 2 {
			args = []string{"serve", "--db", path, "--addr", "127.0.0.1:0", "--purge-interval", "-1s"}
		}
		cmd := child(t, args...)
		waitFile(path, cmd)
		time.Sleep(time.Duration(rng.Int64N(int64(upTime))))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		what := "killed " + strings.Join(args[:2], " ")
		check(path, what)
		// What the operator does next finishes the job.
		mustCLI(t, "migrate", "up", "--db", path)
		st, err := migrate.ReadState(context.Background(), openTestDB(t, path))
		if err != nil || !st.Current() {
			t.Fatalf("%s, then migrate up: %+v %v", what, st, err)
		}
		check(path, what+", then migrate up")
	}
	t.Logf("versions seen after a kill (version: times): %v", seen)
}
