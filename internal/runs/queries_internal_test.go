package runs

import (
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqllint"
)

// The two query sets agree statement by statement: placeholders, bounds, serial plans.
func TestQuerySetsAgree(t *testing.T) {
	t.Parallel()
	sqllint.CompareQuerySets(t, querySets.All())
}

// runTable mirrors Runs in both dialects, column for column: on SQL Server the type, and
// for a string column the collation, that the migrations give the column (@t is declared from
// it: a table variable's string column otherwise takes the database's default collation, Msg
// 468 against Runs' BIN2 columns); on SQLite the declared type of the migrated table. Every
// column of Runs, and every column a Run field maps, is in the table.
func TestRunTableMirrorsRuns(t *testing.T) {
	t.Parallel()
	dbtest.MirrorsTable(t, "Runs", runTable)
	for _, stmt := range []string{mssqlQueries.endLeased, mssqlQueries.requeue, mssqlQueries.endQueued} {
		if !strings.Contains(stmt, "Subject nvarchar(256) COLLATE Latin1_General_100_BIN2") {
			t.Errorf("a statement filling @t does not declare it from runTable: %.120s", stmt)
		}
	}
}
