package dbtest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The clock ranges of test processes. Each package's tests run as a process of their own,
// and the reaper works across tenants: where packages share a database, one package's Reap
// took back another's leases. PackageEpoch gives each package's clocks a range of their own
// (its slot), and a database opened with a clock inside a slot has that slot's start as its
// clock floor (sqldb.Config.ClockFloor), below which its reaper leaves leases alone: a
// later slot's reaper never takes an earlier slot's leases, and an earlier slot's never
// reaches a later slot's, whose leases expire after its clock.
const (
	// EpochSpan is the width of a slot: 52 weeks, so a package's epoch keeps its base's
	// weekday and time of day.
	EpochSpan = 364 * 24 * time.Hour
	// MaxBaseOffset bounds how far after SlotBase a package's base epoch may lie; a
	// package's clocks must stay below EpochSpan after SlotBase (so a base in the first
	// half of 2026 leaves each package about six months to advance its clocks).
	MaxBaseOffset = EpochSpan / 2
)

// SlotBase is where slot 0 starts: the base epochs packages name lie in the half year after it.
var SlotBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// SlotStart is where slot k starts.
func SlotStart(k int) time.Time { return SlotBase.Add(time.Duration(k) * EpochSpan) }

// SlotOf is the slot holding t, and whether t is in a package's slot (k >= 1; slot 0 is the
// unshifted epochs of packages that do not call PackageEpoch, which get no floor).
func SlotOf(t time.Time) (int, bool) {
	if t.Before(SlotStart(1)) {
		return 0, false
	}
	return int(t.Sub(SlotBase) / EpochSpan), true
}

// PackageEpoch is base moved into this test process's slot: the slot of its package (the
// working directory go test runs it in) among every package of the module that has tests,
// in path order, plus one. Two packages never share a slot. base must lie within
// MaxBaseOffset after SlotBase; PackageEpoch panics otherwise, or when the process is not
// run in a package directory of the module (it is evaluated in package variables, where
// a panic stops the test binary with its message).
func PackageEpoch(base time.Time) time.Time {
	if base.Before(SlotBase) || base.Sub(SlotBase) >= MaxBaseOffset {
		panic(fmt.Sprintf("dbtest.PackageEpoch: base %s is not within %s after %s", base, MaxBaseOffset, SlotBase))
	}
	k, err := packageSlot()
	if err != nil {
		panic("dbtest.PackageEpoch: " + err.Error())
	}
	return EpochIn(k, base)
}

// EpochIn is base moved into slot k.
func EpochIn(k int, base time.Time) time.Time {
	return base.UTC().Add(time.Duration(k) * EpochSpan)
}

// PackageSlot is the slot of the package dir (a path relative to the module root, with
// forward slashes) among the module's test packages listed by testPackages.
func PackageSlot(packages []string, dir string) (int, bool) {
	i, ok := slices.BinarySearch(packages, dir)
	return i + 1, ok
}

var packageSlot = sync.OnceValues(func() (int, error) {
	wd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return 0, err
	}
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		return 0, err
	}
	return SlotOfPackage(filepath.ToSlash(rel))
})

// SlotOfPackage is the slot of the module's package dir (relative to the module root, with
// forward slashes): its place among the module's test packages in path order, plus one.
func SlotOfPackage(dir string) (int, error) {
	wd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return 0, err
	}
	pkgs, err := testPackages(root)
	if err != nil {
		return 0, err
	}
	k, ok := PackageSlot(pkgs, dir)
	if !ok {
		return 0, fmt.Errorf("%s is not a package of the module at %s with tests", dir, root)
	}
	return k, nil
}

// moduleRoot is the directory of the go.mod at or above dir.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
	}
}

// testPackages lists, sorted, the directories under root (relative, forward slashes) that
// hold a Go test file, leaving out what the go tool leaves out (testdata, directories whose
// names start with "." or "_") and nested modules.
func testPackages(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(name, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel := filepath.ToSlash(rel); len(out) == 0 || out[len(out)-1] != rel {
				out = append(out, rel)
			}
		}
		return nil
	})
	slices.Sort(out)
	return slices.Compact(out), err
}
