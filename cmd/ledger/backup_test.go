package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/tenancy"
)

// TestKeysCarryALabelAndLastUse: keys create --label names a key; keys list shows the label,
// when it was created and when it was last used (none until it authenticates).
func TestKeysCarryALabelAndLastUse(t *testing.T) {
	t.Parallel()
	path := migratedDB(t)
	token := lastLine(mustCLI(t, "keys", "create", "--db", path, "--tenant", "acme", "--role", "runtime", "--label", "ci deploy bot"))
	unlabelled := lastLine(mustCLI(t, "keys", "create", "--db", path, "--tenant", "acme", "--role", "admin"))
	row := func(token string) []string {
		t.Helper()
		out := mustCLI(t, "keys", "list", "--db", path)
		if !strings.HasPrefix(out, "KEY ID  ") || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "LABEL") ||
			!strings.Contains(strings.SplitN(out, "\n", 2)[0], "LAST USED") {
			t.Fatalf("keys list header: %q", out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, keyID(token)) {
				return strings.Fields(l)
			}
		}
		t.Fatalf("keys list does not show %s: %q", keyID(token), out)
		return nil
	}
	// KEY ID, TENANT, ROLE, LABEL (three words here), CREATED, LAST USED, REVOKED
	if r := row(token); len(r) != 9 || strings.Join(r[3:6], " ") != "ci deploy bot" || r[7] != "-" || r[8] != "-" {
		t.Fatalf("labelled key row %q", r)
	}
	if r := row(unlabelled); len(r) != 7 || r[3] != "-" || r[5] != "-" {
		t.Fatalf("unlabelled key row %q", r)
	}
	db := openTestDB(t, path)
	before := time.Now().Add(-time.Second).UTC().Truncate(time.Second)
	if _, err := tenancy.NewStore(db).Authenticate(context.Background(), token); err != nil {
		t.Fatal(err)
	}
	// The use is written in the background: wait for it, boundedly.
	var used string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if used = row(token)[7]; used != "-" {
			break
		}
	}
	at, err := time.Parse(time.RFC3339, used)
	if err != nil || at.Before(before) {
		t.Fatalf("LAST USED %q (%v) after authenticating at %s", used, err, before)
	}
	if r := row(unlabelled); r[5] != "-" {
		t.Fatalf("a key that never authenticated shows a last use: %q", r)
	}
	for _, bad := range []string{"tab\there", strings.Repeat("x", 101), " padded", "zero\u200bwidth"} {
		code, stdout, stderr := cli(t, "keys", "create", "--db", path, "--tenant", "acme", "--role", "admin", "--label", bad)
		wantOneLineError(t, "keys", code, stdout, stderr)
		if !strings.Contains(stderr, "label") {
			t.Fatalf("label %q refused without naming it: %q", bad, stderr)
		}
	}
}

// TestBackupWhileWriting: ledger backup copies a database another handle keeps writing to;
// the copy holds every write committed before the backup began, passes ledger check, and
// serves. An existing --out is refused.
func TestBackupWhileWriting(t *testing.T) {
	t.Parallel()
	path := migratedDB(t)
	store := tenancy.NewStore(openTestDB(t, path))
	ctx := context.Background()
	var made atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := store.CreateKey(ctx, "busy", tenancy.RoleRuntime); err != nil {
				t.Error(err)
				return
			}
			made.Add(1)
		}
	}()
	for made.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	out := filepath.Join(t.TempDir(), "backup.db")
	atStart := made.Load()
	got := mustCLI(t, "backup", "--db", path, "--out", out)
	atEnd := made.Load()
	close(stop)
	wg.Wait()
	if !strings.Contains(got, "backup written to "+out) || !strings.Contains(got, "database ready to serve") {
		t.Fatalf("backup printed %q", got)
	}
	if _, err := os.Stat(out + ".partial"); err == nil {
		t.Fatal("the temporary copy was left behind")
	}
	mustCLI(t, "check", "--db", out)
	keys := strings.Count(mustCLI(t, "keys", "list", "--db", out, "--tenant", "busy"), " busy ")
	if int64(keys) < atStart || int64(keys) > atEnd {
		t.Fatalf("the copy holds %d keys; %d were committed when the backup began, %d when it ended", keys, atStart, atEnd)
	}
	// The copy is a database ledger serves: a key made in it authenticates there.
	tok := lastLine(mustCLI(t, "keys", "create", "--db", out, "--tenant", "restored", "--role", "admin"))
	if _, err := tenancy.NewStore(openTestDB(t, out)).Authenticate(ctx, tok); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := cli(t, "backup", "--db", path, "--out", out)
	wantOneLineError(t, "backup", code, stdout, stderr)
	if !strings.Contains(stderr, "exists") {
		t.Fatalf("an existing --out: %q", stderr)
	}
	code, stdout, stderr = cli(t, "backup", "--db", path)
	wantOneLineError(t, "backup", code, stdout, stderr)
	code, stdout, stderr = cli(t, "backup", "--db", filepath.Join(t.TempDir(), "none.db"), "--out", filepath.Join(t.TempDir(), "x.db"))
	wantOneLineError(t, "backup", code, stdout, stderr)
}
