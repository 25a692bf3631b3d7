package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Dialect is what differs between SQL Server and SQLite below the stores' query sets.
type Dialect interface {
	// Name is "sqlserver" or "sqlite"; query sets are chosen by it.
	Name() string
	// MapError turns a driver error into the sentinels above (or a *ConflictError), wrapping
	// the original; errors that are not the driver's pass through unchanged.
	MapError(err error) error
	// Time converts a time for use as a statement argument (UTC, milliseconds).
	Time(t time.Time) any
	// NullTime is Time for an optional time.
	NullTime(t *time.Time) any
	// Version converts a row version for use as a statement argument.
	Version(v RowVersion) any
	// NowQuery selects the database clock as one UTC time value; "" means the database's
	// clock is this machine's, read without a statement.
	NowQuery() string
	// JSON converts a JSON text (a list of ids or names that a statement opens with
	// OPENJSON or json_each) for use as a statement argument, declared alike whatever its
	// length: go-mssqldb declares a string as nvarchar(its length), and each declaration
	// compiles and caches its own plan of the statement.
	JSON(s string) any
	// Text converts free text that no statement compares (a reference, a purpose, a hash, a
	// value an INSERT only stores) for use as an argument, declared alike whatever its
	// length: on SQL Server the declaration list is part of the plan-cache key, so an insert
	// whose text is declared by its length compiles a plan per combination of lengths.
	Text(s string) any
	// NullText is Text for optional text; nil is NULL (go-mssqldb declares it nvarchar(1):
	// a NULL/value flip still changes the declaration, which the driver offers no way to fix).
	NullText(s *string) any
	// Isolation is the isolation level every transaction is begun with.
	Isolation() sql.IsolationLevel
	// SetScope sets the tenant or the maintenance bypass on a new transaction.
	SetScope(ctx context.Context, tx *Tx, s Scope) error
	// NewID makes a new row's id, laid out so that later ids sort last in this database's
	// order of uniqueidentifier or text: new rows append to their key indexes.
	NewID() uuid.UUID

	// What a caller asks of the database's kind, named for the question so that no code
	// outside the dialect files compares names (a third dialect answers each).

	// Embedded reports a database that is a file in this process's hands (SQLite): ledger
	// creates, migrates and sets it up itself when it serves, it has one writer (the group
	// commit and the prepared-statement caches), and no operator check applies to it.
	Embedded() bool
	// EmulatesRowVersion reports row versions kept by ledger's own counter rather than by
	// the engine: a restored copy must have its floor raised (RaiseVersionFloor).
	EmulatesRowVersion() bool
	// QualifyTable names a table of ledger's schema as the migration tooling must spell it
	// whatever the login's default schema (dbo.name on SQL Server).
	QualifyTable(name string) string
	// Migrations are the dialect's embedded migration files.
	Migrations() fs.FS
}

// TimeLayout is the fixed-width text form of a time in SQLite: it sorts as time.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// QueriesFor picks a store's statement set for d from the sets its package registered.
// Every store chooses its query set through it, so the choice is written once. A dialect
// with no set is a defect found at the store's construction, never SQLite's statements
// sent to another engine.
func QueriesFor[Q any](d Dialect, sets *QuerySets[Q]) *Q {
	q := sets.lookup(d.Name())
	if q == nil {
		panic(fmt.Sprintf("sqldb: no %T statement set for the %q dialect (no queries_<dialect>.go registers one)", q, d.Name()))
	}
	return q
}

// QuerySets holds a store package's statement sets, one per dialect name, each registered
// by the package's queries_<dialect>.go in an init function:
//
//	func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }
//
// so that adding a dialect adds a file to each package and edits none. A package-level
// registry is global state, and it is acceptable only because it is write-once: every
// Register runs during package initialisation (one goroutine, before main or any test),
// the set of registrations is fixed by which files are compiled in, like a map literal's
// entries, and the first read (QueriesFor, All) freezes it; a Register after that, or a
// second set for one dialect, panics. Nothing changes it while the service runs.
type QuerySets[Q any] struct {
	mu   sync.Mutex
	sets map[string]*Q
	// frozen is sets as the first read left it; reads after that load it without the lock,
	// since stores look their set up for every statement.
	frozen atomic.Pointer[map[string]*Q]
}

// Register records q as the statement set for the dialect named dialect. It panics on a
// second set for one dialect, a nil set, or a registry already read.
func (s *QuerySets[Q]) Register(dialect string, q *Q) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.frozen.Load() != nil:
		panic(fmt.Sprintf("sqldb: %T set for %q registered after the sets were read (register in init)", q, dialect))
	case q == nil:
		panic(fmt.Sprintf("sqldb: nil %T set registered for %q", q, dialect))
	case s.sets[dialect] != nil:
		panic(fmt.Sprintf("sqldb: a second %T set registered for %q", q, dialect))
	}
	if s.sets == nil {
		s.sets = map[string]*Q{}
	}
	s.sets[dialect] = q
}

// All returns every registered set by dialect name (a copy), for the tests that compare
// them; it freezes the registry.
func (s *QuerySets[Q]) All() map[string]*Q { return maps.Clone(*s.freeze()) }

func (s *QuerySets[Q]) lookup(dialect string) *Q { return (*s.freeze())[dialect] }

// freeze returns the registered sets, ending registration on the first call.
func (s *QuerySets[Q]) freeze() *map[string]*Q {
	if m := s.frozen.Load(); m != nil {
		return m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.frozen.Load(); m != nil {
		return m
	}
	m := maps.Clone(s.sets)
	if m == nil {
		m = map[string]*Q{}
	}
	s.frozen.Store(&m)
	return &m
}
