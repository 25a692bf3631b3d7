package sqldb_test

import (
	"math"
	"regexp"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

func TestRowVersionScan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		src     any
		want    sqldb.RowVersion
		wantErr bool
	}{
		{"BinaryIsBigEndian", []byte{0, 0, 0, 0, 0, 0, 0x01, 0x02}, 0x0102, false},
		{"BinaryHighBit", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, math.MaxUint64 - 1, false},
		{"Integer", int64(42), 42, false},
		{"ShortBinary", []byte{1, 2, 3, 4, 5, 6, 7}, 0, true},
		{"LongBinary", make([]byte, 9), 0, true},
		{"Text", "42", 0, true},
		{"Null", nil, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var v sqldb.RowVersion
			err := v.Scan(c.src)
			if (err != nil) != c.wantErr {
				t.Fatalf("Scan(%v): err %v, want error %v", c.src, err, c.wantErr)
			}
			if err == nil && v != c.want {
				t.Fatalf("Scan(%v) = %d, want %d", c.src, v, c.want)
			}
		})
	}
}

func TestETagRoundTrip(t *testing.T) {
	t.Parallel()
	strong := regexp.MustCompile(`^"[0-9a-f]{16}"$`)
	for _, v := range []sqldb.RowVersion{0, 1, 255, 1 << 32, math.MaxInt64, math.MaxUint64} {
		tag := v.ETag()
		if !strong.MatchString(tag) {
			t.Fatalf("ETag(%d) = %s, want a quoted 16-hex-digit strong tag", v, tag)
		}
		for _, sent := range []string{tag, " " + tag + " "} {
			got, ok := sqldb.ParseETag(sent)
			if !ok || got != v {
				t.Fatalf("ParseETag(%q) = %d, %v; want %d", sent, got, ok, v)
			}
		}
	}
	if sqldb.RowVersion(1).ETag() == sqldb.RowVersion(2).ETag() {
		t.Fatal("different versions share an ETag")
	}
	if v, err := sqldb.RowVersion(7).Value(); err != nil || v != int64(7) {
		t.Fatalf("Value() = %v, %v", v, err)
	}
}

func TestParseETagRefusesWhatETagNeverMakes(t *testing.T) {
	t.Parallel()
	for _, tag := range []string{
		``,
		`*`,
		`W/"0000000000000001"`, // weak tags never match under strong comparison
		`0000000000000001`,
		`"000000000000001"`,
		`"00000000000000001"`,
		`"000000000000000g"`,
		`"+000000000000001"`,
		`"-000000000000001"`,
		`"0x00000000000001"`,
		`"0000000000000001", "0000000000000002"`,
		`'0000000000000001'`,
		`"0000000000000001`,
	} {
		if v, ok := sqldb.ParseETag(tag); ok {
			t.Errorf("ParseETag(%q) accepted it as %d", tag, v)
		}
	}
}
