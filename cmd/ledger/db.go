package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

func openDB(ctx context.Context, d dbFlags, log *slog.Logger) (*sqldb.DB, error) {
	return sqldb.Open(ctx, sqldb.Config{DSN: d.dsn, SQLiteSync: d.sync, BusyTimeout: d.busy, Logger: log})
}

// openExisting opens the database of an operator command (keys, tenants, purge, and migrate
// but for up). Unlike serve and migrate up it never creates the embedded database: a key
// made in a new file that serve does not read would be a key that never works, a purge of
// a new file reports success having purged nothing, and `migrate version` would answer for
// a database that did not exist. So a missing file is an error that names the path and how
// to choose another.
func openExisting(ctx context.Context, d dbFlags, log *slog.Logger) (*sqldb.DB, error) {
	if !sqldb.IsSQLServer(d.dsn) {
		path, err := sqldb.SQLitePath(d.dsn)
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			where := path
			if abs, err := filepath.Abs(path); err == nil && abs != path {
				where += " (" + abs + ")"
			}
			return nil, fmt.Errorf("no database at %s; choose one with --db or LEDGER_DB "+
				"(ledger serve creates the embedded database, ledger migrate up any other)", where)
		}
	}
	return openDB(ctx, d, log)
}
