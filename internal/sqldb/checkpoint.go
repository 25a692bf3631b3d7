package sqldb

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// SQLite in WAL mode appends every commit to the write-ahead log and copies the log back
// into the database file at a checkpoint, which ends with a sync of the log and of the file.
// By default the connection that commits runs the checkpoint itself once the log reaches
// 1,000 pages: here that is the group commit's one writer, and every write of every tenant
// waited for those syncs (a fifth of the writer's time under load, most of it in fsync).
// So the writer's own checkpoint (wal_autocheckpoint) only runs past walRestartPages, where
// it is the way the log starts over from its beginning (SQLite restarts it only for a writer
// that begins after a checkpoint left nothing behind, which a background checkpoint racing
// the writer rarely does); and a checkpointer copies the log in the background on a
// connection of its own (a PASSIVE checkpoint: it takes no lock a writer or reader waits
// for), at most every checkpointEvery while commits come in. When the writer's turn comes,
// the background has copied all but the last moments of the log, so it is short.
const (
	walRestartPages = 8192
	// walSizeLimit is what the log file is cut back to when it starts over (SQLite leaves
	// it at its largest otherwise): a log that grew past it while readers kept it from
	// starting over, under a long read or steady load, gives the space back.
	walSizeLimit    = 64 << 20
	checkpointEvery = 100 * time.Millisecond
)

// checkpointer runs background checkpoints of one SQLite database.
type checkpointer struct {
	conn *sqlx.DB
	log  *slog.Logger
	kick chan struct{} // one token: a commit happened since the last checkpoint began
	stop chan struct{}
	done chan struct{}
	once sync.Once
	// ran, when set (tests), hears each checkpoint's log size and pages copied, in pages.
	ran func(logPages, copied int)
}

func newCheckpointer(conn *sqlx.DB, log *slog.Logger) *checkpointer {
	c := &checkpointer{conn: conn, log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// committed tells the checkpointer that the log grew; it never blocks.
func (c *checkpointer) committed() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		c.checkpoint()
		// Commits during the pause are copied by the next checkpoint, all at once: a page
		// written many times is copied once.
		select {
		case <-time.After(checkpointEvery):
		case <-c.stop:
			return
		}
	}
}

// checkpoint copies what it can of the log into the database file. A failure is logged
// only: the writer's own checkpoint still bounds the log.
func (c *checkpointer) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var busy, pages, copied int
	if err := c.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &pages, &copied); err != nil {
		c.log.Warn("background checkpoint failed", "err", err)
		return
	}
	if c.ran != nil {
		c.ran(pages, copied)
	}
}

func (c *checkpointer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	_ = c.conn.Close()
}
