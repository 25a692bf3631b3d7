package runs_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestTwoPackagesReapersOnOneFile (issue 26 item 2): two packages' tests on one database
// file, as two test processes sharing a database do, each with its clocks at its package's
// epoch (dbtest.PackageEpoch: internal/calls and internal/runs). Each one's Reap takes back
// its own expired lease and never the other's. A reaper with no clock floor (as every
// reaper was before) takes back both: what the floors prevent.
func TestTwoPackagesReapersOnOneFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	shared := dbtest.SQLiteFile(path)
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var envs []*env
	for _, pkg := range []string{"internal/calls", "internal/runs"} {
		k, err := dbtest.SlotOfPackage(pkg)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, newEnvAt(t, shared, dbtest.EpochIn(k, base)))
	}
	if a, b := envs[0].clock.Now(), envs[1].clock.Now(); !a.Before(b) || b.Sub(a) < dbtest.EpochSpan {
		t.Fatalf("the packages' epochs %s and %s are not a slot apart", a, b)
	}
	lease := func(e *env, subject string) runs.Claimed {
		t.Helper()
		e.enqueue(spec(subject))
		req := claimReq("holder-1")
		req.LeaseSeconds = 30
		cl, err := e.svc.Claim(e.ctx, e.caller, req)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	round := func(subject string) []runs.Claimed {
		var cls []runs.Claimed
		for _, e := range envs {
			cls = append(cls, lease(e, subject))
			e.clock.Advance(time.Hour) // every lease of this package has expired
		}
		return cls
	}
	cls := round("shared-1")
	// The later package reaps first: with the database's whole history expired by its clock,
	// only the floor keeps it off the earlier package's lease.
	for i := len(envs) - 1; i >= 0; i-- {
		e := envs[i]
		res, err := e.svc.Reap(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.TakenBack != 1 {
			t.Errorf("package %d's reaper took back %d leases, want its own 1", i, res.TakenBack)
		}
		for j := range i { // the earlier packages, whose reapers have not run yet
			if r := envs[j].get(cls[j].Run.RunID); r.State != api.RunLeased {
				t.Errorf("package %d's reaper took package %d's lease: the run is %s", i, j, r.State)
			}
		}
		if r := e.get(cls[i].Run.RunID); r.State == api.RunLeased {
			t.Errorf("package %d's own expired lease is still held", i)
		}
	}

	// The control: a reaper on the same file without a floor, at the later package's time,
	// takes back both packages' leases.
	round("shared-2")
	later := envs[len(envs)-1]
	db, err := sqldb.Open(later.ctx, sqldb.Config{DSN: path, Clock: later.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	res, err := runs.NewService(db, runs.DefaultConfig(), nil).Reap(later.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.TakenBack != len(envs) {
		t.Fatalf("a reaper without a floor took back %d leases, want every package's %d", res.TakenBack, len(envs))
	}
}
