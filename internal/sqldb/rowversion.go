package sqldb

import (
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// RowVersion is a row's version: SQL Server's 8-byte rowversion, or SQLite's stamped
// counter. Both order as unsigned 64-bit integers.
type RowVersion uint64

// Scan reads a rowversion as binary(8) (SQL Server) or INTEGER (SQLite).
func (v *RowVersion) Scan(src any) error {
	switch s := src.(type) {
	case []byte:
		if len(s) != 8 {
			return fmt.Errorf("rowversion of %d bytes", len(s))
		}
		*v = RowVersion(binary.BigEndian.Uint64(s))
	case int64:
		*v = RowVersion(s)
	default:
		return fmt.Errorf("cannot scan %T into RowVersion", src)
	}
	return nil
}

// Value makes RowVersion usable in sqlx struct binds; statements that compare versions use
// Dialect.Version instead, which knows the column's type.
func (v RowVersion) Value() (driver.Value, error) { return int64(v), nil }

// ETag is the strong entity tag of the version: its 16 hex digits in quotes.
func (v RowVersion) ETag() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	return `"` + hex.EncodeToString(b[:]) + `"`
}

// ParseETag reads an entity tag made by ETag. A weak tag (W/…) never matches a strong one,
// so it is refused like any malformed tag.
func ParseETag(tag string) (RowVersion, bool) {
	tag = strings.TrimSpace(tag)
	if len(tag) != 18 || tag[0] != '"' || tag[17] != '"' {
		return 0, false
	}
	n, err := strconv.ParseUint(tag[1:17], 16, 64)
	if err != nil {
		return 0, false
	}
	return RowVersion(n), true
}

// VersionMatcher is a condition on a row's current version, such as an If-Match header:
// stores take one and ask it about the version they read under lock. A nil matcher means
// no condition.
type VersionMatcher interface {
	Matches(current RowVersion) bool
}

// Matches reports whether v is the current version: a RowVersion is the condition "exactly
// this version".
func (v RowVersion) Matches(current RowVersion) bool { return v == current }
