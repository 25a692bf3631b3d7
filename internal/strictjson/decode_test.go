package strictjson

import (
	"errors"
	"testing"

	"github.com/ledger-dev/ledger/api"
)

func TestParseTime(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{
		"2026-12-01T08:26:03.900Z": true, "2026-12-01T10:26:03+02:00": true, "0001-01-01T00:00:00Z": true,
		"9999-12-31T23:59:59.999Z": true, "9999-12-31T23:59:59-05:00": false, "0001-01-01T00:00:00+00:01": false,
		"2026-12-01": false, "2026-12-01T08:26:03": false, "": false,
	} {
		if _, why := ParseTime(in); (why == "") != ok {
			t.Errorf("ParseTime(%q): %q", in, why)
		}
	}
	// The reasons are api.Time's own.
	for in, want := range map[string]string{"x": NotRFC3339, "9999-12-31T23:59:59-05:00": OutsideTimes} {
		_, err := api.ParseTime(in)
		var ve *api.ValueError
		if !errors.As(err, &ve) || ve.Reason != want {
			t.Errorf("api.ParseTime(%q) = %v, want the reason %q", in, err, want)
		}
	}
}
