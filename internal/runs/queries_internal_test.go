package runs

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

// runTable mirrors Runs in both dialects, column for column: on SQL Server the type, and
// for a string column the collation, that the migrations give the column (@t is declared from
// it: a table variable's string column otherwise takes the database's default collation, Msg
// 468 against Runs' BIN2 columns); on SQLite the declared type of the migrated table. And
// every column of Runs that a Run field maps is in the table.
func TestRunTableMirrorsRuns(t *testing.T) {
	t.Parallel()
	want := dbtest.MSSQLColumnTypes(t, "Runs")
	for _, c := range runTable {
		typ, ok := want[c.name]
		if c.name == "Version" && typ == "rowversion" {
			typ = "binary(8)" // OUTPUT gives the rowversion's bytes
		}
		if !ok || !strings.EqualFold(typ, c.mssql) {
			t.Errorf("runTable declares %s %s for SQL Server; dbo.Runs has %q (found %v)", c.name, c.mssql, typ, ok)
		}
	}
	lite := dbtest.SQLiteColumnTypes(t, "Runs")
	for _, c := range runTable {
		if typ, ok := lite[c.name]; !ok || !strings.EqualFold(typ, c.sqlite) {
			t.Errorf("runTable declares %s %s for SQLite; Runs has %q (found %v)", c.name, c.sqlite, typ, ok)
		}
	}
	inTable := map[string]bool{}
	for _, c := range runTable {
		inTable[c.name] = true
	}
	for f := range structFields(reflect.TypeFor[Run]()) {
		if name := f.Tag.Get("db"); name != "" && name != "-" && !inTable[name] {
			t.Errorf("Run.%s maps column %s, which runTable does not declare", f.Name, name)
		}
	}
	for _, stmt := range []string{mssqlQueries.endLeased, mssqlQueries.requeue, mssqlQueries.endQueued} {
		if !strings.Contains(stmt, "Subject nvarchar(256) COLLATE Latin1_General_100_BIN2") {
			t.Errorf("a statement filling @t does not declare it from runTable: %.120s", stmt)
		}
	}
}

// structFields yields the fields of struct type t, those of embedded structs in their place.
func structFields(t reflect.Type) func(func(reflect.StructField) bool) {
	return func(yield func(reflect.StructField) bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				for g := range structFields(f.Type) {
					if !yield(g) {
						return
					}
				}
				continue
			}
			if !yield(f) {
				return
			}
		}
	}
}
