package sqldb

import (
	"context"
	"database/sql"
	"sync"

	"github.com/jmoiron/sqlx"
	"github.com/jmoiron/sqlx/reflectx"
)

// stmtCache keeps one prepared statement per query text and pool. SQLite spends more time
// parsing the claim's statements than running them; database/sql prepares each cached
// statement once per connection and reuses it in every transaction on that connection.
// SQL Server is left to its own plan cache (sp_executesql), since prepared handles and
// pooled-connection resets interact in ways not worth the risk.
type stmtCache struct {
	pool *sqlx.DB
	mu   sync.Mutex
	m    map[string]*sqlx.Stmt
	// pending holds queries first seen inside a transaction. They are prepared before the
	// next transaction begins: preparing on the pool inside one would wait for the very
	// connection the transaction holds (the SQLite writer pool has one).
	pending map[string]bool
}

func newStmtCache(pool *sqlx.DB) *stmtCache {
	return &stmtCache{pool: pool, m: map[string]*sqlx.Stmt{}, pending: map[string]bool{}}
}

// lookup returns the prepared statement of query, or nil after noting it for preparation.
func (c *stmtCache) lookup(query string) *sqlx.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[query]; ok {
		return s
	}
	c.pending[query] = true
	return nil
}

// preparePending prepares the noted queries. It must run outside any transaction of the
// pool, and holds no lock while it waits for a connection.
func (c *stmtCache) preparePending(ctx context.Context) {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	queries := make([]string, 0, len(c.pending))
	for q := range c.pending {
		queries = append(queries, q)
	}
	clear(c.pending)
	c.mu.Unlock()
	for _, q := range queries {
		s, err := c.pool.PreparexContext(ctx, q)
		if err != nil {
			continue // the statement runs unprepared, and reports its own error there
		}
		c.mu.Lock()
		if _, dup := c.m[q]; dup {
			s.Close()
		} else {
			c.m[q] = s
		}
		c.mu.Unlock()
	}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		s.Close()
	}
	clear(c.m)
}

// stmt returns query prepared for this transaction, or nil when the dialect does not cache.
func (tx *Tx) stmt(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if tx.grouped {
		ctx = context.WithoutCancel(ctx)
	}
	if tx.cache == nil {
		return nil, nil
	}
	parent := tx.cache.lookup(query)
	if parent == nil {
		return nil, nil
	}
	return tx.tx.StmtxContext(ctx, parent), nil
}

// GetContext is sqlx's, through the statement cache, with the error mapped.
func (tx *Tx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return nameStatement(tx.Dialect.MapError(tx.get(ctx, dest, query, args...)), query)
}

func (tx *Tx) get(ctx context.Context, dest any, query string, args ...any) error {
	return tx.query(ctx, (*scanPlans).getRow, dest, query, args)
}

// SelectContext is sqlx's, through the statement cache, with the error mapped.
func (tx *Tx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return nameStatement(tx.Dialect.MapError(tx.selectRows(ctx, dest, query, args...)), query)
}

func (tx *Tx) selectRows(ctx context.Context, dest any, query string, args ...any) error {
	return tx.query(ctx, (*scanPlans).selectRows, dest, query, args)
}

// query runs a statement that answers rows, through the writer's connection or the
// transaction's statement cache, and hands them to scan (getRow or selectRows) with the
// mapper of what ran it.
func (tx *Tx) query(ctx context.Context, scan func(*scanPlans, rowSource, error, string, any, *reflectx.Mapper) error,
	dest any, query string, args []any) error {
	if err := tx.before(ctx, query, args); err != nil {
		return err
	}
	query, args = tx.withScope(query, args)
	if tx.wc != nil {
		// The group's statements are never interrupted (see grouped): the driver is given a
		// context that cannot end, which also spares it a watcher per statement.
		rows, err := tx.wc.rows(context.Background(), query, args)
		return scan(tx.plans, rows, err, query, dest, tx.wc.mapper)
	}
	if tx.grouped {
		ctx = context.WithoutCancel(ctx)
	}
	s, err := tx.stmt(ctx, query)
	if err != nil {
		return err
	}
	if s == nil {
		rows, err := tx.tx.QueryContext(ctx, query, args...)
		return scan(tx.plans, sqlRows(rows), err, query, dest, tx.tx.Mapper)
	}
	defer s.Close()
	rows, err := s.QueryContext(ctx, args...)
	return scan(tx.plans, sqlRows(rows), err, query, dest, tx.tx.Mapper)
}

// sqlRows is rows as a rowSource: nil stays nil (a failed query's rows are never read).
func sqlRows(rows *sql.Rows) rowSource {
	if rows == nil {
		return nil
	}
	return rows
}

// ExecContext is sqlx's, through the statement cache, with the error mapped.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := tx.exec(ctx, query, args...)
	return res, nameStatement(tx.Dialect.MapError(err), query)
}

func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := tx.before(ctx, query, args); err != nil {
		return nil, err
	}
	query, args = tx.withScope(query, args)
	if tx.wc != nil {
		return tx.wc.run(context.Background(), query, args)
	}
	if tx.grouped {
		ctx = context.WithoutCancel(ctx)
	}
	s, err := tx.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return tx.tx.ExecContext(ctx, query, args...)
	}
	defer s.Close()
	return s.ExecContext(ctx, args...)
}
