package sqldb

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// The embedded database's file can be deleted, moved or replaced under a running process
// (a cleanup script, a restore copied over it). SQLite keeps writing to the file it has
// open, which nothing will read again: acknowledged writes would be lost at the next
// start. So readiness and the writer compare the path's device and inode with the file
// opened, and the write-ahead log's (path-wal) with the log first seen, and refuse to go on
// when either differs: SQLite appends commits to the log it has open, so a log deleted or
// replaced loses every write since the last checkpoint the same way.

// errFileReplaced is the writer's and readiness's answer once the path no longer names the
// open file. It is an ErrUnavailable (503).
var errFileReplaced = errors.New("the database file at the configured path is not the file this process opened (deleted, moved or replaced); restart the process")

// errWALReplaced is errFileReplaced for the write-ahead log beside the file: SQLite keeps
// appending commits to the log it has open, so with that log deleted or replaced every
// write acknowledged since the last checkpoint is lost at the next start. It is an
// ErrUnavailable (503).
var errWALReplaced = errors.New("the database's write-ahead log (the -wal file) is not the one this process opened (deleted, moved or replaced); restart the process")

// errStorage marks a SQLite error of the file itself (disk full, I/O error, read-only, cannot
// open), as opposed to a lock another process holds.
var errStorage = errors.New("the database file cannot be written")

// writeFailHold is how long readiness stays failed after a write failed for the file's sake
// (disk full, I/O error): a replica whose writes fail is taken out of rotation, and is
// ready again once that long passes without a failed write.
const writeFailHold = 10 * time.Second

// sqliteFile is what the process knows of its database file.
type sqliteFile struct {
	path   string
	opened os.FileInfo // the file as opened; its device and inode are compared
	// wal is the write-ahead log as first seen (nil until it exists: SQLite makes it when
	// the writer first connects, and keeps it while a connection is open).
	wal  atomic.Pointer[os.FileInfo]
	gone atomic.Bool // the last check found another file (or none): logged once per change
	// failedAt is when a write last failed as unavailable (UnixNano; 0: never).
	failedAt atomic.Int64
}

// newSQLiteFile describes the file SQLite opened for dsn; nil (nothing to check) when the
// DSN names no file on disk (":memory:").
func newSQLiteFile(dsn string) *sqliteFile {
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	f := &sqliteFile{path: path, opened: fi}
	f.walChanged()
	return f
}

// walChanged reports whether the write-ahead log at the path is gone or another file
// than the one first seen; the first one seen is recorded.
func (f *sqliteFile) walChanged() (changed bool, statErr error) {
	fi, err := os.Stat(f.path + "-wal")
	known := f.wal.Load()
	if known == nil {
		if err == nil {
			f.wal.CompareAndSwap(nil, &fi)
		}
		return false, nil
	}
	return err != nil || !os.SameFile(*known, fi), err
}

// checkFile reports errFileReplaced (logged as an error when first seen) when the path no
// longer names the file opened. Nil on SQL Server.
func (db *DB) checkFile() error {
	f := db.file
	if f == nil {
		return nil
	}
	fi, err := os.Stat(f.path)
	cause, what := errFileReplaced, "the database file"
	ok := err == nil && os.SameFile(f.opened, fi)
	if ok {
		var walGone bool
		if walGone, err = f.walChanged(); walGone {
			ok, cause, what = false, errWALReplaced, "the database's write-ahead log (-wal)"
		}
	}
	if ok {
		if f.gone.Swap(false) {
			db.log.Info("the database file and its write-ahead log are back at their path", "path", f.path)
		}
		return nil
	}
	if !f.gone.Swap(true) {
		db.log.Error(what+" was deleted, moved or replaced while serving: writes and readiness fail until restart",
			"path", f.path, "stat_err", fmt.Sprint(err))
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, cause)
}

// noteWrite records a write's outcome for readiness: one that failed for the file's sake
// (not a lock another process holds, which readiness's own write probe sees while it lasts)
// marks the writes failing.
func (db *DB) noteWrite(err error) {
	if db.file != nil && errors.Is(err, errStorage) {
		db.file.failedAt.Store(time.Now().UnixNano())
	}
}

// writesFailing reports an error while a write failed less than writeFailHold ago.
func (db *DB) writesFailing() error {
	if db.file == nil {
		return nil
	}
	at := db.file.failedAt.Load()
	if at == 0 || time.Since(time.Unix(0, at)) >= writeFailHold {
		return nil
	}
	return fmt.Errorf("%w: a write failed %s ago (disk full or I/O error)", ErrUnavailable,
		time.Since(time.Unix(0, at)).Round(time.Millisecond))
}
