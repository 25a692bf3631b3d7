package sqldb

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupRefusesSideFileNames is issue 30 item 7: a backup named as the database's
// rollback journal was accepted (the CLI then failed with SQLITE_BUSY while it existed, and
// the next serve rolled it back as a hot journal). Side-file names are refused, and
// nothing is written.
func TestBackupRefusesSideFileNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	db, _ := openLogged(t, path)
	for _, out := range []string{path + "-journal", path + "-wal", path + "-shm", path + ".lock",
		filepath.Join(dir, "other.db-journal"), filepath.Join(dir, "copies", "x.db-wal")} {
		err := db.Backup(context.Background(), out)
		if err == nil || !strings.Contains(err.Error(), "choose another name") {
			t.Errorf("backup to %s: %v, want it refused", out, err)
		}
		if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
			t.Errorf("backup to %s left a copy: %v", out, err)
		}
	}
}

// TestBackupCleansWhatAKilledBackupLeft: a backup killed while it wrote leaves X.partial
// and its journal; the next backup to X removes both, says so, and writes X.
func TestBackupCleansWhatAKilledBackupLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, logs := openLogged(t, filepath.Join(dir, "ledger.db"))
	if err := insertRow(db, 1); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "backup.db")
	for _, left := range []string{out + ".partial", out + ".partial-journal"} {
		if err := os.WriteFile(left, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Backup(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	for _, left := range []string{out + ".partial", out + ".partial-journal"} {
		if _, err := os.Stat(left); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", left, err)
		}
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "removed what an interrupted backup left") || !strings.Contains(logs.String(), "backup.db.partial-journal") {
		t.Fatalf("the cleanup is not said:\n%s", logs.String())
	}
}
