package sqldb

import (
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"
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
	type Behind struct {
		D int64 `db:"D"`
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
		*Behind           // reached through a pointer: the scan allocates it, as sqlx's does
		ID      uuid.UUID `db:"ID"`
	}
	if _, err := db.Exec(`CREATE TABLE T (A INTEGER, "When" DATETIME, Maybe TEXT, Ver INTEGER, B TEXT, C INTEGER,
    D INTEGER, ID TEXT);
INSERT INTO T VALUES (7, '2026-01-02T03:04:05.678Z', NULL, 9, 'b', 3, 11, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT A, "When", Maybe, Ver, B, C AS "n.C", D, ID FROM T`
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
		if got.Behind == nil || want.Behind == nil || *got.Behind != *want.Behind || got.D != 11 {
			t.Fatalf("round %d: the embedded pointer's field: got %+v, sqlx got %+v", round, got.Behind, want.Behind)
		}
		got.Behind, want.Behind = nil, nil
		if got != want || got.A != 7 || got.B != "b" || got.Nested.C != 3 || got.Ver != 9 ||
			got.ID != uuid.MustParse("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b") {
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

// TestPointerAtIsReflects: the targets a plan makes from a field's offset are the pointers
// reflect makes, type and address, for every kind of field a row can have; and a field
// reached through an embedded pointer is left to reflect.
func TestPointerAtIsReflects(t *testing.T) {
	t.Parallel()
	type named string
	type embedded struct {
		E [3]byte
		F *time.Time
	}
	type PtrEmbedded struct{ G int }
	type row struct {
		A string
		B named
		C int64
		D any
		embedded
		H []int
		I map[string]int
		J struct{ K bool }
		L uuid.NullUUID
		*PtrEmbedded
	}
	rt := reflect.TypeFor[row]()
	v := reflect.New(rt).Elem()
	base := v.Addr().UnsafePointer()
	var paths [][]int
	for i := range rt.NumField() {
		paths = append(paths, []int{i})
		if f := rt.Field(i); f.Type.Kind() == reflect.Struct {
			for j := range f.Type.NumField() {
				paths = append(paths, []int{i, j})
			}
		}
	}
	paths = append(paths, []int{rt.NumField() - 1, 0}) // PtrEmbedded.G, behind a pointer
	for _, idx := range paths {
		off, ft, ok := directField(rt, idx)
		if name := rt.FieldByIndex(idx[:1]).Name; name == "PtrEmbedded" && len(idx) == 2 {
			if ok {
				t.Errorf("%v (%s.G) is behind a pointer, but directField says direct", idx, name)
			}
			continue
		}
		if !ok {
			t.Errorf("%v: directField says indirect", idx)
			continue
		}
		got := pointerAt(pointerType(ft), unsafe.Add(base, off))
		want := v.FieldByIndex(idx).Addr()
		if reflect.TypeOf(got) != want.Type() || reflect.ValueOf(got).UnsafePointer() != want.UnsafePointer() {
			t.Errorf("%v: pointerAt made %T %p, reflect %v %p", idx, got, got, want.Type(), want.UnsafePointer())
		}
		if want.CanInterface() && got != want.Interface() {
			t.Errorf("%v: pointerAt made %T %p, not equal to reflect's", idx, got, got)
		}
	}
}
