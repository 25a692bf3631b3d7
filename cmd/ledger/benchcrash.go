package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ledger-dev/ledger/cmd/ledger/internal/crashtest"
)

// runBenchCrash is `ledger bench crash`: the full form of the crash test, killing a fresh
// embedded server with SIGKILL under load and checking every acknowledged write after each
// restart.
func runBenchCrash(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench crash", stdout)
	kills := fs.Int("kills", 20, "how many times the server is killed")
	clients := fs.Int("clients", 16, "concurrent clients driving enqueue, claim, fenced writes and complete")
	minUp := fs.Duration("min-up", 500*time.Millisecond, "shortest time under load before a kill")
	maxUp := fs.Duration("max-up", 3*time.Second, "longest time under load before a kill")
	sync := fs.String("sqlite-sync", "normal", "durability of the server under test: normal or full")
	dir := fs.String("dir", "", "folder for the database (default: a new temporary folder, removed afterwards)")
	if err := parse(fs, args); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	d := *dir
	if d == "" {
		if d, err = os.MkdirTemp("", "ledger-crash-*"); err != nil {
			return err
		}
		defer os.RemoveAll(d)
	}
	rep, err := crashtest.Run(ctx, crashtest.Config{Binary: bin, Dir: d, Kills: *kills, Clients: *clients,
		MinUp: *minUp, MaxUp: *maxUp, Sync: *sync, Log: stderr})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, rep)
	if !rep.OK() {
		for _, l := range rep.Lost[:min(20, len(rep.Lost))] {
			fmt.Fprintln(stdout, "lost:", l)
		}
		return fmt.Errorf("acknowledged writes were lost or state was broken")
	}
	return nil
}
