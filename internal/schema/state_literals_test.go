package schema

import (
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/sqllint"
	"github.com/ledger-dev/ledger/migrations/mssql"
)

// stateEnums are the tables whose State column holds one of api's enumerations, by its
// number (the enumeration's order is the stored value).
var stateEnums = map[string][]string{
	"Runs":              api.RunState(0).EnumValues(),
	"ExecutionAttempts": api.AttemptState(0).EnumValues(),
	"LoadedReleases":    api.ReleaseState(0).EnumValues(),
}

// Every State literal in the SQL of every package (State = n, State <> n, State IN (...),
// SET State = n) is a value of the enumeration of its table's State in api, and the runs'
// order the migrations state ("0 queued, 1 leased, 2 ended") is api's. The statements are
// read from the Go source of every package (query sets, statement constants and the
// statements of tests' fixtures alike), each named by its field or constant.
func TestStateLiteralsMatchAPI(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	checked := 0
	for _, dir := range goPackageDirs(t, filepath.Join(root, "internal")) {
		for _, st := range packageStatements(t, dir) {
			rel, _ := filepath.Rel(root, st.file)
			for _, p := range stateLiteralProblems(st.text, strings.HasSuffix(st.file, "_mssql.go")) {
				t.Errorf("%s: statement %s: %s", rel, st.name, p)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("read %d statements from internal/...: the source reader is broken", checked)
	}
	doc := regexp.MustCompile(`State: 0 (\w+), 1 (\w+), 2 (\w+)\.`).FindStringSubmatch(readFS(t, mssql.FS, "000003_runs.up.sql"))
	if doc == nil || strings.Join(doc[1:], ",") != strings.Join(stateEnums["Runs"], ",") {
		t.Errorf("migrations/mssql/000003_runs.up.sql orders the run states %v; api.RunState %v", doc, stateEnums["Runs"])
	}
}

// A State literal outside its enumeration, or a State of a table the statement does not
// name, is found.
func TestStateLiteralProblems(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sql  string
		want int
	}{
		{"SELECT 1 FROM Runs r WHERE r.State = 2", 0},
		{"SELECT 1 FROM dbo.Runs AS r WHERE r.State = 3", 1},
		{"UPDATE Runs SET State = 1 WHERE State IN (0, 1)", 0},
		{"UPDATE Runs SET State = 1 WHERE State IN (0, 4)", 1},
		{"SELECT 1 FROM ExecutionAttempts a JOIN Runs r ON r.RunId = a.RunId WHERE a.State = 6 AND r.State <> 6", 1},
		{"SELECT 1 FROM ExecutionAttempts a JOIN Runs r ON r.RunId = a.RunId WHERE State = 0", 1},
		{"SELECT 1 FROM Operations WHERE State = 'running'", 0},
		{"SELECT COUNT(*) AS Runs FROM ExecutionAttempts WHERE State = 5", 0},
	} {
		if got := stateLiteralProblems(c.sql, true); len(got) != c.want {
			t.Errorf("%s: %d problems %v, want %d", c.sql, len(got), got, c.want)
		}
	}
}

// stateLiteralProblems checks the State literals of one SQL text.
func stateLiteralProblems(text string, nested bool) []string {
	toks, err := sqllint.Lex(text, nested)
	if err != nil {
		return nil // not SQL the lexer reads (a fragment): nothing to check
	}
	var out []string
	for _, stmt := range sqllint.SplitStatements(toks) {
		aliases, named := stateTables(stmt)
		for i, tok := range stmt {
			if !sqllint.IsWord(tok, "State") || tok.Text != "State" {
				continue
			}
			table := ""
			if i >= 2 && sqllint.IsSym(stmt[i-1], ".") {
				table = aliases[stmt[i-2].Text]
				if table == "" {
					continue // another table's State, or a CTE's
				}
			}
			values := stateValues(stmt, i+1)
			if len(values) == 0 {
				continue
			}
			if table == "" {
				if len(named) != 1 {
					if len(named) > 1 {
						out = append(out, fmt.Sprintf("State = %v names no table, and the statement reads %v", values, named))
					}
					continue
				}
				table = named[0]
			}
			enum := stateEnums[table]
			for _, v := range values {
				if v < 0 || v >= len(enum) {
					out = append(out, fmt.Sprintf("%s.State %d is no value of api's %v", table, v, enum))
				}
			}
		}
	}
	return out
}

// stateTables is the aliases of the enumerated tables a statement reads or writes (the
// table's own name too), and those tables, sorted.
func stateTables(stmt []sqllint.Token) (map[string]string, []string) {
	aliases := map[string]string{}
	seen := map[string]bool{}
	for i, tok := range stmt {
		if !sqllint.IsName(tok) || stateEnums[tok.Text] == nil || i+1 < len(stmt) && sqllint.IsSym(stmt[i+1], ".") {
			continue
		}
		// A table follows FROM, JOIN, UPDATE or INTO, or is dbo's: not "COUNT(*) AS Runs".
		prev := sqllint.TokAt(stmt, i-1)
		if i == 0 || !sqllint.IsWord(prev, "FROM", "JOIN", "UPDATE", "INTO") &&
			!(sqllint.IsSym(prev, ".") && sqllint.IsWord(sqllint.TokAt(stmt, i-2), "dbo")) {
			continue
		}
		seen[tok.Text] = true
		aliases[tok.Text] = tok.Text
		j := i + 1
		if j < len(stmt) && sqllint.IsWord(stmt[j], "AS") {
			j++
		}
		if j < len(stmt) && stmt[j].Kind == sqllint.TokWord && !aliasStop[strings.ToUpper(stmt[j].Text)] {
			aliases[stmt[j].Text] = tok.Text
		}
	}
	var named []string
	for n := range seen {
		named = append(named, n)
	}
	sort.Strings(named)
	return aliases, named
}

var aliasStop = map[string]bool{"WHERE": true, "ON": true, "JOIN": true, "INNER": true, "LEFT": true, "CROSS": true,
	"SET": true, "WITH": true, "ORDER": true, "GROUP": true, "LIMIT": true, "OUTPUT": true, "RETURNING": true,
	"UNION": true, "INDEXED": true, "VALUES": true, "SELECT": true, "DEFAULT": true, "OPTION": true, "AND": true, "OR": true}

// stateValues is the numbers compared with or assigned to State at stmt[i:]: = n, <> n,
// != n, [NOT] IN (n, ...); none when it is compared with anything else.
func stateValues(stmt []sqllint.Token, i int) []int {
	at := func(k int) sqllint.Token { return sqllint.TokAt(stmt, k) }
	if sqllint.IsSym(at(i), "=") || sqllint.IsSym(at(i), "<>") || sqllint.IsSym(at(i), "!=") {
		if at(i+1).Kind == sqllint.TokNumber {
			n, _ := strconv.Atoi(at(i + 1).Text)
			return []int{n}
		}
		return nil
	}
	if sqllint.IsWord(at(i), "NOT") {
		i++
	}
	if !sqllint.IsWord(at(i), "IN") || !sqllint.IsSym(at(i+1), "(") {
		return nil
	}
	var out []int
	for k := i + 2; k < len(stmt) && !sqllint.IsSym(stmt[k], ")"); k++ {
		switch {
		case stmt[k].Kind == sqllint.TokNumber:
			n, _ := strconv.Atoi(stmt[k].Text)
			out = append(out, n)
		case !sqllint.IsSym(stmt[k], ","):
			return nil // a subquery or parameters
		}
	}
	return out
}

type namedStatement struct {
	file, name, text string
}

// packageStatements reads the SQL texts of a package's Go files: each keyed element of a
// composite literal (a query set's field) and each package-level string constant or
// variable, evaluated through string concatenations of literals and of the package's
// other constants and variables (a function call's part is left out).
func packageStatements(t *testing.T, dir string) []namedStatement {
	t.Helper()
	fset := gotoken.NewFileSet()
	decls := map[string]ast.Expr{}
	var files []*ast.File
	var names []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files, names = append(files, f), append(names, path)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != gotoken.CONST && g.Tok != gotoken.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if len(vs.Names) == len(vs.Values) {
					for i, n := range vs.Names {
						decls[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	var eval func(e ast.Expr, depth int) string
	eval = func(e ast.Expr, depth int) string {
		if depth > 20 {
			return ""
		}
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == gotoken.STRING {
				s, _ := strconv.Unquote(e.Value)
				return s
			}
		case *ast.ParenExpr:
			return eval(e.X, depth+1)
		case *ast.BinaryExpr:
			if e.Op == gotoken.ADD {
				return eval(e.X, depth+1) + eval(e.Y, depth+1)
			}
		case *ast.Ident:
			if v, ok := decls[e.Name]; ok {
				return eval(v, depth+1)
			}
		}
		return ""
	}
	var out []namedStatement
	for i, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok {
					if s := eval(n.Value, 0); s != "" {
						out = append(out, namedStatement{names[i], k.Name, s})
					}
				}
			case *ast.ValueSpec:
				for j, id := range n.Names {
					if j < len(n.Values) {
						if s := eval(n.Values[j], 0); s != "" {
							out = append(out, namedStatement{names[i], id.Name, s})
						}
					}
				}
			}
			return true
		})
	}
	return out
}

// goPackageDirs is every directory under root holding Go files.
func goPackageDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && (len(dirs) == 0 || dirs[len(dirs)-1] != filepath.Dir(path)) {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}
