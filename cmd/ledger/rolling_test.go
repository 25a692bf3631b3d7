package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	sqlitemigrations "github.com/ledger-dev/ledger/migrations/sqlite"
)

// serve (prepareSchema, on SQLite) of a binary older than the schema: it serves a newer
// schema whose newer migrations are all additive, without trying to migrate it, and logs a
// line saying so; a breaking one it refuses, saying what to deploy, where it used to answer
// golang-migrate's "no migration found for version N" (issue 30 items 8 and 9).
func TestServeOfAnOlderBinary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	newer := func(extra map[string]string) fs.FS {
		out := fstest.MapFS{}
		names, _ := fs.Glob(sqlitemigrations.FS, "*.sql")
		for _, n := range names {
			b, err := fs.ReadFile(sqlitemigrations.FS, n)
			if err != nil {
				t.Fatal(err)
			}
			out[n] = &fstest.MapFile{Data: b}
		}
		for n, text := range extra {
			out[n] = &fstest.MapFile{Data: []byte(text)}
		}
		return out
	}
	migrateAs := func(path string, migs fs.FS) {
		db, err := sqldb.Open(ctx, sqldb.Config{DSN: path, Migrations: migs, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		mg, err := migrate.New(db)
		if err != nil {
			t.Fatal(err)
		}
		defer mg.Close()
		if err := mg.Up(); err != nil {
			t.Fatal(err)
		}
	}
	additive := map[string]string{
		"000900_rolling_probe.up.sql":   "-- migration: additive\nCREATE TABLE RollingProbe (Id INTEGER);\n",
		"000900_rolling_probe.down.sql": "DROP TABLE RollingProbe;\n",
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	migrateAs(path, newer(additive))

	var logs bytes.Buffer
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := prepareSchema(ctx, db, false, "default", io.Discard); err != nil {
		t.Fatalf("serve of an older binary over an additive newer schema: %v", err)
	}
	if !strings.Contains(logs.String(), "every newer migration is additive") || !strings.Contains(logs.String(), "900 rolling_probe") {
		t.Fatalf("no log line says the newer schema is served: %q", logs.String())
	}

	additive["000901_contract.up.sql"] = "-- migration: breaking\n-- drops what older binaries read.\nCREATE TABLE Contracted (Id INTEGER);\n"
	additive["000901_contract.down.sql"] = "DROP TABLE Contracted;\n"
	migrateAs(path, newer(additive))
	err = prepareSchema(ctx, db, false, "default", io.Discard)
	if err == nil || !strings.Contains(err.Error(), "migration 901 (contract)") || !strings.Contains(err.Error(), "deploy a binary whose schema version") ||
		strings.Contains(err.Error(), "no migration found") {
		t.Fatalf("serve of an older binary over a breaking newer schema: %v", err)
	}
}
