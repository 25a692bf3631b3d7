package history_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Benchmarks run on the embedded SQLite (SQL Server is not reachable here). Seeding uses
// multi-row INSERT ... SELECT over a recursive CTE in chunks of 100,000 rows, so even a
// million attempts build in seconds with little memory. Each size is built only when a
// benchmark of it runs:
//
//	go test ./internal/history/ -run '^$' -bench 'AttemptsPage/1k' -benchtime 2000x
//	go test ./internal/history/ -run '^$' -bench 'AttemptsPage/1M' -benchtime 2000x
//	go test ./internal/history/ -run '^$' -bench 'Timeline10k'

const benchTenant = "bench"

// reportCPU reports the CPU time per operation since start (see cpuTime).
func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

// seedAttempts writes n attempts of benchTenant, one a second from 2026-01-01, over 10
// projects and 7 agents, three attempts per run, states cycling through all six.
func seedAttempts(b *testing.B, db *sqldb.DB, n int) {
	b.Helper()
	const chunk = 100_000
	ctx := context.Background()
	for lo := 1; lo <= n; lo += chunk {
		hi := min(lo+chunk-1, n)
		_, err := db.Raw().ExecContext(ctx, `WITH RECURSIVE seq(i) AS (SELECT ?2 UNION ALL SELECT i + 1 FROM seq WHERE i < ?3)
INSERT INTO ExecutionAttempts (AttemptId, RunId, StepId, TenantId, ProjectId, LeaseId, FencingToken, SnapshotId,
    ReleaseId, AgentId, ModelProfileId, State, Phase, CorrectionCount, MaxCorrections, StartedAt, Version, AdapterVersion)
SELECT printf('%08x-0000-4000-8000-%012x', i * 2654435761 % 4294967291, i),
    printf('00000000-0001-4000-8000-%012x', i / 3), '00000000-0000-4000-8000-000000000001', ?1, 'p' || (i % 10),
    printf('00000000-0002-4000-8000-%012x', i), 1, '00000000-0000-4000-8000-000000000002', 'rel', 'agent-' || (i % 7),
    'model', i % 6, 0, 0, 3, strftime('%Y-%m-%dT%H:%M:%fZ', 1767225600 + i, 'unixepoch'),
    (SELECT Value + 1 FROM RowVersionCounter), '1'
FROM seq`, benchTenant, lo, hi)
		if err != nil {
			b.Fatalf("seed attempts %d..%d: %v", lo, hi, err)
		}
	}
	if _, err := db.Raw().ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}

// cursorAt returns the listing position after the k-th newest attempt (k from 1).
func cursorAt(b *testing.B, db *sqldb.DB, k int) *history.ListCursor {
	b.Helper()
	var row struct {
		StartedAt time.Time `db:"StartedAt"`
		AttemptID uuid.UUID `db:"AttemptId"`
	}
	err := db.Raw().GetContext(context.Background(), &row, `SELECT StartedAt, AttemptId FROM ExecutionAttempts
WHERE TenantId = ?1 ORDER BY StartedAt DESC, AttemptId DESC LIMIT 1 OFFSET ?2`, benchTenant, k-1)
	if err != nil {
		b.Fatal(err)
	}
	return &history.ListCursor{StartedAt: row.StartedAt, AttemptID: row.AttemptID}
}

func BenchmarkAttemptsPage(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1k", 1_000}, {"1M", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) {
			// This function runs once (it only has sub-benchmarks), so the database is built
			// once per size, and only when a benchmark of this size is selected.
			db := dbtest.SQLite().Open(b, dbtest.Options{})
			start := time.Now()
			seedAttempts(b, db, size.n)
			b.Logf("seeded %d attempts in %v", size.n, time.Since(start).Round(time.Millisecond))
			store := history.NewStore(db)
			ctx := context.Background()
			deep := cursorAt(b, db, size.n/2)
			failed := api.AttemptFailed
			run := func(name string, f history.Filter) {
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					defer reportCPU(b, cpuTime())
					for b.Loop() {
						items, err := store.List(ctx, benchTenant, f)
						if err != nil || len(items) != f.Limit {
							b.Fatalf("page: %d items, %v", len(items), err)
						}
					}
				})
			}
			run("first", history.Filter{Limit: 50})
			run("deep", history.Filter{Limit: 50, After: deep})
			run("deep-agent", history.Filter{Limit: 50, After: deep, AgentID: ptr("agent-3")})
			run("deep-state", history.Filter{Limit: 50, After: deep, State: &failed})
			run("deep-limit500", history.Filter{Limit: 500, After: deep})
			b.Run("changes-deep", func(b *testing.B) {
				// All rows of a seeding chunk share a Version, so the middle of the feed is a
				// (Version, AttemptId) keyset inside one version.
				var mid struct {
					Version   sqldb.RowVersion `db:"Version"`
					AttemptID uuid.UUID        `db:"AttemptId"`
				}
				if err := db.Raw().GetContext(ctx, &mid, `SELECT Version, AttemptId FROM ExecutionAttempts
WHERE TenantId = ?1 ORDER BY Version, AttemptId LIMIT 1 OFFSET ?2`, benchTenant, size.n/2); err != nil {
					b.Fatal(err)
				}
				after := history.ChangesCursor{Version: mid.Version, AttemptID: &mid.AttemptID}
				b.ReportAllocs()
				defer reportCPU(b, cpuTime())
				for b.Loop() {
					items, err := store.Changes(ctx, benchTenant, after, 50)
					if err != nil || len(items) != 50 {
						b.Fatalf("changes page: %d items, %v", len(items), err)
					}
				}
			})
		})
	}
}

// BenchmarkTimeline10k reads the timeline of one attempt with 10,000 entries (2,500 of
// each kind, one every 250 ms, the kinds interleaved).
func BenchmarkTimeline10k(b *testing.B) {
	db := dbtest.SQLite().Open(b, dbtest.Options{})
	seedAttempts(b, db, 1)
	ctx := context.Background()
	var attemptID uuid.UUID
	if err := db.Raw().GetContext(ctx, &attemptID, `SELECT AttemptId FROM ExecutionAttempts`); err != nil {
		b.Fatal(err)
	}
	const perKind = 2500
	at := `strftime('%Y-%m-%dT%H:%M:%fZ', 1767225600 + (i * 4 + ?3) * 0.25, 'unixepoch')`
	for k, insert := range []string{
		`INSERT INTO Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion, Hash, CreatedAt)
SELECT printf('00000000-0010-4000-8000-%012x', i), ?1, ?2, i, 2, 'state://x', '1', 'h', ` + at + ` FROM seq`,
		`INSERT INTO CallRecords (CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, Status, StartedAt, Version)
SELECT printf('00000000-0011-4000-8000-%012x', i), ?1, ?2, i, 1, 'tool', 'r', 'succeeded', ` + at + `,
    (SELECT Value + 1 FROM RowVersionCounter) FROM seq`,
		`INSERT INTO DecisionRequests (DecisionId, AttemptId, TenantId, Kind, OptionsJson, Status, RequestedAt, Version)
SELECT printf('00000000-0012-4000-8000-%012x', i), ?1, ?2, 0, '{"a":1}', 'approved', ` + at + `,
    (SELECT Value + 1 FROM RowVersionCounter) FROM seq`,
		`INSERT INTO SubAgentDelegations (DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth, Status, CreatedAt, Version)
SELECT printf('00000000-0013-4000-8000-%012x', i), ?1, ?2, printf('00000000-0014-4000-8000-%012x', i), 'c', 'p', 1,
    'pending', ` + at + `, (SELECT Value + 1 FROM RowVersionCounter) FROM seq`,
	} {
		q := `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ` + fmt.Sprint(perKind) + `) ` + insert
		if _, err := db.Raw().ExecContext(ctx, q, attemptID, benchTenant, k); err != nil {
			b.Fatalf("seed timeline kind %d: %v", k, err)
		}
	}
	// No ANALYZE here: statistics of a database holding one attempt would make SQLite
	// skip-scan the AttemptId indexes, a plan no real database gets.
	store := history.NewStore(db)
	all, err := store.Timeline(ctx, benchTenant, attemptID, nil, 10_001)
	if err != nil || len(all) != 4*perKind {
		b.Fatalf("timeline holds %d entries, %v", len(all), err)
	}
	mid, end := all[len(all)/2].Cursor(), all[len(all)-51].Cursor()
	pages := func(prefix string) {
		page := func(name string, after *history.TimelineCursor, limit int) {
			b.Run(prefix+name, func(b *testing.B) {
				b.ReportAllocs()
				defer reportCPU(b, cpuTime())
				for b.Loop() {
					es, err := store.Timeline(ctx, benchTenant, attemptID, after, limit)
					if err != nil || len(es) == 0 {
						b.Fatalf("timeline page: %d entries, %v", len(es), err)
					}
				}
			})
		}
		page("first-50", nil, 50)
		page("middle-50", &mid, 50)
		page("last-50", &end, 50)
		page("first-500", nil, 500)
		b.Run(prefix+"walk-all-by-500", func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				var after *history.TimelineCursor
				n := 0
				for {
					es, err := store.Timeline(ctx, benchTenant, attemptID, after, 500)
					if err != nil {
						b.Fatal(err)
					}
					n += len(es)
					if len(es) < 500 {
						break
					}
					c := es[len(es)-1].Cursor()
					after = &c
				}
				if n != 4*perKind {
					b.Fatalf("walked %d entries", n)
				}
			}
		})
	}
	pages("")
	// The same with an (AttemptId, time) index on the two tables whose schema indexes lack
	// the time (not in the migrations: this shows what adding them would buy).
	for _, ddl := range []string{
		`CREATE INDEX IX_Bench_Checkpoints_Attempt_Created ON Checkpoints (AttemptId, CreatedAt, Sequence)`,
		`CREATE INDEX IX_Bench_Calls_Attempt_Started ON CallRecords (AttemptId, StartedAt, Sequence)`,
	} {
		if _, err := db.Raw().ExecContext(ctx, ddl); err != nil {
			b.Fatal(err)
		}
	}
	pages("time-indexed/")
}
