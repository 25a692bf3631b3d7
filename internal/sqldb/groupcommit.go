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
// after another inside one database transaction. A function that fails gets its error and
// leaves nothing; the others commit together, and only then does any caller hear of
// success. The result is the same as running them one by one in that order, with one
// commit (one WAL write, and under synchronous=FULL one fsync) for the group instead of one
// each.
//
// How a failure leaves nothing. A group first runs its jobs with nothing between them
// (runTogether). A job that fails having changed no row (a claim that found nothing, a
// fenced write refused by its first statement, a request that reads and refuses) has
// nothing to undo: it gets its error and the group goes on. A job that fails after it
// changed rows cannot be undone alone there, so the transaction is rolled back and the
// group runs again from its first job, each job in its own savepoint (runInSavepoints),
// where such a job rolls back to its savepoint alone. Running a job twice is allowed:
// Write's functions have no effects outside their transaction, as a retry after a busy
// database runs them again too, and nothing of the first run was committed or answered.
// After a failure with rows to undo, the next carefulGroups groups go straight to
// savepoints, so a stream of such failures (a tenant's conflicting writes, say) makes other
// tenants' groups run twice at most once in that many. The savepoints are not free: each
// copies every page its job first changes into the sub-journal (docs/perf/issue-35.md),
// which is why they wait for a failure that needs them. A group of one needs neither: its
// transaction is its own, and a failure rolls it back.
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
	// careful is how many more groups run each job in a savepoint from the start, since a
	// job failed with rows to undo (carefulGroups).
	careful int
	// fatal is closed when the writer gave up.
	fatal chan struct{}
}

// maxGroupPanics is how many groups in a row may panic outside their jobs before the writer
// gives up: a panic in a group is failed and forgotten, but a writer that panics every time
// cannot be trusted with the next write.
const maxGroupPanics = 3

// carefulGroups is how many groups after a job failed with rows to undo run their jobs in
// savepoints from the start instead of together first: such a failure costs its group a
// second run, and while they keep coming, that second run is what every group would pay.
const carefulGroups = 32

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
	wc, ok := c.beginOrFail(ctx, batch, g)
	if !ok {
		return
	}
	hook := c.db.statementHook()
	newTx := func() *Tx {
		return &Tx{wc: wc, Dialect: d, clock: c.db.clock, plans: &c.db.plans, grouped: true, hook: hook}
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
		runJob(j, newTx())
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
	// A test's statement hook writes rows the job itself does not (a concurrent winner's,
	// once): run twice, the job would not meet them again, so a hook's groups take the
	// savepoints from the start.
	careful := c.careful > 0 || hook != nil
	if c.careful > 0 {
		c.careful--
	}
	if !careful {
		if c.runTogether(ctx, wc, batch, newTx) {
			g.ended = true
			c.db.ckpt.committed()
			return
		}
		// A job failed with rows to undo beside the others' writes, and the transaction is
		// rolled back: run the group again, each job in its own savepoint.
		c.careful = carefulGroups
		c.db.observeGroupRerun()
		if wc, ok = c.beginOrFail(ctx, batch, g); !ok {
			return
		}
	}
	c.runInSavepoints(ctx, wc, batch, newTx)
	g.ended = true
	c.db.ckpt.committed()
}

// beginOrFail begins the group's transaction and records it in g; if it cannot, every job
// of batch fails with the reason and the group has ended.
func (c *committer) beginOrFail(ctx context.Context, batch []*job, g *groupState) (*ownConn, bool) {
	wc, err := c.begin(ctx)
	g.wc = wc
	if err != nil {
		g.ended = true
		err = fmt.Errorf("begin transaction: %w", c.db.Dialect.MapError(err))
		for _, j := range batch {
			j.err = err
		}
		return nil, false
	}
	return wc, true
}

// runTogether runs batch's jobs one after another with nothing between them and commits,
// reporting true. A job that fails having left nothing (leftNothing) gets its error and the
// others go on. At the first job that fails otherwise it rolls the transaction back, forgets
// what every job ran into, and reports false: nothing of the group was written, and the
// group must run again in savepoints.
func (c *committer) runTogether(ctx context.Context, wc *ownConn, batch []*job, newTx func() *Tx) bool {
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err // the caller left before its turn: nothing was written
			continue
		}
		before := wc.lc.totalChanges()
		runJob(j, newTx())
		if j.err == nil && j.panic == nil {
			continue
		}
		if wc.leftNothing(before) {
			j.err = c.db.Dialect.MapError(j.err)
			continue
		}
		wc.rollback(ctx)
		for _, j := range batch {
			j.err, j.panic = nil, nil
		}
		return false
	}
	c.commitGroup(ctx, wc, batch)
	return true
}

// runInSavepoints runs batch's jobs one after another, each in its own savepoint, and
// commits what did not fail.
func (c *committer) runInSavepoints(ctx context.Context, wc *ownConn, batch []*job, newTx func() *Tx) {
	d := c.db.Dialect
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err // the caller left before its turn: nothing was written
			continue
		}
		if err := wc.exec(ctx, savepointSQL); err != nil {
			c.abort(ctx, wc, batch, fmt.Errorf("savepoint: %w", d.MapError(err)))
			return
		}
		before := wc.lc.totalChanges()
		runJob(j, newTx())
		if j.err != nil || j.panic != nil {
			j.err = d.MapError(j.err)
			if !wc.leftNothing(before) {
				c.careful = carefulGroups
			}
			// A failed statement can have ended the whole transaction (an I/O error, say);
			// then the savepoint is gone and the group must fail as one.
			if err := wc.exec(ctx, rollbackToSQL); err != nil {
				c.abort(ctx, wc, batch, fmt.Errorf("roll back to savepoint: %w", d.MapError(err)))
				return
			}
		}
		if err := wc.exec(ctx, releaseSQL); err != nil {
			c.abort(ctx, wc, batch, fmt.Errorf("release savepoint: %w", d.MapError(err)))
			return
		}
	}
	c.commitGroup(ctx, wc, batch)
}

// commitGroup commits the group's transaction; if that fails, so does every job of batch
// that had not failed on its own (or been left by its caller).
func (c *committer) commitGroup(ctx context.Context, wc *ownConn, batch []*job) {
	if err := wc.commit(ctx); err != nil {
		err = fmt.Errorf("commit: %w", c.db.Dialect.MapError(err))
		for _, j := range batch {
			if j.err == nil && j.panic == nil {
				j.err = err
			}
		}
	}
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

// runJob runs j's function on tx. A trigger's refusal fails the job even when the function
// went on past it: under RAISE(FAIL) the refused statement's rows stay written, and only
// failing the job undoes them (Tx.refused).
func runJob(j *job, tx *Tx) {
	j.panic, j.err = runGuarded(j.fn, tx)
	if j.err == nil && j.panic == nil && tx.refusal != nil {
		j.err = tx.refusal
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
