package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"modernc.org/sqlite" // the driver the service uses
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// driverSchema is a checkpoint-shaped table: the columns, key and unique index of the
// service's Checkpoints (migrations/sqlite/000006), without the foreign key, which would
// need an attempt row.
const driverSchema = `CREATE TABLE Checkpoints (
    CheckpointId TEXT NOT NULL,
    AttemptId TEXT NOT NULL,
    TenantId TEXT NOT NULL,
    Sequence INTEGER NOT NULL,
    Phase INTEGER NOT NULL,
    AdapterStateRef TEXT NOT NULL,
    AdapterVersion TEXT NOT NULL,
    ContextSnapshotRef TEXT NULL,
    Hash TEXT NOT NULL,
    CreatedAt DATETIME NOT NULL,
    CONSTRAINT PK_Checkpoints PRIMARY KEY (CheckpointId)
);
CREATE UNIQUE INDEX UX_Checkpoints_Attempt_Sequence ON Checkpoints (AttemptId, Sequence);`

const driverInsert = `INSERT INTO Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef,
    AdapterVersion, ContextSnapshotRef, Hash, CreatedAt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8, ?9)`

// driverDSN opens path as the service opens its writer: WAL, the durability setting,
// immediate transactions and the service's busy timeout, so that a connection waiting for
// another's write lock waits as the service would instead of failing as busy.
func driverDSN(path, syncMode string) string {
	return "file:" + path + "?_pragma=busy_timeout(" + strconv.FormatInt(sqldb.DefaultBusyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(" + strings.ToUpper(syncMode) + ")&_txlock=immediate"
}

// driverBaseline inserts checkpoint-shaped rows straight through database/sql and the
// SQLite driver into a fresh file in dir, one row per transaction, from n goroutines, for
// the reference window. Each goroutine has a connection of its own, as n processes or
// handlers opening the file directly would.
func (b *bencher) driverBaseline(ctx context.Context, dir, syncMode string, n int) Result {
	row := Result{Workload: RefDriver, Sync: syncMode, Clients: n}
	path := filepath.Join(dir, fmt.Sprintf("driver-%s-%d.db", syncMode, n))
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(path + suffix)
		}
	}()
	db, err := sql.Open("sqlite", driverDSN(path, syncMode))
	if err != nil {
		row.Status, row.Note = StatusFailed, err.Error()
		return row
	}
	defer db.Close()
	// database/sql's own default (no pool limit): every goroutine has its connection.
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	if _, err := db.ExecContext(ctx, driverSchema); err != nil {
		row.Status, row.Note = StatusFailed, "create table: "+err.Error()
		return row
	}
	// Open the n connections before the window, one after another: each applies its
	// pragmas on open (journal_mode among them), which would otherwise contend with the
	// first inserts.
	conns := make([]*sql.Conn, 0, n)
	for range n {
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			row.Status, row.Note = StatusFailed, "open a connection: "+err.Error()
			return row
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		_ = c.Close() // back to the pool, open
	}
	b.logf("[%s] reference: driver baseline, %d goroutines", syncMode, n)
	rec := NewRecorder()
	end := time.Now().Add(b.cfg.RefDuration)
	rec.CloseAt(end)
	parallel(n, func(i int) {
		attempt := uuid.NewString()
		for seq := int64(1); time.Now().Before(end) && ctx.Err() == nil; seq++ {
			start := time.Now()
			err := insertOne(ctx, db, attempt, i, seq)
			code := ""
			if err != nil {
				code = driverCode(err)
			}
			rec.Record(time.Since(start), code)
		}
	})
	h, errs := rec.Snapshot()
	row.fill(h, errs, b.cfg.RefDuration)
	return row
}

func insertOne(ctx context.Context, db *sql.DB, attempt string, client int, seq int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, driverInsert, uuid.NewString(), attempt, "default", seq, 2,
		fmt.Sprintf("bench://state/%d/%d", client, seq), adapterVersion, fmt.Sprintf("%016x%016x", client, seq),
		time.Now().UTC().Format(sqldb.TimeLayout))
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// httpCeiling has n clients send GET /healthz to t for the reference window: what the
// HTTP stack alone carries on this machine.
func (b *bencher) httpCeiling(ctx context.Context, t *target, n int) Result {
	b.logf("[%s] reference: HTTP ceiling, %d clients", t.sync, n)
	rec := NewRecorder()
	end := time.Now().Add(b.cfg.RefDuration)
	rec.CloseAt(end)
	stop := b.monitor(ctx, t, "http-ceiling", rec)
	parallel(n, func(int) {
		for time.Now().Before(end) && ctx.Err() == nil {
			if a, ok := t.c.timed(ctx, rec, http.MethodGet, "/healthz", "", nil, nil); !ok {
				backoff(ctx, a)
			}
		}
	})
	row := Result{Workload: RefCeiling, Sync: t.sync, Clients: n, RSSMiB: stop()}
	h, errs := rec.Snapshot()
	row.fill(h, errs, b.cfg.RefDuration)
	return row
}

// driverCode names a driver failure by its SQLite primary result code ("sqlite_busy").
func driverCode(err error) string {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY:
			return "sqlite_busy"
		case sqlite3.SQLITE_LOCKED:
			return "sqlite_locked"
		case sqlite3.SQLITE_CONSTRAINT:
			return "sqlite_constraint"
		}
		return fmt.Sprintf("sqlite_%d", se.Code()&0xff)
	}
	return "driver_error"
}
