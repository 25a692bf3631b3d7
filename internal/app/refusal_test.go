package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestDatabaseRefusalIsDocumentedWhereItOccurs: a write the database refuses (here a SQLite
// trigger standing for a CHECK, the run guard or SQL Server's tenant BLOCK predicate) that
// no store turned into a code of its own answers 409 illegal_transition, changes nothing,
// and is a response the document lists for the route: every exchange goes through the
// contract check, which refuses a code the operation does not document. These routes
// documented no illegal_transition before the document derived it for every write.
func TestDatabaseRefusalIsDocumentedWhereItOccurs(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	tenant, admin, runtime := s.tenantKeys(t)
	wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/rp", key: admin, body: `{}`}), http.StatusCreated)
	enqueue := func(subject string) string {
		return fmt.Sprintf(`{"subject":%q,"kind":"k","projectId":"rp","agentId":"a","stepId":%q,"snapshotId":%q}`,
			subject, uuid.NewString(), uuid.NewString())
	}
	wantStatus(t, s.do(t, req{method: http.MethodPost, path: "/v1/runs", key: runtime, body: enqueue("queued")}), http.StatusCreated)
	etag := s.do(t, req{method: http.MethodGet, path: "/v1/projects/rp", key: admin}).header.Get("ETag")
	refs := `["x://r"]`
	sum := sha256.Sum256([]byte(refs))
	cases := []struct {
		name, trigger, table string
		r                    req
	}{
		{"project update", "UPDATE", "Projects", req{method: http.MethodPut, path: "/v1/projects/rp", key: admin,
			body: `{"retentionDays":30}`, header: map[string]string{"If-Match": etag}}},
		{"enqueue", "INSERT", "Runs", req{method: http.MethodPost, path: "/v1/runs", key: runtime, body: enqueue("refused")}},
		{"claim", "INSERT", "ExecutionAttempts", req{method: http.MethodPost, path: "/v1/runs/claim", key: runtime,
			body: `{"holderId":"h","releaseId":"rr","adapterVersion":"1","modelProfileId":"m","leaseSeconds":60}`}},
		{"task lock", "INSERT", "TaskRunLocks", req{method: http.MethodPut, path: "/v1/locks/agents/a/tasks/t", key: runtime,
			body: `{"holderId":"h","ttlSeconds":60}`}},
	}
	// The claim names an active release.
	wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/releases/rr/adapters/1", key: runtime,
		body: fmt.Sprintf(`{"manifestHash":%q,"contentRefs":%s,"state":"active"}`, hex.EncodeToString(sum[:]), refs)}), http.StatusCreated)
	exec := func(stmt string) {
		t.Helper()
		err := s.db.Write(context.Background(), sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			_, err := tx.ExecContext(context.Background(), stmt)
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, c := range cases {
		before := countRows(t, s.db, c.table, tenant)
		exec(fmt.Sprintf(`CREATE TRIGGER TR_Test_Refuse BEFORE %s ON %s BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`, c.trigger, c.table))
		r := s.do(t, c.r)
		exec(`DROP TRIGGER TR_Test_Refuse`)
		wantProblem(t, r, http.StatusConflict, "illegal_transition")
		if after := countRows(t, s.db, c.table, tenant); after != before {
			t.Errorf("%s: %s rows %d -> %d after a refused write", c.name, c.table, before, after)
		}
	}
	if got := s.do(t, req{method: http.MethodGet, path: "/v1/projects/rp", key: admin}).header.Get("ETag"); got != etag {
		t.Errorf("the refused update changed the project: ETag %s -> %s", etag, got)
	}
}
