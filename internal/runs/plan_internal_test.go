package runs

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
)

// TestSQLitePlans pins how SQLite runs the write path's hot statements (SQL Server's are
// argued in queries_mssql.go), on a queue deep enough that a bad plan would show: the claim
// seeks IX_Runs_Claim (heads only) and never scans Runs; the head marker's statement seeks
// the subject's indexes and the primary key; the fence seeks both primary keys.
func TestSQLitePlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	svc := NewService(db, DefaultConfig(), nil)
	tenant := dbtest.NewTenant(t, db)
	for p := range 3 {
		if _, _, err := projects.NewStore(db).Put(ctx, tenant, fmt.Sprintf("p%d", p), projects.Change{}); err != nil {
			t.Fatal(err)
		}
	}
	c := Caller{TenantID: tenant, KeyID: "k"}
	for i := range 300 {
		if _, _, err := svc.Enqueue(ctx, c, Spec{ProjectID: fmt.Sprintf("p%d", i%3), Subject: fmt.Sprintf("s%d", i%50), Kind: "k",
			AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.Band(i % 3), MaxAttempts: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Raw().ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := db.Dialect
	q := &sqliteQueries
	cases := []struct {
		name  string
		query string
		args  []any
		want  []string
	}{
		{"claim", q.claimCandidates[0], []any{tenant, d.Time(now), d.Time(now), 64, "[]", "[]", `["p1"]`, "[]"},
			[]string{"IX_Runs_Claim (TenantId=? AND Band=? AND DueAt<?)", "sqlite_autoindex_Runs_1 (RunId=?)"}},
		{"insert", q.insert, insertArgs(d, Run{RunID: uuid.New(), TenantID: tenant, ProjectID: "p1", Subject: "s1", Kind: "k",
			AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(), Band: 1, MaxAttempts: 3, MaxCorrections: 3, QueuedAt: now,
			DueAt: now, IdempotencyKey: api.Ptr("key"), CreatedBy: "k"}, api.Ptr("h")),
			[]string{"IX_Runs_SubjectQueue (TenantId=? AND Subject=?)", "UX_Runs_LeasedSubject (TenantId=? AND Subject=?)",
				"sqlite_autoindex_IdempotencyTombstones_1 (TenantId=? AND IdempotencyKey=?)"}},
		{"insertKeyless", q.insertKeyless, insertArgs(d, Run{RunID: uuid.New(), TenantID: tenant, ProjectID: "p1", Subject: "s1",
			Kind: "k", AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(), Band: 1, MaxAttempts: 3, MaxCorrections: 3,
			QueuedAt: now, DueAt: now, CreatedBy: "k"}, nil),
			[]string{"IX_Runs_SubjectQueue (TenantId=? AND Subject=?)", "UX_Runs_LeasedSubject (TenantId=? AND Subject=?)"}},
		{"syncHead", q.syncHead, []any{tenant, "s1"},
			[]string{"IX_Runs_SubjectQueue (TenantId=? AND Subject=?)", "UX_Runs_LeasedSubject (TenantId=? AND Subject=?)",
				"UX_Runs_SubjectHead (TenantId=? AND Subject=?)"}},
		{"fence", q.fence, []any{tenant, uuid.New()}, []string{"sqlite_autoindex_ExecutionAttempts_1", "sqlite_autoindex_Runs_1"}},
		{"fenceWhole", q.fenceWhole, []any{tenant, uuid.New()}, []string{"sqlite_autoindex_ExecutionAttempts_1", "sqlite_autoindex_Runs_1"}},
	}
	for _, c := range cases {
		plan := dbtest.SQLitePlan(t, db, c.query, c.args...)
		text := strings.Join(plan, "\n")
		t.Logf("%s:\n%s", c.name, text)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: plan lacks %q", c.name, w)
			}
		}
		for _, line := range plan {
			if strings.HasPrefix(line, "SCAN Runs") || strings.HasPrefix(line, "SCAN r") || strings.HasPrefix(line, "SCAN q") ||
				strings.HasPrefix(line, "SCAN o") || strings.HasPrefix(line, "SCAN ExecutionAttempts") {
				t.Errorf("%s: plan scans a table: %q", c.name, line)
			}
		}
	}
}

// TestSQLitePlansWithoutStatistics pins the plans production gets: nothing runs ANALYZE, so
// SQLite's planner weighs indexes by their equality columns alone. The reaper's fence must
// seek the run's attempts (IX_Attempts_Run_Step), not every running attempt of the tenant
// (IX_Attempts_Tenant_State_Ended has two equality columns to Run_Step's one), and the
// holder's fence both primary keys.
func TestSQLitePlansWithoutStatistics(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	tenant := dbtest.NewTenant(t, db)
	q := &sqliteQueries
	for _, c := range []struct {
		name, query string
		args        []any
		want        []string
		sorts       int // USE TEMP B-TREE FOR ORDER BY lines
	}{
		// The claim sorts once per band group, for the pick: its window is the group's
		// seeks merged in IX_Runs_Claim's order (MERGE (UNION ALL) for BATCH with aged
		// BACKGROUND), where a temporary B-tree per seek of that merge made 5.
		{"claim", q.claimCandidates[0], []any{tenant, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", 64,
			"[]", "[]", "[]", "[]"},
			[]string{"IX_Runs_Claim (TenantId=? AND Band=? AND DueAt<?)", "MERGE (UNION ALL)",
				"IX_Projects_Inactive (TenantId=?)", "IX_Projects_Budgeted (TenantId=?)"}, 3},
		{"fenceRunning", q.fenceRunning, []any{tenant, uuid.New(), 1},
			[]string{"SEARCH a USING INDEX IX_Attempts_Run_Step (RunId=?)", "sqlite_autoindex_Runs_1 (RunId=?)"}, 0},
		{"fence", q.fence, []any{tenant, uuid.New()},
			[]string{"sqlite_autoindex_ExecutionAttempts_1 (AttemptId=?)", "sqlite_autoindex_Runs_1 (RunId=?)"}, 0},
		{"fenceWhole", q.fenceWhole, []any{tenant, uuid.New()},
			[]string{"sqlite_autoindex_ExecutionAttempts_1 (AttemptId=?)", "sqlite_autoindex_Runs_1 (RunId=?)"}, 0},
		// The list answers QueuedAt as text under its own name and orders by Runs.QueuedAt:
		// the bare name would order by the text, a sort of every match instead of the
		// index's order (a fifth sort; the four are the release filters' subqueries', the
		// releaseId and firstReleaseId ones and their not* lists').
		{"list", q.list, append([]any{tenant}, append(make([]any, 6), append([]any{50}, append(make([]any, 14),
			"[]", "[]", "[]", "[]", "[]", "[]")...)...)...),
			[]string{"IX_Runs_Tenant_Queued (TenantId=?)"}, 4},
	} {
		plan := strings.Join(dbtest.SQLitePlan(t, db, c.query, c.args...), "\n")
		for _, w := range c.want {
			if !strings.Contains(plan, w) {
				t.Errorf("%s: plan lacks %q:\n%s", c.name, w, plan)
			}
		}
		if n := strings.Count(plan, "USE TEMP B-TREE FOR ORDER BY"); n != c.sorts {
			t.Errorf("%s: %d sorts, want %d:\n%s", c.name, n, c.sorts, plan)
		}
	}
}

// TestKeylessInsertWritesItsRow pins why insertKeyless exists: the enqueue of a run without
// an idempotency key is a VALUES row, which SQLite writes as it is, where insert's
// INSERT ... SELECT (reading Runs for the head marker) is first copied into a temporary
// table. The only temporary table the keyless insert opens is RETURNING's.
func TestKeylessInsertWritesItsRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	d := db.Dialect
	args := insertArgs(d, Run{RunID: uuid.New(), TenantID: "t", ProjectID: "p1", Subject: "s1", Kind: "k", AgentID: "a",
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: 1, MaxAttempts: 3, MaxCorrections: 3, QueuedAt: time.Now(),
		DueAt: time.Now(), CreatedBy: "k"}, nil)
	ephemeral := func(query string) int {
		t.Helper()
		rows, err := db.Raw().QueryxContext(ctx, "EXPLAIN "+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			row, err := rows.SliceScan()
			if err != nil {
				t.Fatal(err)
			}
			if op, _ := row[1].(string); op == "OpenEphemeral" {
				n++
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if keyless, keyed := ephemeral(sqliteQueries.insertKeyless), ephemeral(sqliteQueries.insert); keyless != 1 || keyed != 2 {
		t.Errorf("temporary tables opened: keyless insert %d, insert %d; want 1 (RETURNING's) and 2", keyless, keyed)
	}
}
