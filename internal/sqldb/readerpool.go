package sqldb

import (
	"context"
	"fmt"
	"sync"
)

// maxReaders is how many readers SQLite's Reads run on at once, as the reader pool had.
const maxReaders = 4

// readerPool is SQLite's readers: up to max own connections (ownconn.go), each owned by
// one Read at a time, opened when a Read finds none idle and kept while they are usable.
// Each keeps its statements prepared, so a read after the first of its text parses
// nothing, not even its BEGIN and COMMIT; through database/sql a point read cost about
// 137k instructions, most of it the driver's and database/sql's work around the statement
// (docs/perf/issue-35.md, "The readers' own connections").
type readerPool struct {
	open func() (*ownConn, error)
	// idle holds the connections no Read owns; slots holds a token per connection open or
	// being opened, so that at most cap(slots) exist.
	idle  chan *ownConn
	slots chan struct{}
	mu    sync.Mutex
	// closed: Close has run; a connection given back is closed, not kept.
	closed bool
}

func newReaderPool(max int, open func() (*ownConn, error)) *readerPool {
	return &readerPool{open: open, idle: make(chan *ownConn, max), slots: make(chan struct{}, max)}
}

// get takes an idle connection, or opens one while fewer than max exist, or waits for one
// to be given back until ctx ends.
func (p *readerPool) get(ctx context.Context) (*ownConn, error) {
	select {
	case c := <-p.idle:
		return c, nil
	default:
	}
	select {
	case c := <-p.idle:
		return c, nil
	case p.slots <- struct{}{}:
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			<-p.slots
			return nil, ErrClosed
		}
		c, err := p.open()
		if err != nil {
			<-p.slots
			return nil, fmt.Errorf("open a reader: %w", err)
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put gives c back: kept for the next Read, or closed when it was found unusable or the
// pool is closed.
func (p *readerPool) put(c *ownConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.bad || p.closed {
		c.close()
		<-p.slots
		return
	}
	p.idle <- c // never blocks: at most cap(idle) connections exist
}

// close closes the idle connections; each owned one is closed when it is given back.
func (p *readerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for {
		select {
		case c := <-p.idle:
			c.close()
			<-p.slots
		default:
			return
		}
	}
}

// readOwn is one read transaction on a reader of the pool.
func (db *DB) readOwn(ctx context.Context, fn func(*Tx) error) (err error) {
	c, err := db.readers.get(ctx)
	if err != nil {
		return err
	}
	defer db.readers.put(c)
	tx := &Tx{wc: c, Dialect: db.Dialect, clock: db.clock, plans: &db.plans, hook: db.statementHook()}
	if err := c.begin(ctx); err != nil {
		c.noteBad(err)
		return fmt.Errorf("begin transaction: %w", db.Dialect.MapError(err))
	}
	defer func() {
		if p := recover(); p != nil {
			c.rollback(context.WithoutCancel(ctx))
			panic(p)
		}
		if err != nil {
			c.rollback(context.WithoutCancel(ctx))
		}
	}()
	// SQLite has no scope to set (its statements name their tenant): no SetScope.
	if err = fn(tx); err != nil {
		// Tx's statements return mapped errors; this maps what fn got from elsewhere.
		return db.Dialect.MapError(err)
	}
	if err = c.commit(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("commit: %w", db.Dialect.MapError(err))
	}
	return nil
}
