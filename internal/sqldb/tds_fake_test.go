package sqldb

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/google/uuid"
	mssql "github.com/microsoft/go-mssqldb"
)

// A minimal TDS server on the loopback, so the real driver runs against something: it
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

type tdsBatch struct {
	conn  int
	text  string
	reset bool
	raw   []byte // an RPC's payload (sp_executesql: the statement, the parameters' declaration, the values)
}

type fakeTDS struct {
	t      *testing.T
	ln     net.Listener
	row    [16]byte  // the uniqueidentifier "SELECT Id" returns, as SQL Server sends it
	clock  time.Time // the time SYSUTCDATETIME() answers
	mu     sync.Mutex
	conns  int
	batchs []tdsBatch
	ended  map[int]chan struct{} // closed when the client closes connection n
}

func startFakeTDS(t *testing.T) *fakeTDS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTDS{t: t, ln: ln, ended: map[int]chan struct{}{}, clock: time.Date(2026, 3, 4, 5, 6, 7, 8e6, time.UTC)}
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

func (f *fakeTDS) dsn(extra string) string {
	return fmt.Sprintf("sqlserver://u:p@%s?database=ledger&encrypt=disable&dial+timeout=5%s", f.ln.Addr(), extra)
}

func (f *fakeTDS) log() []tdsBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tdsBatch(nil), f.batchs...)
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

func ucs2(s string) []byte {
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

// endedChan returns the channel closed when connection id ends.
func (f *fakeTDS) endedChan(id int) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended[id]
}

// nvarcharRow is a one-column, one-row result of an nvarchar value.
func nvarcharRow(v string) []byte {
	// COLMETADATA: NVARCHAR(128), a collation, no column name; then the row and DONE.
	b := []byte{0x81, 1, 0, 0, 0, 0, 0, 0x01, 0x00, 0xE7, 0x00, 0x01, 0x09, 0x04, 0xD0, 0x00, 0x34, 0}
	val := ucs2(v)
	b = append(b, 0xD1)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(val)))
	b = append(b, val...)
	return append(b, done(0x10, 0xC1, 1)...)
}

// clockRow is a one-row result of one datetimeoffset(3) column named Now: t in UTC.
func clockRow(t time.Time) []byte {
	b := []byte{0x81, 1, 0, 0, 0, 0, 0, 0x01, 0x00, 0x2B, 3, 3}
	b = append(b, ucs2("Now")...)
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

func (f *fakeTDS) serve(c net.Conn, id int) {
	defer close(f.endedChan(id))
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
	prog := ucs2("fake")
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
			f.batchs = append(f.batchs, tdsBatch{conn: id, text: "transaction", reset: status&tdsReset != 0})
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
			if strings.Contains(string(payload), string(ucs2("sp_getapplock"))) {
				q = "rpc sp_getapplock"
			}
			f.mu.Lock()
			f.batchs = append(f.batchs, tdsBatch{conn: id, text: q, reset: status&tdsReset != 0, raw: payload})
			f.mu.Unlock()
			reply := done(0, 0, 0)
			switch {
			case q == "rpc sp_getapplock":
				reply = intRow(0)
			case strings.Contains(string(payload), string(ucs2("SYSUTCDATETIME()"))):
				reply = clockRow(f.clock)
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
		f.batchs = append(f.batchs, tdsBatch{conn: id, text: q, reset: status&tdsReset != 0})
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
			reply = append(reply, ucs2("Id")...)
			reply = append(reply, 0xD1, 16)
			reply = append(reply, f.row[:]...)
			reply = append(reply, done(0x10, 0xC1, 1)...)
		default:
			reply = done(0, 0, 0)
		}
		if writeTDS(c, tdsReply, reply) != nil {
			return
		}
	}
}

// open opens the service's database on the fake, under a context that bounds the test;
// both end with the test.
func (f *fakeTDS) open(t *testing.T) (context.Context, *DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	db, err := Open(ctx, Config{DSN: f.dsn("")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return ctx, db
}

// wireGUID is how SQL Server sends a uniqueidentifier: the first three groups little-endian.
func wireGUID(u uuid.UUID) [16]byte {
	var b [16]byte
	copy(b[:], u[:])
	b[0], b[1], b[2], b[3] = u[3], u[2], u[1], u[0]
	b[4], b[5] = u[5], u[4]
	b[6], b[7] = u[7], u[6]
	return b
}

func TestMSSQLSessionInitRunsOnEveryConnectionAndReuse(t *testing.T) {
	t.Parallel()
	f := startFakeTDS(t)
	ctx, db := f.open(t)
	for i := 0; i < 3; i++ {
		if _, err := db.Raw().ExecContext(ctx, fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	log := f.log()
	if len(log) == 0 || log[0].text != mssqlSessionInit || !log[0].reset {
		t.Fatalf("the first batch of a new connection is not the session init with the reset flag: %+v", log)
	}
	// Every statement runs on a session that the init (sent with the reset flag, so after
	// sp_reset_connection restored the login's defaults) has just set up.
	inits := 0
	for i, b := range log {
		if b.text == mssqlSessionInit {
			inits++
			if !b.reset {
				t.Fatalf("batch %d: the session init went without the reset flag", i)
			}
			continue
		}
		if i == 0 || log[i-1].text != mssqlSessionInit || log[i-1].conn != b.conn {
			t.Fatalf("batch %d %q did not follow a session init on its connection: %+v", i, b.text, log)
		}
	}
	if inits != 4 { // the ping and three statements, each on a freshly reset session
		t.Fatalf("%d session inits for 4 uses: %+v", inits, log)
	}
}

func TestMSSQLReadsAnIDInTheRightByteOrder(t *testing.T) {
	t.Parallel()
	want := uuid.MustParse("6f9619ff-8b86-d011-b42d-00c04fc964ff")
	f := startFakeTDS(t)
	f.row = wireGUID(want)
	ctx, db := f.open(t)
	var got uuid.UUID
	if err := db.Raw().QueryRowContext(ctx, "SELECT Id").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("read %s, want %s", got, want)
	}
	// The same row through a driver left at its default (no conversion) comes back
	// byte-swapped: the failure `guid conversion=false` would bring, and why it is refused.
	cfg, err := mssqlConfig(f.dsn(""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Encoding.GuidConversion = false
	raw := sql.OpenDB(mssql.NewConnectorConfig(cfg))
	defer raw.Close()
	var swapped uuid.UUID
	if err := raw.QueryRowContext(ctx, "SELECT Id").Scan(&swapped); err != nil {
		t.Fatal(err)
	}
	if swapped == want || !strings.HasPrefix(swapped.String(), "ff19966f-868b-11d0") {
		t.Fatalf("without the conversion the id read %s", swapped)
	}
	if _, err := Open(ctx, Config{DSN: f.dsn("&guid+conversion=false")}); err == nil || !strings.Contains(err.Error(), "guid conversion=false") {
		t.Fatalf("Open with guid conversion=false: %v", err)
	}
}

func TestMSSQLMigratorEndsItsOwnSession(t *testing.T) {
	t.Parallel()
	f := startFakeTDS(t)
	ctx, db := f.open(t)
	service := f.log()[0].conn
	mg, err := db.NewMigrator()
	if err != nil {
		t.Fatal(err)
	}
	var migration int
	for _, b := range f.log() {
		if b.text == "SELECT DB_NAME()" {
			migration = b.conn
		}
	}
	if migration == 0 || migration == service {
		t.Fatalf("golang-migrate ran on connection %d, the service's is %d: %+v", migration, service, f.log())
	}
	for _, b := range f.log() {
		if b.conn == migration && b.text == mssqlSessionInit && !b.reset {
			t.Fatal("the migration session was not set up by the session init")
		}
	}
	select {
	case <-f.endedChan(migration):
		t.Fatal("the migration session ended before the migrator closed")
	default:
	}
	mg.Close()
	select {
	case <-f.endedChan(migration):
	case <-ctx.Done():
		t.Fatal("closing the migrator left its session open")
	}
	select {
	case <-f.endedChan(service):
		t.Fatal("closing the migrator closed the service's connection")
	default:
	}
	if _, err := db.Raw().ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatalf("the service's pool after the migrator closed: %v", err)
	}
}

func TestMSSQLDeclaresJSONArgumentsAsNVarCharMax(t *testing.T) {
	t.Parallel()
	f := startFakeTDS(t)
	ctx, db := f.open(t)
	// go-mssqldb declares a plain string as nvarchar(its length), so a statement taking id
	// lists of many lengths would compile and cache a plan per length; Dialect.JSON makes the
	// declaration the same for every length.
	for _, ids := range []string{`["a"]`, `["a","bb","ccc"]`} {
		if _, err := db.Raw().ExecContext(ctx, "SELECT 1 WHERE @p1 IS NOT NULL AND @p2 IS NOT NULL", db.Dialect.JSON(ids), ids); err != nil {
			t.Fatal(err)
		}
	}
	var rpcs []string
	for _, b := range f.log() {
		if b.text == "rpc" {
			rpcs = append(rpcs, string(b.raw))
		}
	}
	if len(rpcs) != 2 {
		t.Fatalf("%d statements with arguments reached the server, want 2", len(rpcs))
	}
	for i, plain := range []string{"@p2 nvarchar(5)", "@p2 nvarchar(16)"} {
		if !strings.Contains(rpcs[i], string(ucs2("@p1 nvarchar(max)"))) {
			t.Errorf("statement %d: the JSON argument is not declared nvarchar(max)", i)
		}
		// The same text as a plain string: declared by its length (what JSON avoids).
		if !strings.Contains(rpcs[i], string(ucs2(plain))) {
			t.Errorf("statement %d: the plain string is not declared %q", i, plain)
		}
	}
}

func TestMSSQLMigrationTableIsDboWhateverTheDefaultSchema(t *testing.T) {
	t.Parallel()
	f := startFakeTDS(t)
	ctx, db := f.open(t)
	mg, err := db.NewMigrator()
	if err != nil {
		t.Fatal(err)
	}
	mg.Close()
	if _, err := db.SchemaState(ctx); err != nil {
		t.Fatal(err)
	}
	var created, read bool
	for _, b := range f.log() {
		switch {
		case b.text == "SELECT SCHEMA_NAME()":
			t.Error("golang-migrate asked for the login's default schema: its table would follow it")
		case strings.Contains(b.text, "[dbo].[schema_migrations]"):
			created = true
		case b.text == "SELECT version, dirty FROM "+mssqlMigrationsTable:
			read = true
		}
	}
	if !created || !read {
		t.Errorf("golang-migrate's table in dbo: created %v, read by SchemaState %v; log %+v", created, read, f.log())
	}
}

func TestMSSQLTransactionReadsTheClockWithItsScope(t *testing.T) {
	t.Parallel()
	f := startFakeTDS(t)
	ctx, db := f.open(t)
	start := len(f.log())
	var now time.Time
	err := db.Write(ctx, TenantScope("tenant-a"), func(tx *Tx) error {
		var err error
		now, err = tx.Now(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !now.Equal(f.clock) {
		t.Errorf("Now = %v, want the server's %v", now, f.clock)
	}
	var statements []string
	for _, b := range f.log()[start:] {
		if b.text != "transaction" && b.text != mssqlSessionInit {
			statements = append(statements, b.text)
		}
	}
	// One round trip carries the scope and the clock: no clock statement of its own.
	if len(statements) != 1 {
		t.Errorf("a transaction that reads the clock sent %d statements, want 1 (scope and clock): %q", len(statements), statements)
	}
}

// TestMSSQLPoolCountsNewConnections: each connection the service's pool opens (a login)
// reaches the observer, so a pool that keeps reconnecting shows in the metrics.
func TestMSSQLPoolCountsNewConnections(t *testing.T) {
	t.Parallel()
	f := startFakeTDS(t)
	ctx, db := f.open(t)
	var o countingObserver
	db.SetObserver(&o)
	c1, err := db.Raw().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := db.Raw().Conn(ctx) // the first is busy: the pool must log in again
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := o.opened.Load(); got < 1 {
		t.Errorf("observer heard %d new connections, want at least 1", got)
	}
}

type countingObserver struct{ opened atomic.Int64 }

func (*countingObserver) WriteDone(time.Duration) {}
func (*countingObserver) GroupCommitted(int)      {}
func (o *countingObserver) ConnectionOpened()     { o.opened.Add(1) }
