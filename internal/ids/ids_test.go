package ids

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// TestTimeFirstSortsInOrderMade: ids made one after another compare greater, as bytes and
// as their text, which is how SQLite's indexes order them (even within one millisecond).
func TestTimeFirstSortsInOrderMade(t *testing.T) {
	t.Parallel()
	prev := TimeFirst()
	for range 10_000 {
		id := TimeFirst()
		if bytes.Compare(id[:], prev[:]) <= 0 || id.String() <= prev.String() {
			t.Fatalf("%s made after %s sorts before it", id, prev)
		}
		if id.Version() != 7 {
			t.Fatalf("%s: version %d, want 7", id, id.Version())
		}
		prev = id
	}
}

// TestNewEndsWithTheTime: New's last six bytes are the Unix time in milliseconds (SQL
// Server orders uniqueidentifier by them first), and the rest is random.
func TestNewEndsWithTheTime(t *testing.T) {
	t.Parallel()
	when := time.UnixMilli(1_780_000_000_123)
	a, b := at(when), at(when)
	var ms [8]byte
	copy(ms[2:], a[10:])
	if got := int64(binary.BigEndian.Uint64(ms[:])); got != when.UnixMilli() {
		t.Fatalf("last six bytes say %d ms, want %d", got, when.UnixMilli())
	}
	if a == b || a.Version() != 4 {
		t.Fatalf("two ids of one millisecond: %s, %s (version %d)", a, b, a.Version())
	}
}
