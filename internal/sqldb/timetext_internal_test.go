package sqldb

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// TestFormatTimeTextIsTimeFormat: the fixed-position formatter gives what
// Truncate(t).Format(TimeLayout) gives, for times in and out of the layout's years.
func TestFormatTimeTextIsTimeFormat(t *testing.T) {
	t.Parallel()
	times := []time.Time{
		{}, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 4, 23, 59, 59, 999_500_000, time.FixedZone("x", -3600)),
		time.Date(2024, 2, 29, 1, 2, 3, 4_000_000, time.FixedZone("y", 5*3600+1800)),
	}
	at := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2000 {
		times = append(times, at.Add(time.Duration(i)*7_919_999_999_937))
	}
	for _, at := range times {
		if got, want := FormatTimeText(at), Truncate(at).Format(TimeLayout); got != want {
			t.Errorf("%v: FormatTimeText %q, time.Format %q", at, got, want)
		}
	}
}

// TestParseTimeTextTakesOnlyTheLayoutWeWrite: what Dialect.Time writes parses back to the
// same instant; every other form is an error naming the text.
func TestParseTimeTextTakesOnlyTheLayoutWeWrite(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{
		time.Date(2026, 12, 4, 20, 31, 7, 123_000_000, time.UTC),
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(2026, 6, 1, 12, 0, 0, 5_678_901, time.FixedZone("x", 3600)),
	} {
		text := sqliteDialect{}.Time(at).(string)
		got, err := ParseTimeText(text)
		if err != nil || !got.Equal(Truncate(at)) || got.Location() != time.UTC {
			t.Errorf("%s: got %v, %v; want %v", text, got, err, Truncate(at))
		}
		if std, _ := time.Parse(TimeLayout, text); !std.Equal(got) {
			t.Errorf("%s: time.Parse says %v, ParseTimeText %v", text, std, got)
		}
	}
	for _, bad := range []string{
		"", "2026-12-04 20:31:07.123Z", "2026-12-04T20:31:07Z", "2026-12-04T20:31:07.123",
		"2026-12-04T20:31:07.123+00:00", "2026-13-04T20:31:07.123Z", "2026-00-04T20:31:07.123Z",
		"2026-04-31T20:31:07.123Z", "2026-02-29T00:00:00.000Z", "2026-12-04T24:00:00.000Z",
		"2026-12-04T20:60:00.000Z", "2026-12-04T20:31:60.000Z", "2026-12-0xT20:31:07.123Z",
		"+026-12-04T20:31:07.123Z", "2026-12-04T20:31:07.1234Z", "2026-12-04 20:31:07.123 +0000 UTC",
	} {
		if got, err := ParseTimeText(bad); err == nil || !strings.Contains(err.Error(), "fixed-width layout") {
			t.Errorf("%q: got %v, %v; want an error", bad, got, err)
		}
	}
}

// TestTimesScannedAsText: a DATETIME column answered as text (SQLiteColumnList) reaches a
// time.Time and a *time.Time field, in a Get and in a Select, as the same instants the
// driver's own conversion gives, without the driver converting it (driverTimes stays 0);
// answered plainly it still scans, and is counted.
func TestTimesScannedAsText(t *testing.T) {
	t.Parallel()
	db, err := sqlx.Open("sqlite", filepath.Join(t.TempDir(), "times.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type row struct {
		ID    int        `db:"Id"`
		At    time.Time  `db:"At"`
		Maybe *time.Time `db:"Maybe"`
	}
	type table struct{}
	cols := []Column[table]{{Name: "Id", SQLite: "INTEGER"}, {Name: "At", SQLite: "DATETIME"}, {Name: "Maybe", SQLite: "DATETIME"}}
	at := time.Date(2026, 12, 4, 20, 31, 7, 123_000_000, time.UTC)
	if _, err := db.Exec(`CREATE TABLE T (Id INTEGER, At DATETIME NOT NULL, Maybe DATETIME);
INSERT INTO T VALUES (1, ?1, NULL), (2, ?1, ?2)`, sqliteDialect{}.Time(at), sqliteDialect{}.Time(at.Add(time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	text := `SELECT ` + SQLiteColumnList(cols, "t.", nil) + ` FROM T t ORDER BY Id`
	if want := "SELECT t.Id, CAST(t.At AS TEXT) AS At, CAST(t.Maybe AS TEXT) AS Maybe FROM T t ORDER BY Id"; text != want {
		t.Fatalf("column list: %s", text)
	}
	plain := `SELECT Id, At, Maybe FROM T ORDER BY Id`
	var want []row
	if err := db.Select(&want, plain); err != nil {
		t.Fatal(err)
	}
	if len(want) != 2 || !want[0].At.Equal(at) || want[0].Maybe != nil || !want[1].Maybe.Equal(at.Add(time.Millisecond)) {
		t.Fatalf("the driver's own scan: %+v", want)
	}
	var p scanPlans
	for round := range 2 {
		var got []row
		rows, err := db.Query(text)
		if err := p.selectRows(rows, err, text, &got, db.Mapper); err != nil {
			t.Fatal(err)
		}
		var one row
		rows, err = db.Query(text)
		if err := p.getRow(rows, err, text, &one, db.Mapper); err != nil {
			t.Fatal(err)
		}
		var scalar *time.Time
		q := `SELECT CAST(Maybe AS TEXT) FROM T WHERE Id = 2`
		rows, err = db.Query(q)
		if err := p.getRow(rows, err, q, &scalar, db.Mapper); err != nil || scalar == nil || !scalar.Equal(*want[1].Maybe) {
			t.Fatalf("scalar: %v, %v", scalar, err)
		}
		if len(got) != 2 || one.ID != 1 {
			t.Fatalf("round %d: %+v, %+v", round, got, one)
		}
		for i := range got {
			if !got[i].At.Equal(want[i].At) || got[i].At.Location() != time.UTC ||
				(got[i].Maybe == nil) != (want[i].Maybe == nil) || got[i].Maybe != nil && !got[i].Maybe.Equal(*want[i].Maybe) {
				t.Fatalf("round %d row %d: got %+v, the driver's %+v", round, i, got[i], want[i])
			}
		}
		if n := p.driverTimes.Load(); n != 0 {
			t.Fatalf("round %d: %d times converted by the driver", round, n)
		}
	}
	var got []row
	rows, err := db.Query(plain)
	if err := p.selectRows(rows, err, plain, &got, db.Mapper); err != nil || len(got) != 2 || !got[1].At.Equal(at) {
		t.Fatalf("plain: %+v, %v", got, err)
	}
	if n := p.driverTimes.Load(); n != 3 {
		t.Fatalf("plain: %d driver times counted, want 3 (two At, one Maybe)", n)
	}
	// Time and NullTime fields take the same scanners, and are counted alike.
	type ours struct {
		At    Time     `db:"At"`
		Maybe NullTime `db:"Maybe"`
	}
	for _, c := range []struct {
		q     string
		count uint64
	}{{`SELECT CAST(At AS TEXT) AS At, CAST(Maybe AS TEXT) AS Maybe FROM T ORDER BY Id`, 0}, {`SELECT At, Maybe FROM T ORDER BY Id`, 3}} {
		var got []ours
		before := p.driverTimes.Load()
		rows, err := db.Query(c.q)
		if err := p.selectRows(rows, err, c.q, &got, db.Mapper); err != nil || len(got) != 2 {
			t.Fatalf("%s: %+v, %v", c.q, got, err)
		}
		if !got[0].At.Equal(at) || got[0].Maybe.Valid || !got[1].Maybe.Valid || !got[1].Maybe.Time.Equal(at.Add(time.Millisecond)) {
			t.Fatalf("%s: %+v", c.q, got)
		}
		if n := p.driverTimes.Load() - before; n != c.count {
			t.Fatalf("%s: %d driver times counted, want %d", c.q, n, c.count)
		}
	}
	if _, err := db.Exec(`UPDATE T SET At = '2026-12-04 20:31:07' WHERE Id = 1`); err != nil {
		t.Fatal(err)
	}
	rows, err = db.Query(text)
	if err := p.selectRows(rows, err, text, &got, db.Mapper); err == nil || !strings.Contains(err.Error(), `"2026-12-04 20:31:07" is not in the fixed-width layout`) {
		t.Fatalf("a time in another layout: got %v", err)
	}
}
