// Package retention deletes run history past its project's retention (DESIGN.md section 5,
// "Retention"): ended run chains, with their attempts and everything recorded under them,
// in bounded batches across tenants, keeping a tombstone of each purged idempotency key so
// that an event still never runs twice. `ledger purge` and a background job run it.
//
// A run chain is a root run (no ContinuedFromRunId) and its continuations. A chain is
// purged when every run of it has ENDED more than its project's RetentionDays ago (all runs
// of a chain share the project). A chain with a run that is not ended is never touched.
//
// Delegated runs: a child run's ParentRunId references a run of its parent's chain (a
// foreign key). A chain that is still the parent of a run in another chain waits until
// that child chain is gone, and the child chain is purged by its own project's retention,
// never earlier because of its parent. So a tree of delegations is purged from the leaves
// up, each chain when both it and everything below it is past retention; Purge repeats its
// pass while a pass both purged something and left parents waiting, so a whole tree that
// is past retention goes in one Purge. Deleting child chains before their parents keeps the
// foreign key intact at every commit, and a long-retention child is never cut short by its
// parent.
//
// A batch (at most Options.BatchRuns runs) is: select and judge chains (one read); then
// one short transaction that locks the chains' runs (and their projects' rows), judges
// them again under those locks, writes the tombstones, records the runs it keeps
// purging in PurgeBacklog and deletes them: the decision to purge a chain is taken and
// made irreversible under the locks, before anything of the chain is deleted. A continue,
// a new child run or a raised retention that lands between the selection and the locks is
// seen by the second judgement, and the chain is left whole; one that comes after finds the
// runs gone (a continue answers 404, a child enqueue refuses its parent). Then the purged
// runs' attempts, and their checkpoints, calls, decisions and delegations, are deleted in
// chunks of at most Options.ChunkRows rows per statement, each chunk its own short
// transaction (children before attempts: their foreign keys point at the attempt; no key
// points from an attempt to its run), and last the backlog rows. A purge that stops
// between the two (a crash, a failed chunk) leaves the backlog, and the next purge
// finishes it first. Meanwhile the purged runs' attempts can still be read for a moment
// (history lists them), as rows past retention that are on their way out.
//
// The candidates are found through the runs' (TenantId, QueuedAt) index, since a run that
// ended before a cutoff was queued before it: a pass reads, per tenant, the runs queued
// before the tenant's latest cutoff (now minus its shortest project retention) once each.
// An index on Runs (TenantId, ProjectId, EndedAt) WHERE State = 2 would let it read only
// purgeable roots; the schema has none.
package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Defaults of Options and RunJob.
const (
	DefaultBatchRuns = 500
	DefaultChunkRows = 2000
	DefaultInterval  = time.Hour
	// MaxBatchRuns bounds a batch: its final transaction locks that many runs.
	MaxBatchRuns = 4000
)

// Options adjust a purge.
type Options struct {
	// BatchRuns is the most runs one batch deletes (the final transaction of a batch locks
	// them); 0 means DefaultBatchRuns. A chain longer than this is purged alone.
	BatchRuns int
	// ChunkRows is the most rows one delete statement removes from one table; 0 means
	// DefaultChunkRows.
	ChunkRows int
	// DryRun selects and counts what would be purged, and deletes nothing.
	DryRun bool
	// Log receives a line per failed batch; nil means slog.Default().
	Log *slog.Logger
}

// Result counts what a purge deleted (or, in a dry run, would delete: chains, runs,
// attempts and tombstones only).
type Result struct {
	Chains      int
	Runs        int
	Attempts    int
	Checkpoints int
	Calls       int
	Decisions   int
	Delegations int
	// Tombstones is the idempotency keys kept for purged runs.
	Tombstones int
	// Deferred is the chains past retention left because a run of theirs is the parent of
	// a run that is not purged yet (as of the last pass).
	Deferred int
	// Batches is the batches that deleted (or would delete) something.
	Batches int
	// FailedBatches is the batches that failed and were skipped (logged); a later purge
	// retries them.
	FailedBatches int
}

// Purge deletes, across tenants, every ended run chain whose runs all ended more than their
// project's RetentionDays ago, with their attempts and the attempts' checkpoints, calls,
// decisions and delegations, in bounded batches; it keeps a tombstone of each purged
// idempotency key. "Now" is the database's clock (or the injected one), read once. A batch
// that fails is logged and skipped; Purge returns an error only when it cannot go on
// (ctx ended, database unavailable).
func Purge(ctx context.Context, db *sqldb.DB, opts Options) (Result, error) {
	if opts.BatchRuns <= 0 {
		opts.BatchRuns = DefaultBatchRuns
	}
	opts.BatchRuns = min(opts.BatchRuns, MaxBatchRuns)
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = DefaultChunkRows
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	p := &purger{db: db, q: queriesFor(db.Dialect), opts: opts}
	var now time.Time
	err := db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		var err error
		now, err = tx.Now(ctx)
		return err
	})
	if err != nil {
		return p.res, fmt.Errorf("purge: read the clock: %w", err)
	}
	if !opts.DryRun {
		// Finish what an earlier purge decided but did not get to delete.
		if err := p.resume(ctx); err != nil {
			return p.res, fmt.Errorf("purge: %w", err)
		}
	}
	for {
		purged, deferred, err := p.pass(ctx, now)
		p.res.Deferred = deferred
		if err != nil {
			return p.res, fmt.Errorf("purge: %w", err)
		}
		// Another pass can only help when this one removed children some parents waited for.
		if opts.DryRun || purged == 0 || deferred == 0 {
			return p.res, nil
		}
	}
}

// RunJob purges every interval (DefaultInterval when not positive) until ctx ends, logging
// what each purge did. Every replica may run it: two purges of the same chain serialise on
// its rows and the second finds nothing. The first purge starts after a random part of the
// interval, so replicas started together do not purge together.
func RunJob(ctx context.Context, db *sqldb.DB, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if log == nil {
		log = slog.Default()
	}
	wait := time.Duration(rand.Int64N(int64(interval))) + time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = interval
		res, err := Purge(ctx, db, Options{Log: log})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.WarnContext(ctx, "retention purge failed", "err", err)
			continue
		}
		if res.Chains > 0 || res.FailedBatches > 0 {
			log.InfoContext(ctx, "retention purge", "chains", res.Chains, "runs", res.Runs, "attempts", res.Attempts,
				"tombstones", res.Tombstones, "deferred", res.Deferred, "batches", res.Batches, "failed_batches", res.FailedBatches)
		}
	}
}

type purger struct {
	db   *sqldb.DB
	q    *queries
	opts Options
	res  Result
}

// days converts a retention in days to a duration (UTC days: 24 hours each, as DATEADD and
// SQLite's date modifiers count them).
func days(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

const tenantPage = 100

type tenantRow struct {
	TenantID string `db:"TenantId"`
	MinDays  int    `db:"MinDays"`
}

// pass goes once over every tenant. It returns the chains it purged and the chains left
// waiting for their child runs.
func (p *purger) pass(ctx context.Context, now time.Time) (purged, deferred int, err error) {
	after := ""
	for {
		var tenants []tenantRow
		err := p.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			return tx.SelectContext(ctx, &tenants, p.q.tenants, after, tenantPage)
		})
		if err != nil {
			return purged, deferred, fmt.Errorf("list tenants: %w", err)
		}
		for _, t := range tenants {
			n, d, err := p.tenant(ctx, t, now)
			purged, deferred = purged+n, deferred+d
			if err != nil {
				return purged, deferred, err
			}
		}
		if len(tenants) < tenantPage {
			return purged, deferred, nil
		}
		after = tenants[len(tenants)-1].TenantID
	}
}

// keyset is a position in a tenant's runs by (QueuedAt, RunId).
type keyset struct {
	at time.Time
	id uuid.UUID
}

// chain is a purgeable chain: its root and every run in it.
type chain struct {
	root uuid.UUID
	runs []uuid.UUID
	keys int // runs with an idempotency key
}

// batch is what one selection found.
type batch struct {
	chains    []chain
	runs      int
	deferred  int
	next      keyset
	exhausted bool
}

func (p *purger) tenant(ctx context.Context, t tenantRow, now time.Time) (purged, deferred int, err error) {
	latest := now.Add(-days(t.MinDays))
	key := keyset{at: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}
	for {
		b, err := p.selectBatch(ctx, t.TenantID, now, latest, key)
		if err != nil {
			// Skip the rest of this tenant (or stop, when the purge cannot go on).
			return purged, deferred, p.fatal(err, "select a batch", t.TenantID)
		}
		deferred += b.deferred
		if len(b.chains) > 0 {
			if p.opts.DryRun {
				err = p.count(ctx, t.TenantID, b)
			} else {
				var n int
				n, err = p.purgeBatch(ctx, t.TenantID, now, b)
				purged += n
			}
			if err != nil {
				if err := p.fatal(err, "purge a batch", t.TenantID); err != nil {
					return purged, deferred, err
				}
			}
		}
		if b.exhausted {
			return purged, deferred, nil
		}
		key = b.next
	}
}

// fatal logs a failed step and returns nil to skip it, or the error when the purge cannot
// go on (the context ended, the database is unavailable).
func (p *purger) fatal(err error, what, tenant string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sqldb.ErrUnavailable) {
		return err
	}
	p.res.FailedBatches++
	p.opts.Log.Warn("retention: batch failed; skipped until the next purge", "step", what, "tenant", tenant, "err", err)
	return nil
}

type rootRow struct {
	RunID    uuid.UUID  `db:"RunId"`
	QueuedAt sqldb.Time `db:"QueuedAt"`
}

type memberRow struct {
	RootID         uuid.UUID      `db:"RootId"`
	RunID          uuid.UUID      `db:"RunId"`
	State          api.RunState   `db:"State"`
	EndedAt        sqldb.NullTime `db:"EndedAt"`
	IdempotencyKey *string        `db:"IdempotencyKey"`
	HasChild       bool           `db:"HasChild"`
	RetentionDays  int            `db:"RetentionDays"`
}

// verdict of a chain.
type verdict int

const (
	keep      verdict = iota // not ended, or not past retention
	waits                    // past retention, but a run of it is a parent of a run not purged yet
	purgeable                // past retention and nobody's parent
)

// judge decides about one chain from its members.
func judge(ms []memberRow, now time.Time) verdict {
	if len(ms) == 0 {
		return keep
	}
	parent := false
	for _, m := range ms {
		cutoff := now.Add(-days(m.RetentionDays))
		if m.State != api.RunEnded || !m.EndedAt.Valid || !m.EndedAt.Time.Before(cutoff) {
			return keep
		}
		parent = parent || m.HasChild
	}
	if parent {
		return waits
	}
	return purgeable
}

func groupMembers(rows []memberRow) map[uuid.UUID][]memberRow {
	out := map[uuid.UUID][]memberRow{}
	for _, m := range rows {
		out[m.RootID] = append(out[m.RootID], m)
	}
	return out
}

// jsonIDs is ids as the JSON array the statements open with OPENJSON (json_each on
// SQLite), declared alike for every batch size (sqldb.Dialect.JSON).
func jsonIDs(d sqldb.Dialect, ids []uuid.UUID) any {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	b, _ := json.Marshal(s)
	return d.JSON(string(b))
}

// selectBatch reads the next roots of the tenant after key, and keeps the purgeable chains
// among them, up to BatchRuns runs.
func (p *purger) selectBatch(ctx context.Context, tenant string, now, latest time.Time, key keyset) (batch, error) {
	var b batch
	err := p.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		b = batch{}
		var roots []rootRow
		err := tx.SelectContext(ctx, &roots, p.q.roots, tenant, tx.Dialect.Time(now), tx.Dialect.Time(latest), tx.Dialect.Time(key.at),
			key.id, p.opts.BatchRuns)
		if err != nil {
			return fmt.Errorf("find chain roots: %w", err)
		}
		b.exhausted = len(roots) < p.opts.BatchRuns
		if len(roots) == 0 {
			return nil
		}
		ids := make([]uuid.UUID, len(roots))
		for i, r := range roots {
			ids[i] = r.RunID
		}
		var rows []memberRow
		if err := tx.SelectContext(ctx, &rows, p.q.members, tenant, jsonIDs(tx.Dialect, ids)); err != nil {
			return fmt.Errorf("read chains: %w", err)
		}
		members := groupMembers(rows)
		for i, r := range roots {
			ms := members[r.RunID]
			switch judge(ms, now) {
			case waits:
				b.deferred++
			case purgeable:
				if b.runs > 0 && b.runs+len(ms) > p.opts.BatchRuns {
					// Full: the next batch starts at this root.
					b.exhausted = false
					return nil
				}
				c := chain{root: r.RunID}
				for _, m := range ms {
					c.runs = append(c.runs, m.RunID)
					if m.IdempotencyKey != nil {
						c.keys++
					}
				}
				b.chains = append(b.chains, c)
				b.runs += len(ms)
			}
			b.next = keyset{at: roots[i].QueuedAt.Time, id: r.RunID}
		}
		return nil
	})
	return b, err
}

func (b batch) runIDs() []uuid.UUID {
	var out []uuid.UUID
	for _, c := range b.chains {
		out = append(out, c.runs...)
	}
	return out
}

// count adds a dry run's batch to the result.
func (p *purger) count(ctx context.Context, tenant string, b batch) error {
	var attempts int
	err := p.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(ctx, &attempts, p.q.countAttempts, tenant, jsonIDs(tx.Dialect, b.runIDs()))
	})
	if err != nil {
		return fmt.Errorf("count attempts: %w", err)
	}
	p.res.Batches++
	p.res.Chains += len(b.chains)
	p.res.Runs += b.runs
	p.res.Attempts += attempts
	for _, c := range b.chains {
		p.res.Tombstones += c.keys
	}
	return nil
}

// purgeBatch re-judges the batch's chains under locks and, in the same transaction,
// keeps tombstones, records the purgeable chains' runs in the backlog and deletes them; then
// it deletes those runs' attempts and everything under them in chunks. It returns the
// chains purged.
func (p *purger) purgeBatch(ctx context.Context, tenant string, now time.Time, b batch) (int, error) {
	roots := make([]uuid.UUID, len(b.chains))
	for i, c := range b.chains {
		roots[i] = c.root
	}
	var (
		final    Result
		verified []uuid.UUID
	)
	err := p.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		final, verified = Result{}, nil
		var rows []memberRow
		if err := tx.SelectContext(ctx, &rows, p.q.lockMembers, tenant, jsonIDs(tx.Dialect, roots)); err != nil {
			return fmt.Errorf("lock chains: %w", err)
		}
		for _, ms := range groupMembers(rows) {
			if judge(ms, now) != purgeable {
				continue // continued, given a child or a longer retention since the selection
			}
			final.Chains++
			for _, m := range ms {
				verified = append(verified, m.RunID)
			}
		}
		if len(verified) == 0 {
			return nil
		}
		ids := jsonIDs(tx.Dialect, verified)
		n, err := p.exec(ctx, tx, p.q.tombstones, tenant, ids, tx.Dialect.Time(now))
		if err != nil {
			return fmt.Errorf("keep tombstones: %w", err)
		}
		final.Tombstones = int(n)
		if _, err := p.exec(ctx, tx, p.q.backlog, tenant, ids, tx.Dialect.Time(now)); err != nil {
			return fmt.Errorf("record the purge: %w", err)
		}
		if n, err = p.exec(ctx, tx, p.q.deleteRuns, tenant, ids); err != nil {
			return fmt.Errorf("delete runs: %w", err)
		}
		final.Runs = int(n)
		return nil
	})
	if err != nil {
		return 0, err
	}
	p.res.Chains += final.Chains
	p.res.Runs += final.Runs
	p.res.Tombstones += final.Tombstones
	if final.Chains > 0 {
		p.res.Batches++
	}
	if len(verified) == 0 {
		return 0, nil
	}
	return final.Chains, p.drain(ctx, tenant, verified)
}

// drain deletes the attempts of runs already purged (in the backlog), and every row under
// them, in chunks, children first; then their backlog rows.
func (p *purger) drain(ctx context.Context, tenant string, runIDs []uuid.UUID) error {
	runs := jsonIDs(p.db.Dialect, runIDs)
	for _, step := range p.childSteps() {
		for {
			var n int64
			err := p.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
				var err error
				n, err = p.exec(ctx, tx, step.query, tenant, runs, p.opts.ChunkRows)
				return err
			})
			if err != nil {
				return fmt.Errorf("delete %s: %w", step.name, err)
			}
			*step.count += int(n)
			if n < int64(p.opts.ChunkRows) {
				break
			}
		}
	}
	err := p.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		_, err := p.exec(ctx, tx, p.q.backlogDone, tenant, runs)
		return err
	})
	if err != nil {
		return fmt.Errorf("clear the purge backlog: %w", err)
	}
	return nil
}

type backlogRow struct {
	TenantID string    `db:"TenantId"`
	RunID    uuid.UUID `db:"RunId"`
}

// resume drains the backlog an earlier purge left (it stopped between deleting runs and
// deleting their attempts), a page of at most BatchRuns runs at a time, in key order; a
// page that fails is logged and left for the next purge.
func (p *purger) resume(ctx context.Context) error {
	after := backlogRow{}
	for {
		var rows []backlogRow
		err := p.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			return tx.SelectContext(ctx, &rows, p.q.backlogPage, after.TenantID, after.RunID, p.opts.BatchRuns)
		})
		if err != nil {
			return fmt.Errorf("read the purge backlog: %w", err)
		}
		for i := 0; i < len(rows); {
			j := i
			var ids []uuid.UUID
			for ; j < len(rows) && rows[j].TenantID == rows[i].TenantID; j++ {
				ids = append(ids, rows[j].RunID)
			}
			if err := p.drain(ctx, rows[i].TenantID, ids); err != nil {
				if err := p.fatal(err, "finish an earlier purge", rows[i].TenantID); err != nil {
					return err
				}
			}
			i = j
		}
		if len(rows) < p.opts.BatchRuns {
			return nil
		}
		after = rows[len(rows)-1]
	}
}

type step struct {
	name  string
	query string
	count *int
}

// childSteps are the deletes under purged runs, children before parents, counted into the
// purge's result.
func (p *purger) childSteps() []step {
	r := &p.res
	return []step{
		{"checkpoints", p.q.deleteCheckpoints, &r.Checkpoints},
		{"calls", p.q.deleteCalls, &r.Calls},
		{"decisions", p.q.deleteDecisions, &r.Decisions},
		{"delegations", p.q.deleteDelegations, &r.Delegations},
		{"attempts", p.q.deleteAttempts, &r.Attempts},
	}
}

func (p *purger) exec(ctx context.Context, tx *sqldb.Tx, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
