package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/check"
)

// Exit codes of `ledger check` (README: Deploying on SQL Server).
const (
	checkExitFailed    = 1 // a required check failed; the report says which and how to fix it
	checkExitCannotRun = 2 // bad arguments, or the database could not be opened at all
)

// exitCode is an error that sets the process's exit code. A nil err prints nothing: the
// command already said everything on stdout.
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitCode) Unwrap() error { return e.err }

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", stdout)
	var d dbFlags
	d.register(fs)
	asJSON := fs.Bool("json", false, "print the report as one JSON object (for pipelines) instead of one line per check")
	purpose := fs.String("for", "serve", "what the login is checked for: serve (data rights, current schema) or migrate (DDL rights)")
	if err := parse(fs, args); err != nil {
		return &exitCode{checkExitCannotRun, err}
	}
	if fs.NArg() > 0 {
		return &exitCode{checkExitCannotRun, fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	p, err := check.ParsePurpose(*purpose)
	if err != nil {
		return &exitCode{checkExitCannotRun, err}
	}
	report, err := check.Database(ctx, sqldb.Config{DSN: d.dsn, SQLiteSync: d.sync, BusyTimeout: d.busy,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, p)
	if err != nil {
		return &exitCode{checkExitCannotRun, fmt.Errorf("cannot check: %w", err)}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(jsonReport{Report: report, OK: report.OK()}); err != nil {
			return err
		}
	} else {
		printReport(stdout, report)
	}
	if !report.OK() {
		return &exitCode{code: checkExitFailed}
	}
	return nil
}

// jsonReport is the --json form: the report and its verdict.
type jsonReport struct {
	check.Report
	OK bool `json:"ok"`
}

// printReport writes one line per check, with its fix, then the verdict.
func printReport(w io.Writer, r check.Report) {
	failed := 0
	for _, c := range r.Checks {
		status := string(c.Status)
		if c.Failed() {
			status = "FAIL"
			failed++
		} else if c.Status == check.StatusFail {
			status = "fail" // not required: reported, never fatal
		}
		line := fmt.Sprintf("%-7s %-24s %s", status, c.Name, c.Detail)
		if c.Fix != "" && c.Status != check.StatusOK {
			line += "; fix: " + c.Fix
		}
		fmt.Fprintln(w, line)
	}
	if failed == 0 {
		fmt.Fprintf(w, "%s database ready to %s: %d checks, none failed\n", r.Dialect, r.Purpose, len(r.Checks))
		return
	}
	fmt.Fprintf(w, "%s database not ready to %s: %d of %d checks failed\n", r.Dialect, r.Purpose, failed, len(r.Checks))
}

// checkAtStart runs the checks before `serve` or `migrate` touches a SQL Server database:
// warnings and what it could not read are logged, a required failure refuses to start.
// The embedded SQLite database is made and set up by ledger itself, so it is not checked.
func checkAtStart(ctx context.Context, db *sqldb.DB, p check.Purpose, log *slog.Logger) error {
	if db.Dialect.Embedded() {
		return nil
	}
	report := check.Run(ctx, db, p)
	for _, c := range report.Checks {
		if c.Status == check.StatusOK {
			continue
		}
		log.WarnContext(ctx, "database check", "check", c.Name, "status", string(c.Status),
			"required", c.Required, "detail", c.Detail, "fix", c.Fix)
	}
	return report.Err()
}
