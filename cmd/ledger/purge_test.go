package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// purgeCLI runs the purge subcommand in-process.
func purgeCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	err = runPurge(ctx, args, &out, &errb)
	return out.String(), errb.String(), err
}

// endedRun makes a run in project p1 of tenant that ended at the given time, through the
// run core on a database whose clock is set to that time.
func endedRun(t *testing.T, path, tenant string, at time.Time, idem string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path, Clock: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := tenancy.NewStore(db).EnsureTenant(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := projects.NewStore(db).Get(ctx, tenant, "p1"); apperr.Is(err, api.CodeNotFound) {
		if _, _, err := projects.NewStore(db).Put(ctx, tenant, "p1", projects.Change{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := runs.NewService(db, runs.DefaultConfig(), nil)
	c := runs.Caller{TenantID: tenant, KeyID: "k"}
	spec := runs.Spec{ProjectID: "p1", Subject: "s-" + uuid.NewString(), Kind: "k", AgentID: "a", StepID: uuid.New(),
		SnapshotID: uuid.New(), MaxAttempts: 3, MaxCorrections: 3}
	if idem != "" {
		spec.IdempotencyKey = &idem
	}
	r, _, err := svc.Enqueue(ctx, c, spec)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := svc.Claim(ctx, c, runs.ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"})
	if err != nil || cl.Run.RunID != r.RunID {
		t.Fatalf("claim: %v", err)
	}
	if _, err := svc.Complete(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, runs.Completion{State: api.AttemptSucceeded}); err != nil {
		t.Fatal(err)
	}
	return r.RunID
}

func TestPurgeCommand(t *testing.T) {
	t.Parallel()
	path := tempDB(t)
	mustCLI(t, "migrate", "--db", path, "up")
	now := time.Now().UTC()
	old := endedRun(t, path, "acme", now.Add(-400*24*time.Hour), "event-1") // past the default 365 days
	young := endedRun(t, path, "acme", now.Add(-time.Hour), "")

	out, _, err := purgeCLI(t, "--db", path, "--dry-run")
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if !strings.HasPrefix(out, "dry run: nothing was deleted") || !containsRow(out, "run chains", "1") ||
		!containsRow(out, "runs", "1") || !containsRow(out, "idempotency tombstones", "1") {
		t.Fatalf("dry run printed:\n%s", out)
	}
	svc := runs.NewService(openTestDB(t, path), runs.DefaultConfig(), nil)
	if _, err := svc.Get(context.Background(), "acme", old); err != nil {
		t.Fatalf("the dry run deleted the old run: %v", err)
	}

	out, _, err = purgeCLI(t, "--db", path, "--batch", "1")
	if err != nil {
		t.Fatalf("purge: %v", err)
	}
	for _, row := range [][2]string{{"run chains", "1"}, {"runs", "1"}, {"attempts", "1"}, {"idempotency tombstones", "1"}, {"batches", "1"}} {
		if !containsRow(out, row[0], row[1]) {
			t.Fatalf("purge output lacks %q %s:\n%s", row[0], row[1], out)
		}
	}
	if _, err := svc.Get(context.Background(), "acme", old); !apperr.Is(err, api.CodeNotFound) {
		t.Fatalf("old run after the purge: %v", err)
	}
	if _, err := svc.Get(context.Background(), "acme", young); err != nil {
		t.Fatalf("young run after the purge: %v", err)
	}
	if out, _, err = purgeCLI(t, "--db", path); err != nil || !containsRow(out, "run chains", "0") {
		t.Fatalf("second purge: %v\n%s", err, out)
	}
}

func TestPurgeCommandRefusesBadArguments(t *testing.T) {
	t.Parallel()
	path := tempDB(t)
	for _, args := range [][]string{
		{"--db", path, "--batch", "0"},
		{"--db", path, "--batch", "100000"},
		{"--db", path, "--batch", "many"},
		{"--db", path, "extra"},
		{"--db", path, "--no-such-flag"},
	} {
		out, _, err := purgeCLI(t, args...)
		if err == nil {
			t.Fatalf("purge %v succeeded:\n%s", args, out)
		}
		if out != "" {
			t.Fatalf("purge %v wrote stdout %q", args, out)
		}
	}
}

// containsRow reports whether the tabwriter output has a line "name   value".
func containsRow(out, name, value string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Join(f[:len(f)-1], " ") == name && f[len(f)-1] == value {
			return true
		}
	}
	return false
}
