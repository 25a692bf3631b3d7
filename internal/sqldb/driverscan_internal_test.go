package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
)

type enumInt int
type enumInt8 int8
type enumString string

// TestWriterScansAsDatabaseSQL: the writer's statements run on the driver's own statements
// and assign the row values themselves (driverscan.go); every pairing of a value SQLite
// answers with a destination a store scans into gives what database/sql's Scan gives, the
// same value or an error alike.
func TestWriterScansAsDatabaseSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "scan.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	sources := []string{"42", "-7", "300", "0", "1", "1.5", "'text'", "'17'", "''", "x'00ff'", "NULL",
		"9223372036854775807", "'2026-12-04T20:31:07.123Z'"}
	dests := []func() any{
		func() any { return new(string) }, func() any { return new(int) }, func() any { return new(int64) },
		func() any { return new(int8) }, func() any { return new(uint32) }, func() any { return new(bool) },
		func() any { return new(float64) }, func() any { return new([]byte) }, func() any { return new(any) },
		func() any { return new(*string) }, func() any { return new(*int) }, func() any { return new(*int64) },
		func() any { return new(enumInt) }, func() any { return new(enumInt8) }, func() any { return new(enumString) },
		func() any { return new(*enumInt) }, func() any { return new(sql.NullString) }, func() any { return new(sql.NullInt64) },
		func() any { return new(json.RawMessage) }, func() any { return new(uuid.NullUUID) },
	}
	for _, src := range sources {
		query := "SELECT " + src
		// The driver's value for the source, as the writer reads it.
		var value driver.Value
		if err := driverRowsOf(ctx, conn, query, func(rows driver.Rows) error {
			vals := make([]driver.Value, 1)
			if err := rows.Next(vals); err != nil {
				return err
			}
			value = vals[0]
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, newDest := range dests {
			want, got := newDest(), newDest()
			wantErr := db.QueryRowContext(ctx, query).Scan(want)
			gotErr := assign(got, value)
			name := fmt.Sprintf("%s into %T", src, want)
			if (wantErr == nil) != (gotErr == nil) {
				t.Errorf("%s: database/sql's error %v, the writer's %v", name, wantErr, gotErr)
				continue
			}
			if wantErr == nil && !reflect.DeepEqual(want, got) {
				t.Errorf("%s: database/sql scans %#v, the writer %#v", name, reflect.ValueOf(want).Elem(), reflect.ValueOf(got).Elem())
			}
		}
	}
}

// TestWriterBindsAsDatabaseSQL: the writer converts a statement's arguments itself
// (namedArgs); SQLite receives each argument as database/sql would have sent it (the same
// type and value, read back by quote(?)), and an argument database/sql refuses is refused.
func TestWriterBindsAsDatabaseSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openQuiet(t)
	text := "a text"
	var noText *string
	at := time.Date(2026, 12, 4, 20, 31, 7, 123e6, time.UTC)
	args := []any{nil, 42, int64(-7), int32(5), uint8(200), uint64(1) << 40, enumInt(3), enumString("queued"),
		true, false, 1.25, float32(0.5), "text", enumString(""), []byte{0, 0xff}, json.RawMessage(`{"a":1}`),
		&text, noText, uuid.MustParse("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), uuid.NullUUID{}, at,
		sql.NullString{String: "n", Valid: true}, sql.Named("x", 9)}
	for _, arg := range args {
		query := "SELECT typeof(?1) || ':' || quote(?1)"
		if _, ok := arg.(sql.NamedArg); ok {
			query = "SELECT typeof(:x) || ':' || quote(:x)"
		}
		var want, got string
		if err := db.Raw().GetContext(ctx, &want, query, arg); err != nil {
			t.Fatalf("%T through database/sql: %v", arg, err)
		}
		if err := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
			return tx.GetContext(ctx, &got, query, arg)
		}); err != nil {
			t.Fatalf("%T through the writer: %v", arg, err)
		}
		if got != want {
			t.Errorf("%T %v: the writer binds %s, database/sql %s", arg, arg, got, want)
		}
	}
	refused := make(chan int)
	_, wantErr := db.Raw().ExecContext(ctx, "SELECT ?1", refused)
	gotErr := db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "SELECT ?1", refused)
		return err
	})
	if wantErr == nil || gotErr == nil {
		t.Fatalf("a channel as an argument: database/sql %v, the writer %v; want both refused", wantErr, gotErr)
	}
}

// driverRowsOf runs query on the driver's own statement on conn (below database/sql) and
// hands its rows to read: what the driver itself hands over, to compare with.
func driverRowsOf(ctx context.Context, conn *sql.Conn, query string, read func(driver.Rows) error) error {
	return conn.Raw(func(c any) error {
		s, err := c.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		defer s.Close()
		rows, err := s.(driver.StmtQueryContext).QueryContext(ctx, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		return read(rows)
	})
}
