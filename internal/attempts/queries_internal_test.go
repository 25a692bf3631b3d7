package attempts

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqllint"
)

// The two query sets agree statement by statement: placeholders, bounds, serial plans.
func TestQuerySetsAgree(t *testing.T) {
	t.Parallel()
	sqllint.CompareQuerySets(t, mssqlQueries, sqliteQueries)
}

// table mirrors ExecutionAttempts in both dialects, column for column (the type and, on SQL
// Server, the collation the migrations give it), and holds every column an Attempt field maps.
func TestColumnTableMirrorsAttempts(t *testing.T) {
	t.Parallel()
	ms, lite := dbtest.MSSQLColumnTypes(t, "ExecutionAttempts"), dbtest.SQLiteColumnTypes(t, "ExecutionAttempts")
	inTable := map[string]bool{}
	for _, c := range table {
		inTable[c.name] = true
		if typ, ok := ms[c.name]; !ok || !strings.EqualFold(typ, c.mssql) {
			t.Errorf("table declares %s %s for SQL Server; dbo.ExecutionAttempts has %q (found %v)", c.name, c.mssql, typ, ok)
		}
		if typ, ok := lite[c.name]; !ok || !strings.EqualFold(typ, c.sqlite) {
			t.Errorf("table declares %s %s for SQLite; ExecutionAttempts has %q (found %v)", c.name, c.sqlite, typ, ok)
		}
	}
	for name := range ms {
		if !inTable[name] {
			t.Errorf("dbo.ExecutionAttempts has %s, which table does not declare", name)
		}
	}
	at := reflect.TypeFor[Attempt]()
	for i := range at.NumField() {
		if name := at.Field(i).Tag.Get("db"); name != "" && !inTable[name] {
			t.Errorf("Attempt.%s maps column %s, which table does not declare", at.Field(i).Name, name)
		}
	}
}
