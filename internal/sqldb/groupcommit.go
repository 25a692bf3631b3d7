package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// committer runs SQLite write transactions in groups: one goroutine owns the single writer
// connection, takes every transaction waiting to run (up to maxBatch), and runs them one
// after another inside one database transaction, each in its own savepoint (a group of
// one runs without: its transaction is its own). A function
// that fails rolls back to its savepoint and gets its error; the others commit together,
// and only then does any caller hear of success. The result is the same as running them
// one by one in that order, with one commit (one WAL write, and under synchronous=FULL one
// fsync) for the group instead of one each.
type committer struct {
	db       *DB
	jobs     chan *job
	stop     chan struct{}
	done     chan struct{}
	maxBatch int
	once     sync.Once
}

type job struct {
	ctx   context.Context
	fn    func(*Tx) error
	err   error
	panic any
	done  chan struct{}
}

// ErrClosed: the database was closed.
var ErrClosed = errors.New("database closed")

const maxGroup = 128

func newCommitter(db *DB) *committer {
	c := &committer{db: db, jobs: make(chan *job), stop: make(chan struct{}), done: make(chan struct{}), maxBatch: maxGroup}
	go c.loop()
	return c
}

func (c *committer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

// submit runs fn in the next group and waits for the group's commit.
func (c *committer) submit(ctx context.Context, fn func(*Tx) error) error {
	j := &job{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case c.jobs <- j:
	case <-c.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once taken, the job's outcome is decided by the group's commit: wait for it even if
	// the caller gives up, so that success is never reported for a rolled-back write or
	// the other way round.
	<-j.done
	if j.panic != nil {
		panic(j.panic)
	}
	return j.err
}

func (c *committer) loop() {
	defer close(c.done)
	for {
		var first *job
		select {
		case first = <-c.jobs:
		case <-c.stop:
			return
		}
		batch := []*job{first}
	drain:
		for len(batch) < c.maxBatch {
			select {
			case j := <-c.jobs:
				batch = append(batch, j)
			default:
				break drain
			}
		}
		c.run(batch)
		c.db.observeGroup(len(batch))
		for _, j := range batch {
			close(j.done)
		}
	}
}

func (c *committer) run(batch []*job) {
	ctx := context.Background()
	d := c.db.Dialect
	c.db.wcache.preparePending(ctx)
	sqlTx, err := c.db.w.BeginTxx(ctx, nil)
	if err != nil {
		err = fmt.Errorf("begin transaction: %w", d.MapError(err))
		for _, j := range batch {
			j.err = err
		}
		return
	}
	newTx := func() *Tx {
		return &Tx{Tx: sqlTx, Dialect: d, clock: c.db.clock, cache: c.db.wcache, grouped: true, hook: c.db.statementHook()}
	}
	if len(batch) == 1 {
		// A group of one needs no savepoint: the transaction is the job's alone, so a
		// failure rolls the transaction back instead.
		j := batch[0]
		if err := j.ctx.Err(); err != nil {
			j.err = err
			_ = sqlTx.Rollback()
			return
		}
		j.err, j.panic = runGuarded(j.fn, newTx())
		if j.err != nil || j.panic != nil {
			j.err = d.MapError(j.err)
			_ = sqlTx.Rollback()
			return
		}
		if err := sqlTx.Commit(); err != nil {
			j.err = fmt.Errorf("commit: %w", d.MapError(err))
		}
		return
	}
	var ran []*job
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err // the caller left before its turn: nothing was written
			continue
		}
		if err := c.savepoint(ctx, sqlTx, savepointSQL); err != nil {
			c.abort(sqlTx, batch, fmt.Errorf("savepoint: %w", d.MapError(err)))
			return
		}
		j.err, j.panic = runGuarded(j.fn, newTx())
		if j.err != nil || j.panic != nil {
			j.err = d.MapError(j.err)
			// A failed statement can have ended the whole transaction (an I/O error, say);
			// then the savepoint is gone and the group must fail as one.
			if err := c.savepoint(ctx, sqlTx, rollbackToSQL); err != nil {
				c.abort(sqlTx, batch, fmt.Errorf("roll back to savepoint: %w", d.MapError(err)))
				return
			}
		}
		if err := c.savepoint(ctx, sqlTx, releaseSQL); err != nil {
			c.abort(sqlTx, batch, fmt.Errorf("release savepoint: %w", d.MapError(err)))
			return
		}
		ran = append(ran, j)
	}
	if err := sqlTx.Commit(); err != nil {
		err = fmt.Errorf("commit: %w", d.MapError(err))
		for _, j := range ran {
			if j.err == nil && j.panic == nil {
				j.err = err
			}
		}
	}
}

// The savepoint statements of a group, prepared once through the writer's statement cache
// (parsing them for every job showed in profiles).
const (
	savepointSQL  = "SAVEPOINT job"
	rollbackToSQL = "ROLLBACK TO job"
	releaseSQL    = "RELEASE job"
)

// savepoint runs one of the savepoint statements on the group's transaction.
func (c *committer) savepoint(ctx context.Context, sqlTx *sqlx.Tx, query string) error {
	if s := c.db.wcache.lookup(query); s != nil {
		st := sqlTx.StmtxContext(ctx, s)
		defer st.Close()
		_, err := st.ExecContext(ctx)
		return err
	}
	_, err := sqlTx.ExecContext(ctx, query)
	return err
}

// abort rolls the group back and fails every job that had not failed on its own.
func (c *committer) abort(sqlTx interface{ Rollback() error }, batch []*job, err error) {
	_ = sqlTx.Rollback()
	for _, j := range batch {
		if j.err == nil && j.panic == nil {
			j.err = err
		}
	}
}

func runGuarded(fn func(*Tx) error, tx *Tx) (err error, p any) {
	defer func() {
		if r := recover(); r != nil {
			p = r
		}
	}()
	return fn(tx), nil
}
