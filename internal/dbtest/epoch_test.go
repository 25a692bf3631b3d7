package dbtest_test

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestPackageEpochs: every test package of the module has a slot of its own, and a
// package's epoch keeps its base's weekday and time of day in that slot; a clock in a slot
// reads back as that slot, the unshifted epochs as none.
func TestPackageEpochs(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	seen := map[int]string{}
	for _, pkg := range []string{"internal/dbtest", "internal/runs", "internal/calls", "internal/console", "client", "cmd/ledger"} {
		k, err := dbtest.SlotOfPackage(pkg)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		if other, dup := seen[k]; dup {
			t.Fatalf("%s and %s share slot %d", pkg, other, k)
		}
		seen[k] = pkg
		e := dbtest.EpochIn(k, base)
		if e.Weekday() != base.Weekday() || e.Hour() != 9 || e.Minute() != 0 {
			t.Errorf("%s: epoch %s is not a %s at 09:00", pkg, e, base.Weekday())
		}
		if got, ok := dbtest.SlotOf(e.Add(100 * 24 * time.Hour)); !ok || got != k {
			t.Errorf("%s: a clock 100 days past its epoch reads as slot %d (%v), want %d", pkg, got, ok, k)
		}
	}
	if _, err := dbtest.SlotOfPackage("no/such/package"); err == nil {
		t.Error("a directory without tests got a slot")
	}
	if _, ok := dbtest.SlotOf(base); ok {
		t.Error("an unshifted 2026 epoch reads as a package's slot")
	}
	own, err := dbtest.SlotOfPackage("internal/dbtest")
	if err != nil {
		t.Fatal(err)
	}
	if got := dbtest.PackageEpoch(base); !got.Equal(dbtest.EpochIn(own, base)) {
		t.Errorf("PackageEpoch in internal/dbtest gave %s, want slot %d's %s", got, own, dbtest.EpochIn(own, base))
	}
}
