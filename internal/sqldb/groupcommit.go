package sqldb

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
)

// committer runs SQLite write transactions in groups: one goroutine owns the single writer
// connection, takes the transactions waiting to run (up to maxGroup), and runs them one
// after another inside one database transaction, each in its own savepoint (a group of
// one runs without: its transaction is its own). A function
// that fails rolls back to its savepoint and gets its error; the others commit together,
// and only then does any caller hear of success. The result is the same as running them
// one by one in that order, with one commit (one WAL write, and under synchronous=FULL one
// fsync) for the group instead of one each.
//
// The writer is the embedded database's one bottleneck, so it is shared between tenants
// here, where the work is: waiting transactions queue per tenant, and a group takes them in
// turns, one transaction of each waiting tenant at a time. A tenant alone gets groups of up
// to maxGroup; while several tenants wait, each puts at most sharedTurns transactions in a
// group, so a flood of one tenant's writes makes the groups neither slower nor later for
// the others: another tenant's transaction goes into the next group, and that group holds at
// most sharedTurns of the flood's.
type committer struct {
	db   *DB
	wake chan struct{} // one token: jobs are waiting, or stop was asked
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu     sync.Mutex
	queues map[string][]*job // waiting jobs per tenant, in arrival order
	turn   []string          // tenants with waiting jobs, in the order they are served
	closed bool
	broken error // set when the writer gave up (see panicked); every submit fails with it

	// begin starts a group's transaction on the writer's connection, taking the connection
	// first if the committer holds none (tests inject faults).
	begin func(context.Context) (*ownConn, error)
	// wc is the writer's connection (ownconn.go), owned by the loop's goroutine; nil
	// until the first group, and again after the connection went bad.
	wc *ownConn
	// panics counts the groups in a row that panicked outside their jobs.
	panics int
	// fatal is closed when the writer gave up.
	fatal chan struct{}
}

// maxGroupPanics is how many groups in a row may panic outside their jobs before the writer
// gives up: a panic in a group is failed and forgotten, but a writer that panics every time
// cannot be trusted with the next write.
const maxGroupPanics = 3

// ErrWriterBroken says the embedded database's writer gave up after panicking group after group;
// readiness fails and the process must restart.
// It is an ErrUnavailable (503).
var ErrWriterBroken = fmt.Errorf("%w: the database writer stopped after repeated internal errors", ErrUnavailable)

// errGroupPanic fails the jobs of a group that panicked outside them (a 500).
var errGroupPanic = errors.New("the write group failed with an internal error")

type job struct {
	ctx    context.Context
	tenant string
	fn     func(*Tx) error
	err    error
	panic  any
	taken  bool // under committer.mu: the job is in a group and will run (or fail) there
	done   chan struct{}
}

// ErrClosed says the database was closed.
var ErrClosed = errors.New("database closed")

const (
	// maxGroup bounds a group: its savepoints and its memory.
	maxGroup = 128
	// sharedTurns is how many transactions one tenant may put in a group while other tenants
	// wait: large enough that a busy tenant's writes still share commits, small enough that a
	// group of many tenants stays short (a few milliseconds of statements).
	sharedTurns = 8
)

func newCommitter(db *DB) *committer {
	c := &committer{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		queues: map[string][]*job{}, fatal: make(chan struct{})}
	c.begin = c.beginGroup
	go c.loop()
	return c
}

func (c *committer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	if c.wc != nil {
		c.wc.close()
		c.wc = nil
	}
}

// beginGroup takes the writer's connection if the committer holds none, and begins a
// transaction on it. A connection that failed as unusable is given up, so the next group
// takes a new one.
func (c *committer) beginGroup(ctx context.Context) (*ownConn, error) {
	if c.wc != nil && c.wc.bad {
		// A statement of an earlier group found the connection bad.
		c.wc.close()
		c.wc = nil
	}
	if c.wc == nil {
		wc, err := openWriterConn(c.db)
		if err != nil {
			return nil, err
		}
		c.wc = wc
	}
	if err := c.wc.begin(ctx); err != nil {
		if !usable(err) {
			c.wc.bad = true
			c.wc.close()
			c.wc = nil
		}
		return nil, err
	}
	return c.wc, nil
}

// submit runs fn in a coming group, in tenant's turn (tenant is "" for maintenance), and
// waits for the group's commit.
func (c *committer) submit(ctx context.Context, tenant string, fn func(*Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &job{ctx: ctx, tenant: tenant, fn: fn, done: make(chan struct{})}
	c.mu.Lock()
	if c.broken != nil {
		c.mu.Unlock()
		return c.broken
	}
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if len(c.queues[tenant]) == 0 {
		c.turn = append(c.turn, tenant)
	}
	c.queues[tenant] = append(c.queues[tenant], j)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // a token is there already
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		c.mu.Lock()
		if !j.taken {
			// Not in a group yet: it never will be, and nothing was written.
			c.remove(j)
			c.mu.Unlock()
			return ctx.Err()
		}
		c.mu.Unlock()
		// Once taken, the job's outcome is decided by the group's commit: wait for it even
		// if the caller gives up, so that success is never reported for a rolled-back write
		// or the other way round.
		<-j.done
	}
	if j.panic != nil {
		panic(j.panic)
	}
	c.db.noteWrite(j.err)
	return j.err
}

// remove takes a job that was never taken out of its tenant's queue. c.mu is held.
func (c *committer) remove(j *job) {
	q := c.queues[j.tenant]
	for i, x := range q {
		if x == j {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		c.queues[j.tenant] = q
		return
	}
	delete(c.queues, j.tenant)
	c.turn = slices.DeleteFunc(c.turn, func(t string) bool { return t == j.tenant })
}

// take forms the next group: the waiting tenants' jobs in turns, one of each at a time, at
// most sharedTurns of any one tenant while others wait, and maxGroup in all. Tenants the
// group had no room for (more than maxGroup waiting) go first in the next one; the tenants
// served follow in their order, the first of them moved to their end, so no tenant waits
// more than one group for its turn and none is always first.
func (c *committer) take() []*job {
	c.mu.Lock()
	defer c.mu.Unlock()
	perTenant := maxGroup
	if len(c.turn) > 1 {
		perTenant = sharedTurns
	}
	var batch []*job
	for round := 0; round < perTenant && len(batch) < maxGroup; round++ {
		took := false
		for _, t := range c.turn {
			q := c.queues[t]
			if len(q) == 0 || len(batch) == maxGroup {
				continue
			}
			j := q[0]
			q[0] = nil
			c.queues[t] = q[1:]
			j.taken = true
			batch = append(batch, j)
			took = true
		}
		if !took {
			break
		}
	}
	// Every tenant in turn has a job waiting, so the group's first round served the first
	// min(len(turn), maxGroup) of them.
	k := min(len(c.turn), maxGroup)
	next := slices.Clone(c.turn[k:])
	var served []string
	for _, t := range c.turn[:k] {
		if len(c.queues[t]) > 0 {
			served = append(served, t)
		} else {
			delete(c.queues, t)
		}
	}
	if len(served) > 1 {
		served = append(served[1:], served[0])
	}
	c.turn = append(next, served...)
	return batch
}

func (c *committer) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			c.shutdown(ErrClosed)
			return
		}
		// The writer that woke the committer made it the next goroutine its P runs, ahead of
		// the writers the last commit let go, which are about to queue jobs of their own: one
		// yield lets them, so the group takes them all instead of one job each time.
		runtime.Gosched()
		for {
			batch := c.take()
			if len(batch) == 0 {
				break
			}
			if c.group(batch) {
				c.shutdown(c.broken)
				return
			}
			select {
			case <-c.stop:
				c.shutdown(ErrClosed)
				return
			default:
			}
		}
	}
}

// group runs one group and tells the observer, then lets its callers go. A panic outside the
// group's jobs (beginning or committing the group, the observer) fails the jobs whose
// outcome the commit had not decided with errGroupPanic, is logged, and the writer goes on;
// after maxGroupPanics such groups in a row it gives up (reports true).
func (c *committer) group(batch []*job) (broken bool) {
	var g groupState
	defer func() {
		if r := recover(); r != nil {
			broken = c.panicked(batch, &g, r)
		} else {
			c.panics = 0
		}
		for _, j := range batch {
			close(j.done)
		}
	}()
	c.run(batch, &g)
	c.db.observeGroup(len(batch))
	return false
}

// groupState is how far a group got: its transaction once begun, and whether it ended
// (committed or rolled back: the jobs' outcomes are decided).
type groupState struct {
	wc    *ownConn
	ended bool
}

// panicked cleans up after a panic outside the jobs of a group and reports whether the
// writer must give up.
func (c *committer) panicked(batch []*job, g *groupState, r any) bool {
	c.db.log.Error("database writer: a write group panicked outside its transactions; its writes failed",
		"panic", fmt.Sprint(r), "stack", string(debug.Stack()), "group", len(batch))
	if !g.ended {
		if g.wc != nil {
			g.wc.rollback(context.Background())
		}
		for _, j := range batch {
			if j.err == nil && j.panic == nil {
				j.err = errGroupPanic
			}
		}
	}
	c.panics++
	if c.panics < maxGroupPanics {
		return false
	}
	c.db.log.Error("database writer: gave up after repeated panics; readiness fails and the process must restart",
		"panics", c.panics)
	c.mu.Lock()
	c.broken = ErrWriterBroken
	c.mu.Unlock()
	close(c.fatal)
	return true
}

// shutdown fails the jobs still waiting, and every later submit, with err (ErrClosed, or
// the writer's breakdown).
func (c *committer) shutdown(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, q := range c.queues {
		for _, j := range q {
			j.taken = true
			j.err = err
			close(j.done)
		}
	}
	clear(c.queues)
	c.turn = nil
}

func (c *committer) run(batch []*job, g *groupState) {
	ctx := context.Background()
	d := c.db.Dialect
	if err := c.db.checkFile(); err != nil {
		// Writing on would go to a file nothing will read again: fail the group instead.
		g.ended = true
		for _, j := range batch {
			j.err = err
		}
		return
	}
	wc, err := c.begin(ctx)
	g.wc = wc
	if err != nil {
		g.ended = true
		err = fmt.Errorf("begin transaction: %w", d.MapError(err))
		for _, j := range batch {
			j.err = err
		}
		return
	}
	newTx := func() *Tx {
		return &Tx{wc: wc, Dialect: d, clock: c.db.clock, plans: &c.db.plans, grouped: true, hook: c.db.statementHook()}
	}
	if len(batch) == 1 {
		// A group of one needs no savepoint: the transaction is the job's alone, so a
		// failure rolls the transaction back instead.
		j := batch[0]
		if err := j.ctx.Err(); err != nil {
			j.err = err
			wc.rollback(ctx)
			g.ended = true
			return
		}
		j.panic, j.err = runGuarded(j.fn, newTx())
		if j.err != nil || j.panic != nil {
			j.err = d.MapError(j.err)
			wc.rollback(ctx)
			g.ended = true
			return
		}
		err := wc.commit(ctx)
		g.ended = true
		if err != nil {
			j.err = fmt.Errorf("commit: %w", d.MapError(err))
		}
		c.db.ckpt.committed()
		return
	}
	var ran []*job
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err // the caller left before its turn: nothing was written
			continue
		}
		if err := wc.exec(ctx, savepointSQL); err != nil {
			c.abort(ctx, wc, batch, fmt.Errorf("savepoint: %w", d.MapError(err)))
			g.ended = true
			return
		}
		j.panic, j.err = runGuarded(j.fn, newTx())
		if j.err != nil || j.panic != nil {
			j.err = d.MapError(j.err)
			// A failed statement can have ended the whole transaction (an I/O error, say);
			// then the savepoint is gone and the group must fail as one.
			if err := wc.exec(ctx, rollbackToSQL); err != nil {
				c.abort(ctx, wc, batch, fmt.Errorf("roll back to savepoint: %w", d.MapError(err)))
				g.ended = true
				return
			}
		}
		if err := wc.exec(ctx, releaseSQL); err != nil {
			c.abort(ctx, wc, batch, fmt.Errorf("release savepoint: %w", d.MapError(err)))
			g.ended = true
			return
		}
		ran = append(ran, j)
	}
	err = wc.commit(ctx)
	g.ended = true
	if err != nil {
		err = fmt.Errorf("commit: %w", d.MapError(err))
		for _, j := range ran {
			if j.err == nil && j.panic == nil {
				j.err = err
			}
		}
	}
	c.db.ckpt.committed()
}

// The savepoint statements of a group, prepared once on the writer's connection (parsing
// them for every job showed in profiles).
const (
	savepointSQL  = "SAVEPOINT job"
	rollbackToSQL = "ROLLBACK TO job"
	releaseSQL    = "RELEASE job"
)

// abort rolls the group back and fails every job that had not failed on its own.
func (c *committer) abort(ctx context.Context, wc *ownConn, batch []*job, err error) {
	wc.rollback(ctx)
	for _, j := range batch {
		if j.err == nil && j.panic == nil {
			j.err = err
		}
	}
}

func runGuarded(fn func(*Tx) error, tx *Tx) (p any, err error) {
	defer func() {
		if r := recover(); r != nil {
			p = r
		}
	}()
	return nil, fn(tx)
}
