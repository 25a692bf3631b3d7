package sqldb

import (
	"database/sql"
	"errors"
	"io/fs"

	"github.com/jmoiron/sqlx"
)

// What the migration runner (package migrate) and the operator checks (package check) need
// of an open database beyond transactions: they run outside any tenant scope, on the pools
// themselves.

// Migrations returns the embedded migration files of the database's dialect, or those
// Config.Migrations named.
func (db *DB) Migrations() fs.FS {
	if db.migrations != nil {
		return db.migrations
	}
	return db.Dialect.Migrations()
}

// RawReader returns the reader pool (the writer pool on SQL Server), for the schema
// version and the checks, which read what the service's reads would see.
func (db *DB) RawReader() *sqlx.DB { return db.r }

// File is the SQLite database file as opened, "" on SQL Server: the migration lock and the
// file check sit beside it.
func (db *DB) File() string { return db.sqlitePath }

// OwnPool opens a pool of its own on SQL Server, with the service's session options.
// golang-migrate pins one connection (sql.DB.Conn) for its lifetime and runs the files'
// SET XACT_ABORT ON on it; closing this pool when the migrator closes ends that session
// instead of leaving it pinned in the service's pool. SQLite has one writer, so no second
// pool: it answers an error.
func (db *DB) OwnPool() (*sql.DB, error) {
	d, ok := db.Dialect.(mssqlDialect)
	if !ok {
		return nil, errors.New("a pool of its own: only on SQL Server")
	}
	return d.newMigrationPool()
}
