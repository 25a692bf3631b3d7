package sqldb

import (
	"time"

	"github.com/google/uuid"
)

// Sentinels that stand in for "no bound" in a keyset listing's (time, id) window: every
// stored time and id compares below them (or above KeyMinTime), in both dialects (SQLite's
// text order, SQL Server's datetimeoffset and uniqueidentifier order).
var (
	KeyMinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	KeyMaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
	KeyMaxID   = uuid.UUID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// KeyRange is a newest-first listing's window as its statements take it: the inclusive
// lower time, and one exclusive upper bound (time, id), the lower of the cursor (after, when
// not nil, with afterID) and the window's end, which excludes its own millisecond since no id
// sorts below uuid.Nil.
func KeyRange(from, to, after *time.Time, afterID uuid.UUID) (lower, at time.Time, id uuid.UUID) {
	lower, at, id = KeyMinTime, KeyMaxTime, KeyMaxID
	if from != nil {
		lower = CeilMillis(*from)
	}
	if after != nil {
		at, id = Truncate(*after), afterID
	}
	if to != nil {
		if end := CeilMillis(*to); !end.After(at) {
			at, id = end, uuid.Nil
		}
	}
	return lower, at, id
}

// CeilMillis rounds t up to the millisecond (in UTC): stored times have millisecond
// precision, so "At >= t" and "At < t" mean the same for t and its ceiling.
func CeilMillis(t time.Time) time.Time {
	tr := Truncate(t)
	if tr.Before(t) {
		tr = tr.Add(time.Millisecond)
	}
	return tr
}
