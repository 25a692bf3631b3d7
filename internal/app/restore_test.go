package app_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

// openFile opens and migrates the SQLite file at path, and raises its version floor as
// serve does at every start.
func openFile(t *testing.T, path string) *sqldb.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path, Logger: apitest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.RaiseVersionFloor(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestRestoreKeepsVersionsMovingForward is issue 30 item 5: a consumer syncs the attempts
// feed past a backup; the backup is restored as docs/operators.md says (stop, move the
// files aside, copy the backup in, start); the attempts made after the restore carry ETags
// past every one the consumer saw, and changedSince from its last position returns them.
// Before, the restored counter went back to the backup's and changedSince returned none.
func TestRestoreKeepsVersionsMovingForward(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	ctx := context.Background()

	db := openFile(t, path)
	st := apitest.New(t, apitest.Config{DB: db})
	tn := st.NewTenant(t)
	claimOne := func(st *apitest.Stack, subject string) api.Claim {
		t.Helper()
		apitest.WantStatus(t, st.Do(t, http.MethodPost, "/v1/runs", tn.Runtime, fmt.Sprintf(
			`{"subject":%q,"kind":"review","projectId":"p1","agentId":"agent-1","stepId":%q,"snapshotId":%q}`,
			subject, uuid.NewString(), uuid.NewString()), nil), http.StatusCreated)
		r := st.Do(t, http.MethodPost, "/v1/runs/claim", tn.Runtime, fmt.Sprintf(
			`{"holderId":"h1","releaseId":%q,"adapterVersion":"1.0","modelProfileId":"m1","leaseSeconds":60}`, tn.Release), nil)
		apitest.WantStatus(t, r, http.StatusOK)
		return apitest.DecodeAs[api.Claim](t, r)
	}
	// feed reads every attempt changed after the version since (all from the start when 0).
	feed := func(st *apitest.Stack, since sqldb.RowVersion) []api.AttemptItem {
		t.Helper()
		var items []api.AttemptItem
		next := "/v1/attempts?changedSince=" + since.ETag()[1:17]
		for next != "" {
			r := st.Do(t, http.MethodGet, next, tn.Admin, "", nil)
			apitest.WantStatus(t, r, http.StatusOK)
			page := apitest.DecodeAs[api.Page[api.AttemptItem]](t, r)
			items = append(items, page.Items...)
			next = ""
			if page.NextCursor != "" {
				next = "/v1/attempts?changedSince=" + since.ETag()[1:17] + "&cursor=" + page.NextCursor
			}
		}
		return items
	}
	version := func(etag string) sqldb.RowVersion {
		t.Helper()
		v, ok := sqldb.ParseETag(etag)
		if !ok {
			t.Fatalf("ETag %q", etag)
		}
		return v
	}

	claimOne(st, "before-backup")
	if err := db.Backup(ctx, filepath.Join(dir, "backup.db")); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		claimOne(st, fmt.Sprint("after-backup-", i))
	}
	// The consumer syncs to the newest change it saw.
	var seen sqldb.RowVersion
	for _, it := range feed(st, 0) {
		seen = max(seen, version(it.ETag))
	}
	if seen == 0 {
		t.Fatal("the feed is empty")
	}

	// The restore: stop, the files moved aside, the backup copied in, start.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(dir, "replaced")
	if err := os.Mkdir(aside, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(path+suffix, filepath.Join(aside, "ledger.db"+suffix)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "backup.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	restored := apitest.New(t, apitest.Config{DB: openFile(t, path)})
	var fresh []api.Claim
	for i := range 3 {
		fresh = append(fresh, claimOne(restored, fmt.Sprint("after-restore-", i)))
	}
	got := map[uuid.UUID]bool{}
	for _, it := range feed(restored, seen) {
		if version(it.ETag) <= seen {
			t.Fatalf("changedSince %s returned %s", seen.ETag(), it.ETag)
		}
		got[it.AttemptID] = true
	}
	for _, c := range fresh {
		if !got[c.Attempt.AttemptID] {
			t.Fatalf("changedSince %s misses attempt %s made after the restore", seen.ETag(), c.Attempt.AttemptID)
		}
	}
}
