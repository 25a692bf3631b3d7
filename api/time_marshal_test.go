package api

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestTimeMarshalJSONIsTheQuotedText: MarshalJSON is encoding/json's string of MarshalText
// for times across the range (bounds, zones, sub-millisecond parts), refuses what MarshalText
// refuses, and costs one allocation.
func TestTimeMarshalJSONIsTheQuotedText(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	for _, tm := range []time.Time{
		MinTime, MaxTime, {}, time.Date(2026, 12, 1, 8, 26, 3, 900_000_000, time.UTC),
		time.Date(2026, 12, 1, 8, 26, 3, 123_456_789, east), time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Unix(0, 0), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), MinTime.Add(-time.Nanosecond),
	} {
		w := Time{tm}
		got, err := w.MarshalJSON()
		text, terr := w.MarshalText()
		if terr != nil {
			var ve *ValueError
			if err == nil || !errors.As(err, &ve) {
				t.Fatalf("%v: MarshalJSON = %s, %v; MarshalText refuses it (%v)", tm, got, err, terr)
			}
			continue
		}
		want, _ := json.Marshal(string(text))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%v: MarshalJSON = %s, %v; want %s", tm, got, err, want)
		}
	}
	w := NewTime(time.Date(2026, 12, 1, 8, 26, 3, 900_000_000, time.UTC))
	if n := testing.AllocsPerRun(100, func() { _, _ = w.MarshalJSON() }); n > 1 {
		t.Fatalf("MarshalJSON makes %v allocations, want 1", n)
	}
}
