package runs

import (
	"context"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqllint"
	mssqlmig "github.com/ledger-dev/ledger/migrations/mssql"
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
	want := runsColumnTypes(t)
	for _, c := range runTable {
		typ, ok := want[c.name]
		if c.name == "Version" && typ == "rowversion" {
			typ = "binary(8)" // OUTPUT gives the rowversion's bytes
		}
		if !ok || !strings.EqualFold(typ, c.mssql) {
			t.Errorf("runTable declares %s %s for SQL Server; dbo.Runs has %q (found %v)", c.name, c.mssql, typ, ok)
		}
	}
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	rows, err := db.Raw().QueryContext(context.Background(), `SELECT name, type FROM pragma_table_info('Runs')`)
	if err != nil {
		t.Fatal(err)
	}
	lite := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		lite[name] = typ
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
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

// runsColumnTypes reads each column of dbo.Runs and its type (with COLLATE, without
// NULL/NOT NULL and defaults) from the CREATE TABLE and ALTER TABLE ... ADD statements of
// migrations/mssql.
func runsColumnTypes(t *testing.T) map[string]string {
	t.Helper()
	names, err := fs.Glob(mssqlmig.FS, "*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	out := map[string]string{}
	for _, name := range names {
		b, err := fs.ReadFile(mssqlmig.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		toks, err := sqllint.Lex(string(b), true)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range sqllint.SplitStatements(toks) {
			var body []sqllint.Token
			for i := 0; i+4 < len(stmt); i++ {
				if sqllint.IsWord(stmt[i], "CREATE", "ALTER") && sqllint.IsWord(stmt[i+1], "TABLE") && stmt[i+4].Text == "Runs" {
					body = stmt[i+5:]
					break
				}
			}
			if len(body) == 0 {
				continue
			}
			if sqllint.IsWord(body[0], "ADD") {
				body = body[1:]
			} else if sqllint.IsSym(body[0], "(") {
				body = body[1:]
			} else {
				continue
			}
			depth := 0
			var el []sqllint.Token
			flush := func() {
				if len(el) >= 2 && el[0].Kind == sqllint.TokIdent {
					var typ []string
					for i := 1; i < len(el); i++ {
						if sqllint.IsWord(el[i], "NOT", "NULL", "CONSTRAINT", "DEFAULT", "IDENTITY") {
							break
						}
						typ = append(typ, el[i].Text)
					}
					out[el[0].Text] = strings.NewReplacer(" ( ", "(", " )", ")").Replace(strings.Join(typ, " "))
				}
				el = nil
			}
			for _, tok := range body {
				switch {
				case sqllint.IsSym(tok, "("):
					depth++
				case sqllint.IsSym(tok, ")"):
					depth--
				}
				if depth < 0 || depth == 0 && sqllint.IsSym(tok, ",") {
					flush()
					if depth < 0 {
						break
					}
					continue
				}
				el = append(el, tok)
			}
			flush()
		}
	}
	if len(out) < 30 {
		t.Fatalf("read %d columns of dbo.Runs from migrations/mssql; want them all: %v", len(out), out)
	}
	return out
}
