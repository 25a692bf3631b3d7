package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/ledger-dev/ledger/internal/sqldb/tdsfake"
)

// openFake opens the service's database on the fake, under a context that bounds the test;
// both end with the test.
func openFake(t *testing.T, f *tdsfake.Server) (context.Context, *DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	db, err := Open(ctx, Config{DSN: f.DSN("")})
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
	f := tdsfake.Start(t)
	ctx, db := openFake(t, f)
	for i := 0; i < 3; i++ {
		if _, err := db.Raw().ExecContext(ctx, fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	log := f.Log()
	if len(log) == 0 || log[0].Text != MSSQLSessionInit || !log[0].Reset {
		t.Fatalf("the first batch of a new connection is not the session init with the reset flag: %+v", log)
	}
	// Every statement runs on a session that the init (sent with the reset flag, so after
	// sp_reset_connection restored the login's defaults) has just set up.
	inits := 0
	for i, b := range log {
		if b.Text == MSSQLSessionInit {
			inits++
			if !b.Reset {
				t.Fatalf("batch %d: the session init went without the reset flag", i)
			}
			continue
		}
		if i == 0 || log[i-1].Text != MSSQLSessionInit || log[i-1].Conn != b.Conn {
			t.Fatalf("batch %d %q did not follow a session init on its connection: %+v", i, b.Text, log)
		}
	}
	if inits != 4 { // the ping and three statements, each on a freshly reset session
		t.Fatalf("%d session inits for 4 uses: %+v", inits, log)
	}
}

func TestMSSQLReadsAnIDInTheRightByteOrder(t *testing.T) {
	t.Parallel()
	want := uuid.MustParse("6f9619ff-8b86-d011-b42d-00c04fc964ff")
	f := tdsfake.Start(t)
	f.Row = wireGUID(want)
	ctx, db := openFake(t, f)
	var got uuid.UUID
	if err := db.Raw().QueryRowContext(ctx, "SELECT Id").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("read %s, want %s", got, want)
	}
	// The same row through a driver left at its default (no conversion) comes back
	// byte-swapped: the failure `guid conversion=false` would bring, and why it is refused.
	cfg, err := mssqlConfig(f.DSN(""))
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
	if _, err := Open(ctx, Config{DSN: f.DSN("&guid+conversion=false")}); err == nil || !strings.Contains(err.Error(), "guid conversion=false") {
		t.Fatalf("Open with guid conversion=false: %v", err)
	}
}

func TestMSSQLDeclaresJSONArgumentsAsNVarCharMax(t *testing.T) {
	t.Parallel()
	f := tdsfake.Start(t)
	ctx, db := openFake(t, f)
	// go-mssqldb declares a plain string as nvarchar(its length), so a statement taking id
	// lists of many lengths would compile and cache a plan per length; Dialect.JSON makes the
	// declaration the same for every length.
	for _, ids := range []string{`["a"]`, `["a","bb","ccc"]`} {
		if _, err := db.Raw().ExecContext(ctx, "SELECT 1 WHERE @p1 IS NOT NULL AND @p2 IS NOT NULL", db.Dialect.JSON(ids), ids); err != nil {
			t.Fatal(err)
		}
	}
	var rpcs []string
	for _, b := range f.Log() {
		if b.Text == "rpc" {
			rpcs = append(rpcs, string(b.Raw))
		}
	}
	if len(rpcs) != 2 {
		t.Fatalf("%d statements with arguments reached the server, want 2", len(rpcs))
	}
	for i, plain := range []string{"@p2 nvarchar(5)", "@p2 nvarchar(16)"} {
		if !strings.Contains(rpcs[i], string(tdsfake.UCS2("@p1 nvarchar(max)"))) {
			t.Errorf("statement %d: the JSON argument is not declared nvarchar(max)", i)
		}
		// The same text as a plain string: declared by its length (what JSON avoids).
		if !strings.Contains(rpcs[i], string(tdsfake.UCS2(plain))) {
			t.Errorf("statement %d: the plain string is not declared %q", i, plain)
		}
	}
}

func TestMSSQLTransactionReadsTheClockWithItsScope(t *testing.T) {
	t.Parallel()
	f := tdsfake.Start(t)
	ctx, db := openFake(t, f)
	start := len(f.Log())
	var now time.Time
	err := db.Write(ctx, TenantScope("tenant-a"), func(tx *Tx) error {
		var err error
		now, err = tx.Now(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !now.Equal(f.Clock) {
		t.Errorf("Now = %v, want the server's %v", now, f.Clock)
	}
	var statements []string
	for _, b := range f.Log()[start:] {
		if b.Text != "transaction" && b.Text != MSSQLSessionInit {
			statements = append(statements, b.Text)
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
	f := tdsfake.Start(t)
	ctx, db := openFake(t, f)
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
func (*countingObserver) GroupRerun()             {}
func (o *countingObserver) ConnectionOpened()     { o.opened.Add(1) }
