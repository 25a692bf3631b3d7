package sqldb

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// TestGetRowScansAsSqlxDoes: the remembered plans answer what sqlx's Get answered, for each
// kind of destination, on the first scan and on the remembered one; a column no field
// names and a plan that no longer fits are errors, not silent skips.
func TestGetRowScansAsSqlxDoes(t *testing.T) {
	t.Parallel()
	db, err := sqlx.Open("sqlite", filepath.Join(t.TempDir(), "scan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type inner struct {
		B string `db:"B"`
	}
	type row struct {
		A     int        `db:"A"`
		When  time.Time  `db:"When"`
		Maybe *string    `db:"Maybe"`
		Ver   RowVersion `db:"Ver"`
		inner
		Nested struct {
			C int `db:"C"`
		} `db:"n"`
	}
	if _, err := db.Exec(`CREATE TABLE T (A INTEGER, "When" DATETIME, Maybe TEXT, Ver INTEGER, B TEXT, C INTEGER);
INSERT INTO T VALUES (7, '2026-01-02T03:04:05.678Z', NULL, 9, 'b', 3)`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT A, "When", Maybe, Ver, B, C AS "n.C" FROM T`
	var p scanPlans
	for round := range 2 {
		var got, want row
		rows, err := db.Query(q)
		if err := p.getRow(rows, err, q, &got, db.Mapper); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := db.Get(&want, q); err != nil {
			t.Fatal(err)
		}
		if got != want || got.A != 7 || got.B != "b" || got.Nested.C != 3 || got.Ver != 9 {
			t.Fatalf("round %d: got %+v, sqlx got %+v", round, got, want)
		}
	}
	var n int64
	rows, err := db.Query(`SELECT 42`)
	if err := p.getRow(rows, err, `SELECT 42`, &n, db.Mapper); err != nil || n != 42 {
		t.Fatalf("scalar: %d, %v", n, err)
	}
	rows, err = db.Query(`SELECT 1 WHERE 0`)
	if err := p.getRow(rows, err, `SELECT 1 WHERE 0`, &n, db.Mapper); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("no row: got %v, want sql.ErrNoRows", err)
	}
	var r row
	rows, err = db.Query(`SELECT 1 AS Nobody`)
	if err := p.getRow(rows, err, `SELECT 1 AS Nobody`, &r, db.Mapper); err == nil || !strings.Contains(err.Error(), "missing destination name Nobody") {
		t.Fatalf("unknown column: got %v", err)
	}
	// A remembered plan that no longer fits the statement's columns fails the scan.
	rows, err = db.Query(`SELECT 7 AS A`)
	if err := p.getRow(rows, err, q, &r, db.Mapper); err == nil {
		t.Fatal("a plan of six columns scanned a row of one")
	}
}
