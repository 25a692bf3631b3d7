package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The SQLite claim's pick as it stood at bb82775 (issue 35), kept as the reference that a
// cheaper claim statement must agree with: TestClaimPickAgreesWithBefore holds sqliteClaim to
// this one's picks.
const sqliteEligibleBefore = `r.CancelRequestedAt IS NULL
    AND EXISTS (SELECT 1 FROM Projects p WHERE p.TenantId = r.TenantId AND p.ProjectId = r.ProjectId AND p.Active = 1
        AND (p.DailyCostBudgetMicros IS NULL OR NOT EXISTS (SELECT 1 FROM ProjectDailyCosts c
            WHERE c.TenantId = p.TenantId AND c.Day = substr(?2, 1, 10) AND c.ProjectId = p.ProjectId
            AND c.CostMicros >= p.DailyCostBudgetMicros)))
    AND (?5 = '[]' OR r.Kind IN (SELECT value FROM json_each(?5)))
    AND (?6 = '[]' OR r.AgentId IN (SELECT value FROM json_each(?6)))
    AND (?7 = '[]' OR r.ProjectId IN (SELECT value FROM json_each(?7)))
    AND (?8 = '[]' OR r.RunId NOT IN (SELECT value FROM json_each(?8)))`

func sqliteSeekBefore(band, dueBy string) string {
	return `SELECT r.RunId, r.ProjectId, r.DueAt, r.Subject FROM Runs r
    WHERE r.TenantId = ?1 AND r.SubjectHead = 1 AND r.Band = ` + band + ` AND r.DueAt <= ` + dueBy + `
    AND ` + sqliteEligibleBefore + `
    ORDER BY r.DueAt, r.RunId LIMIT ?4`
}

func sqlitePickBefore(seeks ...string) string {
	parts := make([]string, len(seeks))
	for i, s := range seeks {
		parts[i] = "SELECT * FROM (" + s + ")"
	}
	return `SELECT c.RunId FROM (
    SELECT * FROM (` + strings.Join(parts, "\n    UNION ALL\n    ") + `) ORDER BY DueAt, RunId LIMIT ?4
) c LEFT JOIN ProjectLeases pl ON pl.TenantId = ?1 AND pl.ProjectId = c.ProjectId
ORDER BY COALESCE(pl.LeasedCount, 0), c.DueAt, c.RunId LIMIT 1`
}

var sqliteClaimBefore = `SELECT r.RunId FROM Runs r WHERE r.TenantId = ?1 AND r.RunId = COALESCE(
    (` + sqlitePickBefore(sqliteSeekBefore("0", "?2")) + `),
    (` + sqlitePickBefore(sqliteSeekBefore("1", "?2"), sqliteSeekBefore("2", "?3")) + `),
    (` + sqlitePickBefore(sqliteSeekBefore("2", "?2")) + `))`

// TestClaimPickAgreesWithBefore runs the claim's statement and the reference side by side on
// random queues (projects active, inactive, budgeted and spent today, yesterday or not at
// all; three bands and band aging; due times on a grid, so ties fall to RunId, some not yet
// due; subjects with queued runs behind their head; project loads; kind, agent and project
// filters; skip lists; windows from 1 to 64) and requires the same pick, or none, every
// time. A queued head never has a cancel pending (the run's trigger refuses the write), so
// that condition is not varied.
func TestClaimPickAgreesWithBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := dbtest.NewClock(base)
	db := dbtest.SQLite().Open(t, dbtest.Options{Clock: clock.Now})
	svc := NewService(db, DefaultConfig(), nil)
	d := db.Dialect
	picks, nones := 0, 0
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 35))
		tenant := dbtest.NewTenant(t, db)
		c := Caller{TenantID: tenant, KeyID: "k"}
		now := base.Add(time.Duration(seed) * time.Hour)
		day := now.UTC().Format("2006-01-02")
		nProjects := 1 + rng.IntN(5)
		for p := range nProjects {
			id := fmt.Sprintf("p%d", p)
			ch := projects.Change{}
			if rng.IntN(4) == 0 {
				ch.Active = api.Ptr(false)
			}
			if rng.IntN(3) == 0 {
				ch.SetBudget, ch.DailyCostBudgetMicros = true, api.Ptr(int64(1000))
			}
			if _, _, err := projects.NewStore(db).Put(ctx, tenant, id, ch); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				cost := []int64{999, 1000, 5000}[rng.IntN(3)]
				costDay := day
				if rng.IntN(4) == 0 {
					costDay = now.Add(-24 * time.Hour).UTC().Format("2006-01-02")
				}
				exec(t, db, `INSERT INTO ProjectDailyCosts (TenantId, ProjectId, Day, CostMicros) VALUES (?, ?, ?, ?)`, tenant, id, costDay, cost)
			}
			if rng.IntN(3) != 0 {
				exec(t, db, `INSERT INTO ProjectLeases (TenantId, ProjectId, LeasedCount) VALUES (?, ?, ?)`, tenant, id, rng.IntN(4))
			}
		}
		var heads []string
		nRuns := rng.IntN(90)
		nSubjects := 1 + rng.IntN(40)
		for range nRuns {
			// Due times on a coarse grid, so ties fall to RunId; some not yet due.
			due := now.Add(time.Duration(rng.IntN(10)-8) * 3 * time.Minute)
			run, _, err := svc.Enqueue(ctx, c, Spec{ProjectID: fmt.Sprintf("p%d", rng.IntN(nProjects)),
				Subject: fmt.Sprintf("s%d", rng.IntN(nSubjects)), Kind: fmt.Sprintf("k%d", rng.IntN(2)),
				AgentID: fmt.Sprintf("a%d", rng.IntN(2)), StepID: uuid.New(), SnapshotID: uuid.New(),
				Band: api.Band(rng.IntN(3)), DueAt: &due, MaxAttempts: 3, MaxCorrections: 3})
			if err != nil {
				t.Fatal(err)
			}
			if run.SubjectHead {
				heads = append(heads, run.RunID.String())
			}
		}
		for try := range 12 {
			list := func(prefix string, n int) any {
				if rng.IntN(3) != 0 {
					return d.JSON("[]")
				}
				var xs []string
				for i := range n {
					if rng.IntN(2) == 0 {
						xs = append(xs, fmt.Sprintf("%s%d", prefix, i))
					}
				}
				if len(xs) == 0 {
					xs = []string{prefix + "none"}
				}
				b, _ := json.Marshal(xs)
				return d.JSON(string(b))
			}
			skip := d.JSON("[]")
			if try%2 == 1 && len(heads) > 0 {
				var xs []string
				for _, h := range heads {
					if rng.IntN(3) == 0 {
						xs = append(xs, h)
					}
				}
				if len(xs) > 0 {
					b, _ := json.Marshal(xs)
					skip = d.JSON(string(b))
				}
			}
			window := []int{1, 2, 3, 5, 8, 64}[rng.IntN(6)]
			aged := now.Add(-[]time.Duration{0, 10 * time.Minute, time.Hour}[rng.IntN(3)])
			args := []any{tenant, d.Time(now), d.Time(aged), window, list("k", 2), list("a", 2), list("p", nProjects), skip}
			before, after := pickOf(t, db, sqliteClaimBefore, args), pickOf(t, db, sqliteClaim, args)
			if before != after {
				t.Fatalf("seed %d try %d: the claim picks %q, the statement before it %q (args %v)", seed, try, after, before, args)
			}
			if before == "" {
				nones++
			} else {
				picks++
			}
		}
	}
	// The states must exercise both outcomes, or the comparison proves little.
	if picks < 200 || nones < 50 {
		t.Fatalf("%d picks and %d empty claims: the random states are too one-sided", picks, nones)
	}
	t.Logf("%d picks and %d empty claims agree", picks, nones)
}

func exec(t *testing.T, db *sqldb.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Raw().Exec(query, args...); err != nil {
		t.Fatal(err)
	}
}

// pickOf is the RunId a claim statement picks, or "" when it picks nothing.
func pickOf(t *testing.T, db *sqldb.DB, query string, args []any) string {
	t.Helper()
	var id string
	err := db.Read(context.Background(), sqldb.TenantScope(args[0].(string)), func(tx *sqldb.Tx) error {
		var cand Run
		if err := tx.GetContext(context.Background(), &cand, query, args...); err != nil {
			return err
		}
		id = cand.RunID.String()
		return nil
	})
	if errors.Is(err, sqldb.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}
