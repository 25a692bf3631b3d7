// Package tdsfake is a minimal TDS server on the loopback, so go-mssqldb runs against
// something in tests: it answers PRELOGIN (no encryption), LOGIN7 (a LOGINACK),
// transaction requests, SQL batches (DONE, or one row for a few known queries) and RPCs
// (sp_executesql: DONE, or the clock row for a statement that reads SYSUTCDATETIME()), and
// records every message with its reset flag. It is just enough of MS-TDS to prove, without
// a SQL Server, what the driver sends: session set-up, id byte order, and each statement's
// parameter declarations (the plan-cache key).
package tdsfake

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// Server: a minimal TDS server on the loopback, so the real driver runs against something: it
// answers PRELOGIN (no encryption), LOGIN7 (a LOGINACK), and SQL batches (DONE, or one
// uniqueidentifier row for "SELECT Id"), and records every batch with its reset flag. It is
// just enough of MS-TDS to prove, without a SQL Server, what the driver sends when a
// connection opens or is reused, and how it reads an id.

const (
	tdsSQLBatch  = 0x01
	tdsRPC       = 0x03
	tdsTransMgr  = 0x0E
	tdsReply     = 0x04
	tdsLogin7    = 0x10
	tdsPrelogin  = 0x12
	tdsStatusEOM = 0x01
	tdsReset     = 0x08
)

type Batch struct {
	Conn  int
	Text  string
	Reset bool
	Raw   []byte // an RPC's payload (sp_executesql: the statement, the parameters' declaration, the values)
}

type Server struct {
	t      testing.TB
	ln     net.Listener
	Row    [16]byte  // the uniqueidentifier "SELECT Id" returns, as SQL Server sends it
	Clock  time.Time // the time SYSUTCDATETIME() answers
	mu     sync.Mutex
	conns  int
	batchs []Batch
	ended  map[int]chan struct{} // closed when the client closes connection n
}

func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &Server{t: t, ln: ln, ended: map[int]chan struct{}{}, Clock: time.Date(2026, 3, 4, 5, 6, 7, 8e6, time.UTC)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns++
			id := f.conns
			f.ended[id] = make(chan struct{})
			f.mu.Unlock()
			go f.serve(c, id)
		}
	}()
	return f
}

func (f *Server) DSN(extra string) string {
	return fmt.Sprintf("sqlserver://u:p@%s?database=ledger&encrypt=disable&dial+timeout=5%s", f.ln.Addr(), extra)
}

func (f *Server) Log() []Batch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Batch(nil), f.batchs...)
}

func readTDS(r io.Reader) (typ, status byte, payload []byte, err error) {
	for {
		h := make([]byte, 8)
		if _, err = io.ReadFull(r, h); err != nil {
			return
		}
		body := make([]byte, int(binary.BigEndian.Uint16(h[2:4]))-8)
		if _, err = io.ReadFull(r, body); err != nil {
			return
		}
		typ, status = h[0], status|h[1]
		payload = append(payload, body...)
		if h[1]&tdsStatusEOM != 0 {
			return
		}
	}
}

func writeTDS(w io.Writer, typ byte, payload []byte) error {
	h := []byte{typ, tdsStatusEOM, 0, 0, 0, 0, 1, 0}
	binary.BigEndian.PutUint16(h[2:], uint16(len(payload)+8))
	_, err := w.Write(append(h, payload...))
	return err
}

func UCS2(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}

func done(status, curCmd uint16, rows uint64) []byte {
	b := []byte{0xFD}
	b = binary.LittleEndian.AppendUint16(b, status)
	b = binary.LittleEndian.AppendUint16(b, curCmd)
	return binary.LittleEndian.AppendUint64(b, rows)
}

// Ended returns the channel closed when connection id ends.
func (f *Server) Ended(id int) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended[id]
}

// nvarcharRow is a one-column, one-row result of an nvarchar value.
func nvarcharRow(v string) []byte {
	// COLMETADATA: NVARCHAR(128), a collation, no column name; then the row and DONE.
	b := []byte{0x81, 1, 0, 0, 0, 0, 0, 0x01, 0x00, 0xE7, 0x00, 0x01, 0x09, 0x04, 0xD0, 0x00, 0x34, 0}
	val := UCS2(v)
	b = append(b, 0xD1)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(val)))
	b = append(b, val...)
	return append(b, done(0x10, 0xC1, 1)...)
}

// clockRow is a one-row result of one datetimeoffset(3) column named Now: t in UTC.
func clockRow(t time.Time) []byte {
	b := []byte{0x81, 1, 0, 0, 0, 0, 0, 0x01, 0x00, 0x2B, 3, 3}
	b = append(b, UCS2("Now")...)
	t = t.UTC()
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	days := int((midnight.Unix() - time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()) / 86400)
	b = append(b, 0xD1, 9)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Sub(midnight).Milliseconds()))
	b = append(b, byte(days), byte(days>>8), byte(days>>16), 0, 0)
	return append(b, done(0x10, 0xC1, 1)...)
}

// intRow is a one-column, one-row result of an int value.
func intRow(v int32) []byte {
	b := []byte{0x81, 1, 0, 0, 0, 0, 0, 0x01, 0x00, 0x26, 4, 0, 0xD1, 4}
	b = binary.LittleEndian.AppendUint32(b, uint32(v))
	return append(b, done(0x10, 0xC1, 1)...)
}

func (f *Server) serve(c net.Conn, id int) {
	defer close(f.Ended(id))
	defer c.Close()
	// PRELOGIN: VERSION and ENCRYPTION = not supported (2), then the terminator.
	if typ, _, _, err := readTDS(c); err != nil || typ != tdsPrelogin {
		return
	}
	pre := []byte{0x00, 0, 11, 0, 6, 0x01, 0, 17, 0, 1, 0xFF, 16, 0, 0x0F, 0xA0, 0, 0, 2}
	if writeTDS(c, tdsReply, pre) != nil {
		return
	}
	if typ, _, _, err := readTDS(c); err != nil || typ != tdsLogin7 {
		return
	}
	prog := UCS2("fake")
	ack := []byte{0xAD, 0, 0, 1, 0x74, 0, 0, 0x04, byte(len(prog) / 2)}
	ack = append(ack, prog...)
	ack = append(ack, 16, 0, 0x0F, 0xA0)
	binary.LittleEndian.PutUint16(ack[1:], uint16(len(ack)-3))
	if writeTDS(c, tdsReply, append(ack, done(0, 0, 0)...)) != nil {
		return
	}
	for {
		typ, status, payload, err := readTDS(c)
		if err != nil {
			return
		}
		if typ == tdsTransMgr {
			// BEGIN (5), COMMIT (7) or ROLLBACK (8) of a transaction, after ALL_HEADERS: answered
			// with the ENVCHANGE the driver tracks its transaction by (8 begin, 9 commit, 10
			// rollback; descriptor 1), then DONE.
			f.mu.Lock()
			f.batchs = append(f.batchs, Batch{Conn: id, Text: "transaction", Reset: status&tdsReset != 0})
			f.mu.Unlock()
			req := binary.LittleEndian.Uint16(payload[binary.LittleEndian.Uint32(payload):])
			desc := []byte{8, 1, 0, 0, 0, 0, 0, 0, 0}
			env := []byte{0xE3, 11, 0, 8}
			env = append(append(env, desc...), 0)
			if req != 5 {
				env = []byte{0xE3, 11, 0, 9, 0}
				if req == 8 {
					env[3] = 10
				}
				env = append(env, desc...)
			}
			if writeTDS(c, tdsReply, append(env, done(0, 0, 0)...)) != nil {
				return
			}
			continue
		}
		if typ == tdsRPC {
			// A statement with arguments comes as an RPC (sp_executesql), and so do
			// golang-migrate's lock calls: sp_getapplock answers the lock's status (0:
			// granted), anything else nothing.
			q := "rpc"
			if strings.Contains(string(payload), string(UCS2("sp_getapplock"))) {
				q = "rpc sp_getapplock"
			}
			f.mu.Lock()
			f.batchs = append(f.batchs, Batch{Conn: id, Text: q, Reset: status&tdsReset != 0, Raw: payload})
			f.mu.Unlock()
			reply := done(0, 0, 0)
			switch {
			case q == "rpc sp_getapplock":
				reply = intRow(0)
			case strings.Contains(string(payload), string(UCS2("SYSUTCDATETIME()"))):
				reply = clockRow(f.Clock)
			}
			if writeTDS(c, tdsReply, reply) != nil {
				return
			}
			continue
		}
		if typ != tdsSQLBatch || len(payload) < 4 {
			f.t.Errorf("connection %d: unexpected TDS message type %#x", id, typ)
			return
		}
		skip := binary.LittleEndian.Uint32(payload) // ALL_HEADERS
		text := payload[skip:]
		units := make([]uint16, len(text)/2)
		for i := range units {
			units[i] = binary.LittleEndian.Uint16(text[2*i:])
		}
		q := string(utf16.Decode(units))
		f.mu.Lock()
		f.batchs = append(f.batchs, Batch{Conn: id, Text: q, Reset: status&tdsReset != 0})
		f.mu.Unlock()
		var reply []byte
		switch q {
		case "SELECT DB_NAME()":
			reply = nvarcharRow("ledger")
		case "SELECT SCHEMA_NAME()":
			reply = nvarcharRow("dbo")
		case "SELECT Id":
			// COLMETADATA: one nullable uniqueidentifier column named Id, then its row.
			reply = []byte{0x81, 1, 0, 0, 0, 0, 0, 0x01, 0x00, 0x24, 16, 2}
			reply = append(reply, UCS2("Id")...)
			reply = append(reply, 0xD1, 16)
			reply = append(reply, f.Row[:]...)
			reply = append(reply, done(0x10, 0xC1, 1)...)
		default:
			reply = done(0, 0, 0)
		}
		if writeTDS(c, tdsReply, reply) != nil {
			return
		}
	}
}

// Declarations returns the parameter declaration list of an RPC (sp_executesql's @params,
// e.g. "@p1 nvarchar(36),@p2 int"), or "" for any other message.
func (b Batch) Declarations() string {
	return declList.FindString(b.Statement())
}

// Statement returns the text an RPC carries (statement, declarations, string values): the
// payload read as UTF-16 at both byte alignments, since the binary fields before each text
// may leave it at an odd offset. Good for strings.Contains, not for parsing.
func (b Batch) Statement() string {
	var parts []string
	for off := 0; off < 2 && off < len(b.Raw); off++ {
		raw := b.Raw[off:]
		units := make([]uint16, len(raw)/2)
		for i := range units {
			units[i] = binary.LittleEndian.Uint16(raw[2*i:])
		}
		parts = append(parts, string(utf16.Decode(units)))
	}
	return strings.Join(parts, "\n")
}

// DeclarationsOf returns the declaration list of every RPC so far whose text contains
// fragment, in order.
func (f *Server) DeclarationsOf(fragment string) []string {
	var out []string
	for _, b := range f.Log() {
		if b.Raw != nil && strings.Contains(b.Statement(), fragment) {
			out = append(out, b.Declarations())
		}
	}
	return out
}

var declList = regexp.MustCompile(`@p1 [a-z]+(\([0-9a-z]+\))?(,@p[0-9]+ [a-z]+(\([0-9a-z]+\))?)*`)
