package calls

import (
	"testing"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqllint"
)

// The two query sets agree statement by statement: placeholders, bounds, serial plans.
func TestQuerySetsAgree(t *testing.T) {
	t.Parallel()
	sqllint.CompareQuerySets(t, querySets.All())
}

// table mirrors CallRecords in both dialects, column for column (the type and, on SQL Server,
// the collation the migrations give it), and holds every column a field of the row maps.
func TestColumnTableMirrorsCalls(t *testing.T) {
	t.Parallel()
	dbtest.MirrorsTable(t, "CallRecords", table)
}
