package calls

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

// table mirrors CallRecords in both dialects, column for column (the type and, on SQL
// Server, the collation the migrations give it), and holds every column a Call field maps.
func TestColumnTableMirrorsCalls(t *testing.T) {
	t.Parallel()
	ms, lite := dbtest.MSSQLColumnTypes(t, "CallRecords"), dbtest.SQLiteColumnTypes(t, "CallRecords")
	inTable := map[string]bool{}
	for _, c := range table {
		inTable[c.name] = true
		if typ, ok := ms[c.name]; !ok || !strings.EqualFold(typ, c.mssql) {
			t.Errorf("table declares %s %s for SQL Server; dbo.CallRecords has %q (found %v)", c.name, c.mssql, typ, ok)
		}
		if typ, ok := lite[c.name]; !ok || !strings.EqualFold(typ, c.sqlite) {
			t.Errorf("table declares %s %s for SQLite; CallRecords has %q (found %v)", c.name, c.sqlite, typ, ok)
		}
	}
	for name := range ms {
		if !inTable[name] {
			t.Errorf("dbo.CallRecords has %s, which table does not declare", name)
		}
	}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
			} else if name := f.Tag.Get("db"); name != "" && !inTable[name] {
				t.Errorf("Call.%s maps column %s, which table does not declare", f.Name, name)
			}
		}
	}
	walk(reflect.TypeFor[Call]())
}
