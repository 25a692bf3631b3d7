package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"modernc.org/sqlite"
)

// Backup writes a consistent copy of the embedded database to out, while other processes
// go on writing to it: VACUUM INTO reads one snapshot (a read transaction under WAL blocks
// no writer) and writes a compact, self-contained file. The copy is made under a temporary
// name beside out, checked with PRAGMA integrity_check, synced and only then renamed to
// out, so out is either the whole checked copy or absent. An existing out is refused.
// SQL Server backs up with its own tools.
func (db *DB) Backup(ctx context.Context, out string) error {
	if db.sqlitePath == "" {
		return errors.New("backup copies the embedded SQLite database; back up SQL Server with BACKUP DATABASE (or Azure SQL's automatic backups)")
	}
	if out == "" {
		return errors.New("say where the copy goes with --out FILE")
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s exists: choose another name or remove it first", out)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	if same, _ := sameFile(out, db.sqlitePath); same {
		return errors.New("--out names the database itself")
	}
	if err := sideFileName(out, db.sqlitePath); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o750); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	tmp := out + ".partial"
	// A backup killed while it wrote leaves its copy and the copy's rollback journal (as
	// large as the database): remove them, and say so.
	if left := removeCopy(tmp); len(left) > 0 {
		db.log.Warn("removed what an interrupted backup left", "files", left)
	}
	if _, err := db.w.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		removeCopy(tmp)
		return fmt.Errorf("backup: VACUUM INTO: %w", db.Dialect.MapError(err))
	}
	if err := verifyCopy(ctx, tmp); err != nil {
		removeCopy(tmp)
		return err
	}
	if err := syncFile(tmp); err != nil {
		removeCopy(tmp)
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		removeCopy(tmp)
		return fmt.Errorf("backup: %w", err)
	}
	// The rename is durable once the directory is synced.
	if err := syncFile(filepath.Dir(out)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// sideSuffixes are the names SQLite gives the files beside a database (its rollback
// journal, write-ahead log and shared memory), and ledger's migration lock.
var sideSuffixes = []string{"-journal", "-wal", "-shm", ".lock"}

// sideFileName refuses a backup named as a side file: of the database (a copy written as
// ledger.db-journal makes every open of the database fail with SQLITE_BUSY while it is
// written, and the next start roll it back as a hot journal), or of any database (a name
// ending in -journal, -wal or -shm is the side file of the name before it).
func sideFileName(out, dbPath string) error {
	absOut, err1 := filepath.Abs(out)
	absDB, err2 := filepath.Abs(dbPath)
	for _, suffix := range sideSuffixes {
		if err1 == nil && err2 == nil && absOut == absDB+suffix {
			return fmt.Errorf("--out names the database's %s file (%s): choose another name", suffix, out)
		}
		if suffix != ".lock" && strings.HasSuffix(out, suffix) {
			return fmt.Errorf("--out ends in %s, the name SQLite gives a database's side file: choose another name", suffix)
		}
	}
	return nil
}

// removeCopy removes a copy being written and its side files, and returns the ones that
// were there.
func removeCopy(tmp string) []string {
	var removed []string
	for _, name := range []string{tmp, tmp + "-journal", tmp + "-wal", tmp + "-shm"} {
		if err := os.Remove(name); err == nil {
			removed = append(removed, name)
		}
	}
	return removed
}

// verifyCopy runs SQLite's integrity check on a copy, read only, its temporary files (if
// the check needs any) in memory as every other connection's (docs/operators.md).
func verifyCopy(ctx context.Context, path string) error {
	c, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=temp_store(memory)")
	if err != nil {
		return fmt.Errorf("backup: open the copy: %w", err)
	}
	defer c.Close()
	rows, err := c.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("backup: check the copy: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("backup: check the copy: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		var se *sqlite.Error
		if errors.As(err, &se) {
			return fmt.Errorf("backup: the copy is not a database: %w", err)
		}
		return fmt.Errorf("backup: check the copy: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("backup: the copy failed its integrity check: %s", strings.Join(problems[:min(3, len(problems))], "; "))
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func sameFile(a, b string) (bool, error) {
	ia, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	ib, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(ia, ib), nil
}
