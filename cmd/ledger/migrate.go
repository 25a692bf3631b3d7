package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/ledger-dev/ledger/internal/sqldb/check"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagsArgs("migrate", "[flags] up | down N | version | force V", stdout)
	var d dbFlags
	d.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return fmt.Errorf("say up, down N, version or force V")
	}
	verb := rest[0]
	var n int
	switch verb {
	case "up", "version":
		if len(rest) != 1 {
			return fmt.Errorf("%s takes no argument", verb)
		}
	case "down", "force":
		if len(rest) != 2 {
			return fmt.Errorf("%s needs one number", verb)
		}
		var err error
		if n, err = strconv.Atoi(rest[1]); err != nil || (verb == "down" && n < 1) || n < 0 {
			return fmt.Errorf("%s needs a non-negative number (down: at least 1), not %q", verb, rest[1])
		}
	default:
		return fmt.Errorf("unknown migrate verb %q: say up, down N, version or force V", verb)
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	open := openExisting
	if verb == "up" {
		open = openDB // the deploy step that may create a database
	}
	db, err := open(ctx, d, log)
	if err != nil {
		return err
	}
	defer db.Close()
	if verb == "up" || verb == "down" {
		// version only reads, and force is the way out of a failed migration.
		if err := checkAtStart(ctx, db, check.ForMigrate, log); err != nil {
			return err
		}
	}
	mg, err := migrate.New(db)
	if err != nil {
		return err
	}
	defer mg.Close()
	if verb == "down" {
		// golang-migrate would only say it has no file for the version.
		if st, err := mg.State(); err == nil && st.Version > st.Latest {
			return fmt.Errorf("down: schema is at version %d, newer than this binary's %d: run `ledger migrate down` with the binary that migrated it", st.Version, st.Latest)
		}
	}
	switch verb {
	case "up":
		var applied []migrate.Migration
		applied, err = mg.UpApplied()
		for _, m := range applied {
			if m.Kind == migrate.Breaking {
				fmt.Fprintf(stdout, "applied %d %s: breaking (%s)\n", m.Version, m.Title, m.Reason)
			} else {
				fmt.Fprintf(stdout, "applied %d %s: %s\n", m.Version, m.Title, m.Kind)
			}
		}
	case "down":
		err = mg.Down(n)
	case "force":
		err = mg.Force(n)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	st, err := mg.State()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "version %d of %d, dirty %v\n", st.Version, st.Latest, st.Dirty)
	if st.Version > st.Latest && !st.Dirty {
		if _, _, err := migrate.Servable(ctx, db); err != nil {
			fmt.Fprintln(stdout, err)
		} else {
			fmt.Fprintln(stdout, "the schema is newer than this binary's; every newer migration is additive, so this binary serves it")
		}
	}
	return nil
}
