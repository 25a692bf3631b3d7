package crashtest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/cmd/ledger/internal/crashtest"
)

// TestKillNineLosesNothing is the bounded form CI runs: three SIGKILLs under load.
// `ledger bench crash` runs the full form.
func TestKillNineLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: skipped with -short")
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Skipf("no go command to build the binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "ledger")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ledger")
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := crashtest.Run(ctx, crashtest.Config{
		Binary: bin, Dir: t.TempDir(), Kills: 3, Clients: 8,
		MinUp: 300 * time.Millisecond, MaxUp: 900 * time.Millisecond, Log: os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if !rep.OK() {
		t.Fatalf("acknowledged writes lost or state broken: %v; first lost: %v", rep, rep.Lost[:min(10, len(rep.Lost))])
	}
	if rep.AckedRuns == 0 || rep.AckedCompletes == 0 {
		t.Fatalf("the load acknowledged nothing, so the check proves nothing: %v", rep)
	}
}
