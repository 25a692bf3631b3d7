package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/ledger-dev/ledger/internal/retention"
)

// runPurge is `ledger purge [--db ...] [--batch N] [--dry-run]`: it deletes, across tenants,
// the ended run chains past their project's retention, in bounded batches, and prints what
// it deleted (with --dry-run, what it would delete, deleting nothing).
func runPurge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("purge", stdout)
	var d dbFlags
	d.register(fs)
	batch := fs.Int("batch", retention.DefaultBatchRuns, fmt.Sprintf("the most runs one batch deletes in its final transaction (1..%d)", retention.MaxBatchRuns))
	dryRun := fs.Bool("dry-run", false, "count what would be purged and delete nothing")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q (see ledger purge --help)", fs.Arg(0))
	}
	if *batch < 1 || *batch > retention.MaxBatchRuns {
		return fmt.Errorf("--batch must be from 1 to %d, not %d", retention.MaxBatchRuns, *batch)
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	db, err := openExisting(ctx, d, log)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := requireCurrentSchema(ctx, db); err != nil {
		return err
	}
	res, err := retention.Purge(ctx, db, retention.Options{BatchRuns: *batch, DryRun: *dryRun, Log: log})
	if err != nil {
		return err
	}
	if *dryRun {
		fmt.Fprintln(stdout, "dry run: nothing was deleted; a purge now would delete")
	} else {
		fmt.Fprintln(stdout, "purged")
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run chains\t%d\n", res.Chains)
	fmt.Fprintf(tw, "runs\t%d\n", res.Runs)
	fmt.Fprintf(tw, "attempts\t%d\n", res.Attempts)
	if !*dryRun {
		fmt.Fprintf(tw, "checkpoints\t%d\n", res.Checkpoints)
		fmt.Fprintf(tw, "calls\t%d\n", res.Calls)
		fmt.Fprintf(tw, "decisions\t%d\n", res.Decisions)
		fmt.Fprintf(tw, "delegations\t%d\n", res.Delegations)
	}
	fmt.Fprintf(tw, "idempotency tombstones\t%d\n", res.Tombstones)
	fmt.Fprintf(tw, "batches\t%d\n", res.Batches)
	fmt.Fprintf(tw, "chains waiting for child runs\t%d\n", res.Deferred)
	if res.FailedBatches > 0 {
		fmt.Fprintf(tw, "failed batches (logged; retried by the next purge)\t%d\n", res.FailedBatches)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.FailedBatches > 0 {
		return fmt.Errorf("%d batches failed (see the log on stderr); run the purge again", res.FailedBatches)
	}
	return nil
}
