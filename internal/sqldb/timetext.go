package sqldb

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Why times are read as text on SQLite: for every result column whose declared type is
// DATETIME, modernc's driver first parses the value with time.Time.String's layout (which
// never matches ours and builds an error) and then tries its own layouts, about a tenth of
// a cycle's instructions (docs/perf/issue-35.md). A result column that is an expression has
// no declared type, so the driver hands its text over as is: the SQLite statements answer
// a time column as CAST(col AS TEXT) AS col (SQLiteColumnList) and the scan parses the one
// layout the ledger writes (ParseTimeText). SQL Server's driver sends time values; they are
// taken as they come.

// ParseTimeText parses a time in TimeLayout ("2006-01-02T15:04:05.000Z"), the only form the
// ledger writes to SQLite (Dialect.Time, strftime('%Y-%m-%dT%H:%M:%fZ')), without
// time.Parse's general layout machinery. Anything else is an error that quotes the text.
func ParseTimeText(s string) (time.Time, error) {
	if len(s) != len(TimeLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
		s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return time.Time{}, badTimeText(s)
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	milli, ok7 := digits(s[20:23])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || month < 1 || month > 12 || day < 1 ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, badTimeText(s)
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, milli*int(time.Millisecond), time.UTC)
	if t.Day() != day { // 31 April, 29 February of a common year: Date normalized it
		return time.Time{}, badTimeText(s)
	}
	return t, nil
}

// FormatTimeText is t in UTC, truncated to milliseconds, in TimeLayout: what
// t.Format(TimeLayout) gives, written at fixed positions instead of through time.Format's
// layout machinery (every time a statement of the cycle sends is formatted so). Years
// outside 0..9999, which the layout does not fit, take time.Format.
func FormatTimeText(t time.Time) string {
	t = Truncate(t)
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(TimeLayout)
	}
	hour, minute, sec := t.Clock()
	milli := t.Nanosecond() / int(time.Millisecond)
	var b [len(TimeLayout)]byte
	put := func(at, n, width int) { putDigits(b[at:at+width], n) }
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, minute, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, milli, 3)
	b[23] = 'Z'
	return string(b[:])
}

// putDigits writes n's last len(b) decimal digits into b.
func putDigits(b []byte, n int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func badTimeText(s string) error {
	return fmt.Errorf("stored time %q is not in the fixed-width layout %s", s, TimeLayout)
}

// timeFrom is a scanned time value: text in TimeLayout (SQLite's text, handed over as is),
// or a time value (SQL Server; a SQLite column the driver converted because the statement
// answered it with its DATETIME declared type, which driverTimes counts). ok is false for
// NULL.
func timeFrom(src any, driverTimes *atomic.Uint64) (t time.Time, ok bool, err error) {
	switch v := src.(type) {
	case nil:
		return time.Time{}, false, nil
	case string:
		t, err = ParseTimeText(v)
	case []byte:
		t, err = ParseTimeText(string(v))
	case time.Time:
		if driverTimes != nil {
			driverTimes.Add(1)
		}
		t = v.UTC()
	default:
		return time.Time{}, false, fmt.Errorf("cannot scan %T as a time", src)
	}
	return t, err == nil, err
}

// timeDest fills a time.Time (or Time) field; timePtrDest a *time.Time field (NULL: nil);
// nullTimeDest a NullTime field. The scan plans put them in place of the field's address,
// so a row type keeps its time fields.
type timeDest struct {
	p      *time.Time
	driver *atomic.Uint64
}

func (d timeDest) Scan(src any) error {
	t, ok, err := timeFrom(src, d.driver)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("unexpected NULL time")
	}
	*d.p = t
	return nil
}

type timePtrDest struct {
	p      **time.Time
	driver *atomic.Uint64
}

func (d timePtrDest) Scan(src any) error {
	t, ok, err := timeFrom(src, d.driver)
	if err != nil {
		return err
	}
	if !ok {
		*d.p = nil
		return nil
	}
	*d.p = &t
	return nil
}

// DriverTimes is how many time fields the scans have taken as time values the driver
// converted, since the database was opened: on SQLite, zero for statements that answer
// their times as text (tests hold the hot path to it); on SQL Server every time.
func (db *DB) DriverTimes() uint64 { return db.plans.driverTimes.Load() }

type nullTimeDest struct {
	p      *NullTime
	driver *atomic.Uint64
}

func (d nullTimeDest) Scan(src any) error {
	t, ok, err := timeFrom(src, d.driver)
	if err != nil {
		return err
	}
	*d.p = NullTime{Time: t, Valid: ok}
	return nil
}
