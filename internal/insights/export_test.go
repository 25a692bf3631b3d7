package insights

import (
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

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

// CellsRead is how many roll-up cells the store's answers have read.
func (s *Store) CellsRead() int64 { return s.cellsRead.Load() }

// CoarseGrain is the coarse cells' width in seconds.
const CoarseGrain = int64(coarseGrain / time.Second)

// NewProjectorBefore42 returns the projector as a binary from before migration 000042
// runs it: it counts no coarse cells and leaves CoarseThrough as it is.
func NewProjectorBefore42(db *sqldb.DB) *Projector {
	p := NewProjector(db, 0)
	p.coarse = false
	return p
}
