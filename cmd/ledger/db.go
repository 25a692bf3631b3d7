package main

import (
	"context"
	"log/slog"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

func openDB(ctx context.Context, d dbFlags, log *slog.Logger) (*sqldb.DB, error) {
	return sqldb.Open(ctx, sqldb.Config{DSN: d.dsn, SQLiteSync: d.sync, BusyTimeout: d.busy, Logger: log})
}
