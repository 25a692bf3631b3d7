package insights

import "github.com/ledger-dev/ledger/internal/sqldb"

// NewReferenceStore returns a Store that answers with the direct statements over the source
// tables (queries.go), the reference the roll-ups must equal.
func NewReferenceStore(db *sqldb.DB) *Store {
	s := NewStore(db)
	s.direct = true
	return s
}

// NewProjectorCells returns the projector with a cell budget per step other than
// maxStepCells.
func NewProjectorCells(db *sqldb.DB, batch, cells int) *Projector {
	p := NewProjector(db, batch)
	p.cells = cells
	return p
}
