package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// These cases run SQL directly against the embedded dialect: they pin the SQLite emulation
// of SQL Server behaviour (rowversion, error mapping, read-only readers) that the stores rely on.

func sqliteDB(t *testing.T) *sqldb.DB {
	t.Helper()
	return dbtest.SQLite().Open(t, dbtest.Options{})
}

const nowText = "2024-05-06T07:08:09.010Z"

func counter(t *testing.T, db *sqldb.DB) int64 {
	t.Helper()
	var v int64
	if err := db.Raw().Get(&v, `SELECT Value FROM RowVersionCounter`); err != nil {
		t.Fatal(err)
	}
	return v
}

func projectVersion(t *testing.T, db *sqldb.DB, tenant, project string) int64 {
	t.Helper()
	var v int64
	if err := db.Raw().Get(&v, `SELECT Version FROM Projects WHERE TenantId = ? AND ProjectId = ?`, tenant, project); err != nil {
		t.Fatal(err)
	}
	return v
}

func wantRefusedUnstamped(t *testing.T, db *sqldb.DB, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("an unstamped write was accepted")
	}
	if !strings.Contains(err.Error(), "rowversion not stamped") {
		t.Fatalf("got %v, want the trigger's 'rowversion not stamped'", err)
	}
	if !errors.Is(db.Dialect.MapError(err), sqldb.ErrRefused) {
		t.Fatalf("MapError(%v) is not ErrRefused", err)
	}
}

func TestSQLiteRowVersionEmulation(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	tenant := dbtest.NewTenant(t, db)
	raw := db.Raw()
	const stampedInsert = `INSERT INTO Projects (TenantId, ProjectId, CreatedAt, UpdatedAt, Version)
VALUES (?1, ?2, ?3, ?3, (SELECT Value + 1 FROM RowVersionCounter))`

	before := counter(t, db)
	if _, err := raw.Exec(stampedInsert, tenant, "p1", nowText); err != nil {
		t.Fatalf("stamped insert: %v", err)
	}
	v1 := projectVersion(t, db, tenant, "p1")
	if v1 <= before || counter(t, db) != v1 {
		t.Fatalf("stamped insert: version %d, counter %d (was %d): want both advanced to the version", v1, counter(t, db), before)
	}

	t.Run("InsertWithoutStampFails", func(t *testing.T) {
		for _, version := range []string{"NULL", "0", fmt.Sprint(v1 - 1)} {
			_, err := raw.Exec(`INSERT INTO Projects (TenantId, ProjectId, CreatedAt, UpdatedAt, Version)
VALUES (?1, 'unstamped', ?2, ?2, `+version+`)`, tenant, nowText)
			wantRefusedUnstamped(t, db, err)
		}
	})
	t.Run("UpdateWithoutStampFails", func(t *testing.T) {
		_, err := raw.Exec(`UPDATE Projects SET Active = 0 WHERE TenantId = ? AND ProjectId = 'p1'`, tenant)
		wantRefusedUnstamped(t, db, err)
		_, err = raw.Exec(`UPDATE Projects SET Active = 0, Version = Version WHERE TenantId = ? AND ProjectId = 'p1'`, tenant)
		wantRefusedUnstamped(t, db, err)
		_, err = raw.Exec(`UPDATE Projects SET Active = 0, Version = Version - 1 WHERE TenantId = ? AND ProjectId = 'p1'`, tenant)
		wantRefusedUnstamped(t, db, err)
		if got := projectVersion(t, db, tenant, "p1"); got != v1 {
			t.Fatalf("a refused update changed the version: %d -> %d", v1, got)
		}
	})

	t.Run("StampingIncreases", func(t *testing.T) {
		_, err := raw.Exec(`UPDATE Projects SET Active = 0, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ? AND ProjectId = 'p1'`, tenant)
		if err != nil {
			t.Fatalf("stamped update: %v", err)
		}
		v2 := projectVersion(t, db, tenant, "p1")
		if v2 <= v1 || counter(t, db) != v2 {
			t.Fatalf("stamped update: version %d (was %d), counter %d", v2, v1, counter(t, db))
		}
		if _, err := raw.Exec(stampedInsert, tenant, "p2", nowText); err != nil {
			t.Fatal(err)
		}
		if v3 := projectVersion(t, db, tenant, "p2"); v3 <= v2 {
			t.Fatalf("a later insert got version %d, not above %d", v3, v2)
		}
	})
}

func TestSQLiteMapError(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	tenant := dbtest.NewTenant(t, db)
	raw := db.Raw()
	d := db.Dialect

	t.Run("UniqueViolationIsConflict", func(t *testing.T) {
		_, err := raw.Exec(`INSERT INTO Tenants (TenantId, MaxLeasedRuns, CreatedAt) VALUES (?, 1, ?)`, tenant, nowText)
		mapped := d.MapError(err)
		var ce *sqldb.ConflictError
		if !errors.As(mapped, &ce) {
			t.Fatalf("MapError(%v) = %v, want *ConflictError", err, mapped)
		}
		if !strings.Contains(ce.Constraint, "Tenants.TenantId") {
			t.Fatalf("Constraint %q does not name the key's columns", ce.Constraint)
		}
		if !sqldb.IsConflict(mapped) || !sqldb.IsConflict(mapped, "nope", "Tenants.TenantId") || sqldb.IsConflict(mapped, "Runs.Subject") {
			t.Fatalf("IsConflict markers misread %q", ce.Constraint)
		}
		if errors.Unwrap(mapped) != err {
			t.Fatalf("the conflict does not wrap the driver error")
		}
	})
	t.Run("ForeignKeyViolationIsBadReference", func(t *testing.T) {
		_, err := raw.Exec(`INSERT INTO Projects (TenantId, ProjectId, CreatedAt, UpdatedAt, Version)
VALUES ('no-such-tenant', 'p', ?1, ?1, (SELECT Value + 1 FROM RowVersionCounter))`, nowText)
		if mapped := d.MapError(err); !errors.Is(mapped, sqldb.ErrBadReference) || sqldb.IsConflict(mapped) {
			t.Fatalf("MapError(%v) = %v, want ErrBadReference", err, mapped)
		}
	})
	t.Run("CheckViolationIsRefused", func(t *testing.T) {
		_, err := raw.Exec(`INSERT INTO Tenants (TenantId, MaxLeasedRuns, CreatedAt) VALUES ('neg', -1, ?)`, nowText)
		if mapped := d.MapError(err); !errors.Is(mapped, sqldb.ErrRefused) {
			t.Fatalf("MapError(%v) = %v, want ErrRefused", err, mapped)
		}
	})
	t.Run("NoRowsIsNotFound", func(t *testing.T) {
		var x string
		err := raw.Get(&x, `SELECT TenantId FROM Tenants WHERE TenantId = 'absent'`)
		mapped := d.MapError(err)
		if !errors.Is(mapped, sqldb.ErrNotFound) || !errors.Is(mapped, sql.ErrNoRows) {
			t.Fatalf("MapError(%v) = %v, want ErrNotFound wrapping sql.ErrNoRows", err, mapped)
		}
	})
	t.Run("OtherErrorsPassThrough", func(t *testing.T) {
		if d.MapError(nil) != nil {
			t.Fatal("MapError(nil) is not nil")
		}
		plain := errors.New("plain")
		if d.MapError(plain) != plain {
			t.Fatal("MapError changed an error that is not the driver's")
		}
	})
	t.Run("TxStatementsReturnMappedErrors", func(t *testing.T) {
		// A recovery path tests the error a statement returned, with no mapping of its own:
		// every Tx statement method must hand back the dialect's meaning.
		ctx := context.Background()
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO Tenants (TenantId, MaxLeasedRuns, CreatedAt) VALUES (?, 1, ?)`, tenant, nowText)
			if !sqldb.IsConflict(err, "Tenants.TenantId") {
				t.Errorf("ExecContext: %v, want a conflict on Tenants.TenantId", err)
			}
			var x string
			if err := tx.GetContext(ctx, &x, `SELECT TenantId FROM Tenants WHERE TenantId = 'absent'`); !errors.Is(err, sqldb.ErrNotFound) {
				t.Errorf("GetContext: %v, want ErrNotFound", err)
			}
			var xs []string
			if err := tx.SelectContext(ctx, &xs, `SELECT TenantId FROM NoSuchTable`); err == nil {
				t.Error("SelectContext of a missing table succeeded")
			}
			if d.MapError(err) != err {
				t.Error("mapping a mapped error again changed it")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("WriteMapsAnUnmappedDriverError", func(t *testing.T) {
		err := db.Write(context.Background(), sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
			_, err := tx.ExecContext(context.Background(), `INSERT INTO ApiKeys (KeyId, TenantId, Role, SecretHash, CreatedAt) VALUES ('k', 'no-such-tenant', 'admin', x'00', ?)`, nowText)
			return err // deliberately not mapped
		})
		if !errors.Is(err, sqldb.ErrBadReference) {
			t.Fatalf("Write returned %v, want ErrBadReference", err)
		}
	})
}

func TestTxNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("InjectedClockIsTruncatedToMillisecondsUTC", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		zone := time.FixedZone("UTC+5", 5*3600)
		db := dbtest.SQLite().Open(t, dbtest.Options{Clock: func() time.Time {
			calls.Add(1)
			return time.Date(2024, 1, 2, 3, 4, 5, 123_456_789, zone)
		}})
		want := time.Date(2024, 1, 1, 22, 4, 5, 123_000_000, time.UTC)
		// Opening may read the clock (dbtest places the database's clock floor by it).
		calls.Store(0)
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			for range 3 {
				now, err := tx.Now(ctx)
				if err != nil {
					return err
				}
				if !now.Equal(want) || now.Location() != time.UTC {
					t.Errorf("Now() = %v, want %v in UTC", now, want)
				}
			}
			if got := tx.Dialect.Time(want); got != "2024-01-01T22:04:05.123Z" {
				t.Errorf("Time() = %v, want the fixed-width text form", got)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 1 {
			t.Fatalf("the clock was read %d times in one transaction, want once", calls.Load())
		}
		if err := db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error { _, err := tx.Now(ctx); return err }); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 2 {
			t.Fatalf("a new transaction did not read the clock again (%d reads)", calls.Load())
		}
	})
	t.Run("DatabaseClockIsMillisecondsUTC", func(t *testing.T) {
		t.Parallel()
		db := sqliteDB(t)
		var first, second time.Time
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			var err error
			if first, err = tx.Now(ctx); err != nil {
				return err
			}
			second, err = tx.Now(ctx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if first.Location() != time.UTC || first.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("database Now() = %v, want UTC with millisecond precision", first)
		}
		if d := time.Since(first); d < -time.Minute || d > time.Minute {
			t.Fatalf("database Now() = %v is far from the host clock", first)
		}
		if !second.Equal(first) {
			t.Fatalf("Now() moved within one transaction: %v then %v", first, second)
		}
	})
}

func tenantCount(t *testing.T, db *sqldb.DB, id string) int {
	t.Helper()
	var n int
	if err := db.Raw().Get(&n, `SELECT COUNT(*) FROM Tenants WHERE TenantId = ?`, id); err != nil {
		t.Fatal(err)
	}
	return n
}

const insertTenant = `INSERT INTO Tenants (TenantId, MaxLeasedRuns, CreatedAt) VALUES (?, 1, '` + nowText + `')`

func TestWriteRollsBack(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("OnPanic", func(t *testing.T) {
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Fatalf("recovered %v, want the fn's own panic to propagate", p)
				}
			}()
			_ = db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
				if _, err := tx.ExecContext(ctx, insertTenant, "panicky"); err != nil {
					return err
				}
				panic("boom")
			})
		}()
		if n := tenantCount(t, db, "panicky"); n != 0 {
			t.Fatal("the panicking transaction's insert was kept")
		}
		// The single writer connection went back to the pool: the next write does not hang.
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			_, err := tx.ExecContext(ctx, insertTenant, "after-panic")
			return err
		})
		if err != nil || tenantCount(t, db, "after-panic") != 1 {
			t.Fatalf("write after the panic: %v", err)
		}
	})
	t.Run("OnError", func(t *testing.T) {
		bad := errors.New("refuse")
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			if _, err := tx.ExecContext(ctx, insertTenant, "erring"); err != nil {
				return err
			}
			return bad
		})
		if !errors.Is(err, bad) || tenantCount(t, db, "erring") != 0 {
			t.Fatalf("Write = %v, rows kept %d", err, tenantCount(t, db, "erring"))
		}
	})
	t.Run("RetryableRunsAgainFromScratch", func(t *testing.T) {
		var calls int
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			calls++
			if _, err := tx.ExecContext(ctx, insertTenant, fmt.Sprintf("retry-%d", calls)); err != nil {
				return err
			}
			if calls < 3 {
				return fmt.Errorf("deadlock victim: %w", sqldb.ErrRetryable)
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("Write = %v after %d calls, want success on the third", err, calls)
		}
		if tenantCount(t, db, "retry-1")+tenantCount(t, db, "retry-2") != 0 || tenantCount(t, db, "retry-3") != 1 {
			t.Fatal("a retried attempt's writes were kept, or the last one's lost")
		}
	})
	t.Run("RetryableForeverIsUnavailable", func(t *testing.T) {
		var calls int
		err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			calls++
			return sqldb.ErrRetryable
		})
		if !errors.Is(err, sqldb.ErrUnavailable) || calls < 2 || calls > 20 {
			t.Fatalf("Write = %v after %d calls, want ErrUnavailable after a bounded number", err, calls)
		}
	})
}

func TestSQLiteReadIsReadOnly(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	err := db.Read(context.Background(), sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(context.Background(), insertTenant, "from-a-read")
		return err
	})
	if err == nil || tenantCount(t, db, "from-a-read") != 0 {
		t.Fatalf("a Read transaction wrote (err %v)", err)
	}
}

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		sync    string
		pragma  int // PRAGMA synchronous: 1 NORMAL, 2 FULL
		wantErr bool
	}{
		{"", 1, false},
		{"normal", 1, false},
		{"NORMAL", 1, false},
		{"full", 2, false},
		{"off", 0, true},
		{"extra", 0, true},
	}
	for _, c := range cases {
		t.Run("sync="+c.sync, func(t *testing.T) {
			t.Parallel()
			// A missing directory is created; the sqlite:// prefix is accepted.
			path := filepath.Join(t.TempDir(), "nested", "dir", "ledger.db")
			db, err := sqldb.Open(ctx, sqldb.Config{DSN: "sqlite://" + path, SQLiteSync: c.sync})
			if c.wantErr {
				if err == nil {
					db.Close()
					t.Fatalf("sync %q was accepted", c.sync)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var got int
			if err := db.Raw().Get(&got, `PRAGMA synchronous`); err != nil || got != c.pragma {
				t.Fatalf("PRAGMA synchronous = %d (%v), want %d", got, err, c.pragma)
			}
			var mode string
			if err := db.Raw().Get(&mode, `PRAGMA journal_mode`); err != nil || mode != "wal" {
				t.Fatalf("journal_mode = %q (%v), want wal", mode, err)
			}
			var fk int
			if err := db.Raw().Get(&fk, `PRAGMA foreign_keys`); err != nil || fk != 1 {
				t.Fatalf("foreign_keys = %d (%v), want 1", fk, err)
			}
			if db.Dialect.Name() != "sqlite" {
				t.Fatalf("dialect %q", db.Dialect.Name())
			}
		})
	}
	if _, err := sqldb.Open(ctx, sqldb.Config{DSN: ""}); err == nil {
		t.Fatal("an empty DSN opened")
	}
	for dsn, want := range map[string]bool{
		"sqlserver://u:p@h:1433?database=ledger": true, "./data/ledger.db": false, "sqlite://x.db": false, "SQLSERVER://h": false,
	} {
		if sqldb.IsSQLServer(dsn) != want {
			t.Errorf("IsSQLServer(%q) = %v", dsn, !want)
		}
	}
}

// TestSQLiteOpensOfOneNewFileAllSucceed opens one new file from several connections at
// once, as replicas starting together do: the switch to WAL answers SQLITE_BUSY without
// the busy handler, and Open must wait it out instead of failing (it failed about once in
// 600 opens before Open retried).
func TestSQLiteOpensOfOneNewFileAllSucceed(t *testing.T) {
	t.Parallel()
	for i := 0; i < 150; i++ {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("new-%d.db", i))
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for j := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := sqldb.Open(context.Background(), sqldb.Config{DSN: path})
				if err == nil {
					err = db.Close()
				}
				errs[j] = err
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}
