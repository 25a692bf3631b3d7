package api

import (
	"encoding/json"
	"time"
)

// TimeLayout is how every time travels: RFC 3339 in UTC with exactly three fractional
// digits, 2026-12-01T08:26:03.900Z.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Bounds of a time on the wire: 0001-01-01 to 9999-12-31 UTC, what both databases store.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
)

// Time is a time on the wire. It is sent in TimeLayout (UTC, milliseconds: the precision
// the service stores) and read from any RFC 3339 time in 0001-01-01..9999-12-31 UTC; a
// time elsewhere, or text that is not RFC 3339, is refused with a *ValueError.
type Time struct{ time.Time }

// NewTime returns t as a wire time (in UTC).
func NewTime(t time.Time) Time { return Time{t.UTC()} }

// TimeOf returns a wire time of *t, or nil when t is nil.
func TimeOf(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	w := NewTime(*t)
	return &w
}

// Ptr returns the address of a time (for optional members).
func (t Time) Ptr() *Time { return &t }

// ParseTime reads an RFC 3339 time within the wire's bounds.
func ParseTime(s string) (Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Time{}, &ValueError{Reason: "is not an RFC 3339 time"}
	}
	if t = t.UTC(); t.Before(MinTime) || t.After(MaxTime) {
		return Time{}, &ValueError{Reason: "is outside 0001-01-01..9999-12-31 UTC"}
	}
	return Time{t}, nil
}

// String is the time as it travels.
func (t Time) String() string { return t.UTC().Format(TimeLayout) }

// MarshalText writes the time in TimeLayout; a time outside the bounds is an error.
func (t Time) MarshalText() ([]byte, error) {
	u := t.UTC()
	if u.Before(MinTime) || u.After(MaxTime) {
		return nil, &ValueError{Reason: "is outside 0001-01-01..9999-12-31 UTC"}
	}
	return u.AppendFormat(make([]byte, 0, len(TimeLayout)), TimeLayout), nil
}

// MarshalJSON writes the time as a JSON string in TimeLayout. The layout's digits, '-', ':',
// 'T', '.' and 'Z' need no escaping, so the quotes go around it as it is: one allocation per
// time in every answer rather than five.
func (t Time) MarshalJSON() ([]byte, error) {
	u := t.UTC()
	if u.Before(MinTime) || u.After(MaxTime) {
		return nil, &ValueError{Reason: "is outside 0001-01-01..9999-12-31 UTC"}
	}
	b := append(make([]byte, 0, len(TimeLayout)+2), '"')
	return append(u.AppendFormat(b, TimeLayout), '"'), nil
}

// UnmarshalText reads an RFC 3339 time (ParseTime).
func (t *Time) UnmarshalText(b []byte) error {
	v, err := ParseTime(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// UnmarshalJSON reads a JSON string holding an RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &ValueError{Reason: "is not an RFC 3339 time"}
	}
	return t.UnmarshalText([]byte(s))
}
