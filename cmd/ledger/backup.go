package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/check"
)

// runBackup copies the embedded database, serving or not, to --out, then runs the checks
// of `ledger check` on the copy: a backup that would not serve is reported as a failure.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("backup", stdout)
	var d dbFlags
	d.register(fs)
	out := fs.String("out", "", required+"the file the copy is written to (refused if it exists)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q (see ledger backup --help)", fs.Arg(0))
	}
	if *out == "" {
		return fmt.Errorf("say where the copy goes with --out FILE")
	}
	if sqldb.IsSQLServer(d.dsn) {
		// Said before connecting: a backup of SQL Server is the server's own (BACKUP DATABASE).
		return fmt.Errorf("backup copies the embedded SQLite database only; back a SQL Server database up with the server's own tools (BACKUP DATABASE, or Azure SQL's automated backups)")
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	db, err := openExisting(ctx, d, log)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Backup(ctx, *out); err != nil {
		return err
	}
	report, err := check.Database(ctx, sqldb.Config{DSN: *out, SQLiteSync: d.sync, BusyTimeout: d.busy,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, check.ForServe)
	if err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	printReport(stdout, report)
	if !report.OK() {
		return fmt.Errorf("the copy at %s does not pass ledger check (above)", *out)
	}
	fmt.Fprintf(stdout, "backup written to %s\n", *out)
	return nil
}
