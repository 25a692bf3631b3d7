package retention_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/retention"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// seedRuns writes n ended single-run chains of tenant "bench" in project p, each with one
// attempt and two checkpoints, ended at endedAt (multi-row INSERT ... SELECT over a
// recursive CTE; ids are made from the sequence number and base).
func seedRuns(b *testing.B, db *sqldb.DB, project string, base, n int, endedAt time.Time) {
	b.Helper()
	ctx := context.Background()
	at := db.Dialect.Time(endedAt)
	seq := `WITH RECURSIVE seq(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?2) `
	for _, q := range []string{
		seq + `INSERT INTO Runs (RunId, TenantId, ProjectId, Subject, Kind, AgentId, StepId, SnapshotId, Band, State, Epoch,
    Attempt, MaxAttempts, MaxCorrections, QueuedAt, DueAt, EndedAt, Outcome, Depth, CreatedBy, IdempotencyKey, Version)
SELECT printf('00000000-0000-4000-8000-%012x', i), 'bench', ?4, 'subject-' || i, 'k', 'a',
    '00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', 1, 2, 1, 1, 3, 3, ?3, ?3, ?3,
    'succeeded', 0, 'bench', 'event-' || i, (SELECT Value + 1 FROM RowVersionCounter) FROM seq`,
		seq + `INSERT INTO ExecutionAttempts (AttemptId, RunId, StepId, TenantId, ProjectId, LeaseId, FencingToken, SnapshotId,
    ReleaseId, AgentId, ModelProfileId, State, Phase, MaxCorrections, StartedAt, EndedAt, Version, AdapterVersion)
SELECT printf('00000000-0001-4000-8000-%012x', i), printf('00000000-0000-4000-8000-%012x', i),
    '00000000-0000-4000-8000-000000000001', 'bench', ?4, printf('00000000-0002-4000-8000-%012x', i), 1,
    '00000000-0000-4000-8000-000000000002', 'rel', 'a', 'm', 1, 6, 3, ?3, ?3, (SELECT Value + 1 FROM RowVersionCounter), '1'
FROM seq`,
		seq + `INSERT INTO Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef, AdapterVersion, Hash, CreatedAt)
SELECT printf('00000000-0003-4000-8000-%012x', i * 2 + s.n), printf('00000000-0001-4000-8000-%012x', i), 'bench', s.n, 1,
    'state://x', '1', 'h', ?3 FROM seq, (SELECT 0 AS n UNION ALL SELECT 1) AS s`,
	} {
		if _, err := db.Raw().ExecContext(ctx, q, base+1, base+n, at, project); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPurge purges 20,000 old chains (20,000 runs, attempts, 40,000 checkpoints and
// 20,000 tombstones) from a database that also holds 200,000 young runs, in batches of 500:
//
//	go test ./internal/retention/ -run '^$' -bench Purge -benchtime 3x
func BenchmarkPurge(b *testing.B) {
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	db := dbtest.SQLite().Open(b, dbtest.Options{Clock: func() time.Time { return now }})
	if err := tenancy.NewStore(db).EnsureTenant(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"old", "young"} {
		if _, _, err := projects.NewStore(db).Put(ctx, "bench", p, projects.Change{}); err != nil {
			b.Fatal(err)
		}
	}
	seedRuns(b, db, "young", 10_000_000, 200_000, now.Add(-time.Hour))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		seedRuns(b, db, "old", round*1_000_000, 20_000, now.Add(-400*24*time.Hour))
		b.StartTimer()
		res, err := retention.Purge(ctx, db, retention.Options{Log: log})
		if err != nil || res.Chains != 20_000 || res.Checkpoints != 40_000 || res.Tombstones != 20_000 {
			b.Fatalf("purge: %+v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20_000, "ns/chain")
}
