// Package ids makes the service's UUIDs and hands nullable ones to the API. A row's id is
// laid out for the index order of the database it goes to, so new rows append to their
// key indexes instead of landing on random pages: sqldb.Dialect.NewID picks the layout.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// New returns a random UUID whose last six bytes are the current Unix time in
// milliseconds (the "COMB" layout). SQL Server orders uniqueidentifier by those bytes
// first, so new ids append to a clustered index instead of splitting its pages.
func New() uuid.UUID { return at(time.Now()) }

// TimeFirst returns a UUIDv7 (RFC 9562): the Unix time in milliseconds in its first six
// bytes, then a counter and random bits, so ids made later compare greater byte by byte and
// as text, which is the order SQLite's indexes keep.
func TimeFirst() uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil {
		panic("ids: crypto/rand failed: " + err.Error())
	}
	return id
}

// Ptr is a nullable id as the API sends it: nil when it is not valid.
func Ptr(id uuid.NullUUID) *uuid.UUID {
	if !id.Valid {
		return nil
	}
	return &id.UUID
}

func at(t time.Time) uuid.UUID {
	var u uuid.UUID
	if _, err := rand.Read(u[:10]); err != nil {
		panic("ids: crypto/rand failed: " + err.Error())
	}
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[10:], ms[2:])
	u[6] = (u[6] & 0x0f) | 0x40 // version 4: random apart from the timestamp node
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u
}
