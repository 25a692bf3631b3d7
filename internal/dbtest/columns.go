package dbtest

import (
	"context"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqllint"
	mssqlmig "github.com/ledger-dev/ledger/migrations/mssql"
)

// SQLiteColumnTypes is each column of a table of a freshly migrated SQLite database with
// its declared type.
func SQLiteColumnTypes(t testing.TB, table string) map[string]string {
	t.Helper()
	db := SQLite().Open(t, Options{})
	rows, err := db.Raw().QueryContext(context.Background(), `SELECT name, type FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		out[name] = typ
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// MSSQLColumnTypes reads each column of dbo.<table> and its type (with COLLATE, without
// NULL/NOT NULL and defaults) from the CREATE TABLE and ALTER TABLE ... ADD statements of
// migrations/mssql: what a store's column table is held to.
func MSSQLColumnTypes(t testing.TB, table string) map[string]string {
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
				if sqllint.IsWord(stmt[i], "CREATE", "ALTER") && sqllint.IsWord(stmt[i+1], "TABLE") && stmt[i+4].Text == table {
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
	if len(out) == 0 {
		t.Fatalf("read no column of dbo.%s from migrations/mssql", table)
	}
	return out
}

// MirrorsTable holds a store's column table to its table in both dialects' migrations: each
// column has the type (and on SQL Server the collation) the migrations give it (a rowversion
// may be declared binary(8), what OUTPUT gives of it), every column of the table is in cols,
// and so is every column a db tag of row (a struct, its embedded structs included) names.
func MirrorsTable[T any](t *testing.T, table string, cols []sqldb.Column[T]) {
	t.Helper()
	ms, lite := MSSQLColumnTypes(t, table), SQLiteColumnTypes(t, table)
	declared := map[string]bool{}
	for _, c := range cols {
		declared[c.Name] = true
		typ, ok := ms[c.Name]
		if typ == "rowversion" && strings.EqualFold(c.MSSQL, "binary(8)") {
			typ = c.MSSQL
		}
		if !ok || !strings.EqualFold(typ, c.MSSQL) {
			t.Errorf("the column table declares %s %s for SQL Server; dbo.%s has %q (found %v)", c.Name, c.MSSQL, table, typ, ok)
		}
		if typ, ok := lite[c.Name]; !ok || !strings.EqualFold(typ, c.SQLite) {
			t.Errorf("the column table declares %s %s for SQLite; %s has %q (found %v)", c.Name, c.SQLite, table, typ, ok)
		}
	}
	for name := range ms {
		if !declared[name] {
			t.Errorf("dbo.%s has %s, which the column table does not declare", table, name)
		}
	}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
			} else if name := f.Tag.Get("db"); name != "" && name != "-" && !declared[name] {
				t.Errorf("%s.%s maps column %s, which the column table does not declare", rt.Name(), f.Name, name)
			}
		}
	}
	walk(reflect.TypeFor[T]())
}
