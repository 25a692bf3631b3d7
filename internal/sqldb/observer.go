package sqldb

import "time"

// Observer hears how write transactions went, for metrics. Its methods are called outside
// any transaction and must be quick and must not block.
type Observer interface {
	// WriteDone: one Write took d, from the call to its commit (its retries and, on SQLite,
	// its wait for the group included): the write latency a request sees.
	WriteDone(d time.Duration)
	// GroupCommitted: SQLite committed a group of size write transactions with one commit.
	GroupCommitted(size int)
	// GroupRerun: a SQLite group ran again, each write in its own savepoint, because one of
	// its writes failed after changing rows (groupcommit.go).
	GroupRerun()
	// ConnectionOpened: SQL Server's pool opened a connection (a login and the session
	// init). A steady pool opens few; a rising count means connections are being thrown
	// away (a context cancelled during the session reset closes the connection).
	ConnectionOpened()
}

// SetObserver sets the observer; call it while wiring, before the database is used.
func (db *DB) SetObserver(o Observer) { db.obs.Store(&o) }

func (db *DB) observeWrite(start time.Time) {
	if o := db.obs.Load(); o != nil {
		(*o).WriteDone(time.Since(start))
	}
}

func (db *DB) observeGroup(size int) {
	if o := db.obs.Load(); o != nil {
		(*o).GroupCommitted(size)
	}
}

func (db *DB) observeGroupRerun() {
	if o := db.obs.Load(); o != nil {
		(*o).GroupRerun()
	}
}

func (db *DB) observeConnection() {
	if o := db.obs.Load(); o != nil {
		(*o).ConnectionOpened()
	}
}
