package schema

// The SQL Server half of the project cannot be run here (no SQL Server, no Docker), so this
// linter is the one machine check it gets (TSQL.md, last section). It reads every T-SQL
// text, migrations/mssql/*.sql and each string constant of every internal/**/queries_mssql.go,
// and looks for SQLite dialect that leaked in and for T-SQL traps. It also reads
// migrations/sqlite/*.sql for the mirror leaks. Comments are dropped and string literals and
// quoted identifiers are never matched as words, so `-- LIMIT`, N'LIMIT' and [Limit] pass.

import (
	"errors"
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
	"unicode"
	"unicode/utf8"

	"github.com/ledger-dev/ledger/migrations/mssql"
	"github.com/ledger-dev/ledger/migrations/sqlite"
)

// ---------------------------------------------------------------------------------------
// Lexer

type tokKind int

const (
	tokWord   tokKind = iota // keyword or unquoted identifier; also @var, @@fn, #temp
	tokIdent                 // quoted identifier: [x], "x" or `x`; text is the bare name
	tokString                // string literal; text is the unescaped content
	tokNumber                // numeric literal
	tokSymbol                // operator or punctuation
)

type sqlToken struct {
	kind    tokKind
	text    string
	line    int  // line of the token's first character, from 1
	nPrefix bool // a string written N'...'
}

// lexSQL splits SQL text into tokens and drops comments. nestedComments is true for T-SQL,
// whose block comments nest, and false for SQLite, whose do not.
func lexSQL(src string, nestedComments bool) ([]sqlToken, error) {
	var toks []sqlToken
	line := 1
	i, n := 0, len(src)
	for i < n {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < n && src[i+1] == '-':
			for i < n && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && src[i+1] == '*':
			start := line
			depth := 0
			for {
				if i >= n {
					return nil, fmt.Errorf("line %d: unterminated block comment", start)
				}
				switch {
				case src[i] == '/' && i+1 < n && src[i+1] == '*' && (depth == 0 || nestedComments):
					depth++
					i += 2
				case src[i] == '*' && i+1 < n && src[i+1] == '/':
					depth--
					i += 2
				default:
					if src[i] == '\n' {
						line++
					}
					i++
				}
				if depth == 0 {
					break
				}
			}
		case c == '\'' || ((c == 'N' || c == 'n') && i+1 < n && src[i+1] == '\''):
			t := sqlToken{kind: tokString, line: line, nPrefix: c != '\''}
			if t.nPrefix {
				i++
			}
			text, next, lines, err := readQuoted(src, i, '\'')
			if err != nil {
				return nil, fmt.Errorf("line %d: unterminated string literal", line)
			}
			t.text = text
			toks = append(toks, t)
			i, line = next, line+lines
		case c == '[' || c == '"' || c == '`':
			closer := c
			if c == '[' {
				closer = ']'
			}
			text, next, lines, err := readQuoted(src, i, closer)
			if err != nil {
				return nil, fmt.Errorf("line %d: unterminated quoted identifier", line)
			}
			toks = append(toks, sqlToken{kind: tokIdent, text: text, line: line})
			i, line = next, line+lines
		case c >= '0' && c <= '9' || (c == '.' && i+1 < n && src[i+1] >= '0' && src[i+1] <= '9'):
			j := i + 1
			for j < n && (isWordByte(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, sqlToken{kind: tokNumber, text: src[i:j], line: line})
			i = j
		default:
			r, size := utf8.DecodeRuneInString(src[i:])
			if r == '_' || r == '@' || r == '#' || unicode.IsLetter(r) {
				j := i + size
				for j < n {
					r2, s2 := utf8.DecodeRuneInString(src[j:])
					if r2 != '_' && r2 != '@' && r2 != '#' && r2 != '$' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
						break
					}
					j += s2
				}
				toks = append(toks, sqlToken{kind: tokWord, text: src[i:j], line: line})
				i = j
				continue
			}
			if i+1 < n {
				switch two := src[i : i+2]; two {
				case "||", "<>", "!=", "<=", ">=", "!<", "!>", "::":
					toks = append(toks, sqlToken{kind: tokSymbol, text: two, line: line})
					i += 2
					continue
				}
			}
			toks = append(toks, sqlToken{kind: tokSymbol, text: src[i : i+size], line: line})
			i += size
		}
	}
	return toks, nil
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// readQuoted reads a quoted run starting at src[i] (the opening quote) up to closer; a
// doubled closer is an escaped one. It returns the content, the index after the closing
// quote and the number of newlines inside.
func readQuoted(src string, i int, closer byte) (string, int, int, error) {
	var b strings.Builder
	lines := 0
	for j := i + 1; j < len(src); j++ {
		switch {
		case src[j] == closer && j+1 < len(src) && src[j+1] == closer:
			b.WriteByte(closer)
			j++
		case src[j] == closer:
			return b.String(), j + 1, lines, nil
		default:
			if src[j] == '\n' {
				lines++
			}
			b.WriteByte(src[j])
		}
	}
	return "", 0, 0, errors.New("unterminated")
}

func tokAt(toks []sqlToken, i int) sqlToken {
	if i < 0 || i >= len(toks) {
		return sqlToken{kind: tokSymbol}
	}
	return toks[i]
}

// isWord reports whether t is an unquoted word equal (case-insensitively) to one of words.
func isWord(t sqlToken, words ...string) bool {
	if t.kind != tokWord {
		return false
	}
	for _, w := range words {
		if strings.EqualFold(t.text, w) {
			return true
		}
	}
	return false
}

func isSym(t sqlToken, s string) bool { return t.kind == tokSymbol && t.text == s }

// isName reports whether t names an object: an unquoted word or a quoted identifier.
func isName(t sqlToken) bool { return t.kind == tokWord || t.kind == tokIdent }

// splitStatements splits tokens at every ';' outside parentheses. Empty statements are
// dropped.
func splitStatements(toks []sqlToken) [][]sqlToken {
	var out [][]sqlToken
	depth, start := 0, 0
	for i, t := range toks {
		switch {
		case isSym(t, "("):
			depth++
		case isSym(t, ")"):
			depth--
		case isSym(t, ";") && depth <= 0:
			if i > start {
				out = append(out, toks[start:i])
			}
			start = i + 1
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

// ---------------------------------------------------------------------------------------
// Linter

type finding struct {
	line int
	msg  string
}

func (f finding) String() string { return fmt.Sprintf("line %d: %s", f.line, f.msg) }

var tsqlLeakWords = map[string]string{
	"LIMIT":         "LIMIT is SQLite: use TOP (n) or OFFSET ... FETCH",
	"RETURNING":     "RETURNING is SQLite: use OUTPUT ... INTO",
	"AUTOINCREMENT": "AUTOINCREMENT is SQLite: use IDENTITY or a client-made key",
	"TRUE":          "TRUE is not a T-SQL literal: use 1 (bit)",
	"FALSE":         "FALSE is not a T-SQL literal: use 0 (bit)",
	"STRFTIME":      "strftime is a SQLite date function: use SYSUTCDATETIME, DATEADD, CONVERT",
	"JULIANDAY":     "julianday is a SQLite date function: use DATEDIFF",
	"UNIXEPOCH":     "unixepoch is a SQLite date function: use DATEDIFF_BIG",
	"IFNULL":        "IFNULL is SQLite: use COALESCE or ISNULL",
}

// tsqlModuleStatement returns what toks[i] creates when it opens a statement that must be
// the first of its batch (Msg 111), with the index after its keywords, or "".
func tsqlModuleStatement(toks []sqlToken, i int) (string, int) {
	t := toks[i]
	if !isWord(t, "CREATE", "ALTER") {
		return "", i
	}
	if isWord(t, "ALTER") && isWord(tokAt(toks, i-1), "OR") && isWord(tokAt(toks, i-2), "CREATE") {
		return "", i // the ALTER of CREATE OR ALTER, read with its CREATE
	}
	j := i + 1
	if isWord(t, "CREATE") && isWord(tokAt(toks, j), "OR") && isWord(tokAt(toks, j+1), "ALTER") {
		j += 2
	}
	next := tokAt(toks, j)
	switch {
	case isWord(next, "TRIGGER", "FUNCTION", "VIEW", "PROCEDURE", "PROC"):
		return strings.ToUpper(next.text), j + 1
	case isWord(t, "CREATE") && isWord(next, "SCHEMA", "DEFAULT", "RULE"):
		return strings.ToUpper(next.text), j + 1
	case isWord(t, "CREATE") && isWord(next, "SECURITY") && isWord(tokAt(toks, j+1), "POLICY"):
		return "SECURITY POLICY", j + 2
	}
	return "", i
}

// lintTSQL checks one T-SQL batch. triggerTables holds the upper-cased names of the tables
// that have a DML trigger, on which OUTPUT needs INTO (Msg 334).
func lintTSQL(src string, triggerTables map[string]bool) []finding {
	toks, err := lexSQL(src, true)
	if err != nil {
		return []finding{{0, err.Error()}}
	}
	var out []finding
	add := func(t sqlToken, format string, args ...any) {
		out = append(out, finding{t.line, fmt.Sprintf(format, args...)})
	}

	perLine := map[int]int{}
	for _, t := range toks {
		perLine[t.line]++
	}
	modules := 0
	for i, t := range toks {
		next := tokAt(toks, i+1)
		if t.kind == tokWord {
			if msg, ok := tsqlLeakWords[strings.ToUpper(t.text)]; ok {
				add(t, "%s", msg)
			}
			if isWord(t, "DATETIME", "DATE") && isSym(next, "(") {
				add(t, "%s(...) is a SQLite date function: use SYSUTCDATETIME, DATEADD, CAST", t.text)
			}
			if isWord(t, "ON") && isWord(next, "CONFLICT") {
				add(t, "ON CONFLICT is SQLite: use MERGE or INSERT ... WHERE NOT EXISTS under UPDLOCK")
			}
			if isWord(t, "INSERT") && isWord(next, "OR") {
				add(t, "INSERT OR ... is SQLite: use MERGE or a conditional INSERT")
			}
			if isWord(t, "GO") && (perLine[t.line] == 1 || perLine[t.line] == 2 && tokAt(toks, i+1).kind == tokNumber && tokAt(toks, i+1).line == t.line) {
				add(t, "GO is a client batch separator, a syntax error for golang-migrate and the driver: one batch per file")
			}
		}
		if isSym(t, "||") {
			add(t, "|| is SQLite string concatenation (SQL Server 2016 lacks it): use + or CONCAT")
		}
		if isWord(t, "READPAST") && !hintListHas(toks, i, "READCOMMITTEDLOCK") {
			add(t, "READPAST without READCOMMITTEDLOCK in the same hint list: refused (Msg 650) under READ COMMITTED when READ_COMMITTED_SNAPSHOT is on (Azure SQL's default)")
		}
		if what, after := tsqlModuleStatement(toks, i); what != "" {
			modules++
			if i != 0 {
				add(t, "CREATE %s must be the first statement of its batch (Msg 111): put it alone in its file or wrap it in EXEC(N'...')", what)
			} else if modules > 1 {
				add(t, "a second CREATE %s in one batch: one per file", what)
			}
			if what == "SECURITY POLICY" || what == "SCHEMA" {
				// These end at their ';': nothing may follow them in the file.
				for j := after; j < len(toks); j++ {
					if isSym(toks[j], ";") {
						if j+1 < len(toks) {
							add(toks[j+1], "statements after CREATE %s in the same batch: keep it alone in its file", what)
						}
						break
					}
				}
			}
		}
	}

	for _, stmt := range splitStatements(toks) {
		if isWord(stmt[0], "EXEC", "EXECUTE") {
			// EXEC(N'...') runs its text as a batch of its own: lint it as one.
			if isSym(tokAt(stmt, 1), "(") && tokAt(stmt, 2).kind == tokString {
				for _, f := range lintTSQL(tokAt(stmt, 2).text, triggerTables) {
					out = append(out, finding{stmt[2].line + f.line - 1, "in EXEC(N'...'): " + f.msg})
				}
			}
			continue // @param OUTPUT of a procedure call
		}
		touched := ""
		for _, t := range stmt {
			if isName(t) && triggerTables[strings.ToUpper(t.text)] {
				touched = t.text
				break
			}
		}
		if touched == "" {
			continue
		}
		for k, t := range stmt {
			if !isWord(t, "OUTPUT") {
				continue
			}
			into := false
			for _, u := range stmt[k+1:] {
				if isWord(u, "INTO") {
					into = true
					break
				}
			}
			if !into {
				add(t, "OUTPUT without INTO on a statement touching %s, which has a trigger (Msg 334): use OUTPUT ... INTO @t", touched)
			}
		}
	}
	return out
}

// hintListHas reports whether the parenthesised list around toks[i] (a table hint list,
// WITH (...)) names word.
func hintListHas(toks []sqlToken, i int, word string) bool {
	start := i
	for depth := 0; start > 0; start-- {
		if isSym(toks[start-1], ")") {
			depth++
		} else if isSym(toks[start-1], "(") {
			if depth == 0 {
				break
			}
			depth--
		}
	}
	for j := start; j < len(toks) && !isSym(toks[j], ")"); j++ {
		if isWord(toks[j], word) {
			return true
		}
	}
	return false
}

var sqliteLeakWords = map[string]string{
	"NVARCHAR":          "NVARCHAR is a T-SQL type: use TEXT",
	"NCHAR":             "NCHAR is a T-SQL type: use TEXT",
	"UNIQUEIDENTIFIER":  "uniqueidentifier is a T-SQL type: use TEXT",
	"DATETIMEOFFSET":    "datetimeoffset is a T-SQL type: use DATETIME holding fixed-width UTC text",
	"ROWVERSION":        "rowversion is a T-SQL type: stamp Version from RowVersionCounter",
	"GETDATE":           "GETDATE is T-SQL: pass @now or use strftime('%Y-%m-%dT%H:%M:%fZ')",
	"GETUTCDATE":        "GETUTCDATE is T-SQL: pass @now or use strftime('%Y-%m-%dT%H:%M:%fZ')",
	"SYSUTCDATETIME":    "SYSUTCDATETIME is T-SQL: pass @now or use strftime('%Y-%m-%dT%H:%M:%fZ')",
	"SYSDATETIMEOFFSET": "SYSDATETIMEOFFSET is T-SQL: pass @now or use strftime('%Y-%m-%dT%H:%M:%fZ')",
	"NEWID":             "NEWID is T-SQL: ids are made by the service",
}

// lintSQLite checks one SQLite text for T-SQL that leaked in.
func lintSQLite(src string) []finding {
	toks, err := lexSQL(src, false)
	if err != nil {
		return []finding{{0, err.Error()}}
	}
	var out []finding
	add := func(t sqlToken, format string, args ...any) {
		out = append(out, finding{t.line, fmt.Sprintf(format, args...)})
	}
	for i, t := range toks {
		next := tokAt(toks, i+1)
		switch {
		case t.kind == tokWord:
			if msg, ok := sqliteLeakWords[strings.ToUpper(t.text)]; ok {
				add(t, "%s", msg)
			}
			if isWord(t, "TOP") && (isSym(next, "(") || next.kind == tokNumber) {
				add(t, "TOP is T-SQL: use LIMIT")
			}
			if isWord(t, "OUTPUT") && isWord(next, "INSERTED", "DELETED") {
				add(t, "OUTPUT inserted/deleted is T-SQL: use RETURNING")
			}
		case t.kind == tokString && t.nPrefix:
			add(t, "N'...' string literals are T-SQL: SQLite strings need no prefix")
		}
	}
	return out
}

// triggerTablesOf returns the upper-cased names of the tables that CREATE TRIGGER ... ON
// names in the given texts.
func triggerTablesOf(texts ...string) map[string]bool {
	tables := map[string]bool{}
	for _, src := range texts {
		toks, err := lexSQL(src, true)
		if err != nil {
			continue
		}
		for i := range toks {
			if what, after := tsqlModuleStatement(toks, i); what == "TRIGGER" {
				j := after
				for j < len(toks) && !isWord(toks[j], "ON") {
					j++
				}
				// The table name is the last part of the dotted name after ON.
				name := ""
				for j++; j < len(toks) && isName(toks[j]); j += 2 {
					name = toks[j].text
					if !isSym(tokAt(toks, j+1), ".") {
						break
					}
				}
				if name != "" {
					tables[strings.ToUpper(name)] = true
				}
			}
		}
	}
	return tables
}

// goSQL is one SQL text found in a Go file.
type goSQL struct {
	line int // line of the literal in the Go file
	text string
}

// sqlStarters open a SQL text in any case; sqlClauses only when written in upper case, so
// that Go strings such as "set lease" are not taken for SQL.
var (
	sqlStarters = map[string]bool{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true,
		"DECLARE": true, "EXEC": true, "EXECUTE": true, "CREATE": true, "ALTER": true, "DROP": true, "TRUNCATE": true}
	sqlClauses = map[string]bool{"WITH": true, "SET": true, "IF": true, "BEGIN": true, "WHERE": true, "AND": true,
		"OR": true, "ON": true, "ORDER": true, "GROUP": true, "LIMIT": true, "RETURNING": true, "OUTPUT": true,
		"OFFSET": true, "FROM": true, "VALUES": true, "JOIN": true, "INNER": true, "LEFT": true, "UNION": true,
		"TOP": true, "FETCH": true, "INTO": true, "COMMIT": true, "ROLLBACK": true, "THROW": true}
)

func looksLikeSQL(s string) bool {
	toks, err := lexSQL(s, true)
	if err != nil {
		return strings.Contains(strings.ToUpper(s), "SELECT ")
	}
	for _, t := range toks {
		if isSym(t, ";") {
			continue
		}
		if t.kind != tokWord {
			return false
		}
		up := strings.ToUpper(t.text)
		return sqlStarters[up] || sqlClauses[up] && t.text == up
	}
	return false
}

// constString evaluates e when it is a string constant made of literals and +.
func constString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != gotoken.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return constString(e.X)
	case *ast.BinaryExpr:
		if e.Op != gotoken.ADD {
			return "", false
		}
		l, ok1 := constString(e.X)
		r, ok2 := constString(e.Y)
		return l + r, ok1 && ok2
	}
	return "", false
}

// sqlInGoSource returns the SQL texts among the string constants of a Go file. Constant
// concatenations are joined first, so a statement split over several literals is read
// whole.
func sqlInGoSource(filename string, src []byte) ([]goSQL, error) {
	fset := gotoken.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []goSQL
	ast.Inspect(f, func(n ast.Node) bool {
		if _, ok := n.(*ast.ImportSpec); ok {
			return false
		}
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		s, ok := constString(e)
		if !ok {
			return true
		}
		if looksLikeSQL(s) {
			out = append(out, goSQL{line: fset.Position(e.Pos()).Line, text: s})
		}
		return false
	})
	return out, nil
}

// ---------------------------------------------------------------------------------------
// Locating files

// repoRoot returns the directory holding go.mod, walking up from the package directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package directory")
		}
		dir = parent
	}
}

// sqlFiles returns the names of the .sql files of an embedded migration folder, sorted.
func sqlFiles(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

func readFS(t *testing.T, fsys fs.FS, name string) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mssqlTriggerTables returns the tables with triggers in migrations/mssql, plus Runs,
// whose guard trigger TSQL.md names.
func mssqlTriggerTables(t *testing.T) map[string]bool {
	t.Helper()
	var texts []string
	for _, name := range sqlFiles(t, mssql.FS) {
		texts = append(texts, readFS(t, mssql.FS, name))
	}
	tables := triggerTablesOf(texts...)
	tables["RUNS"] = true
	return tables
}

// ---------------------------------------------------------------------------------------
// Tests

func TestMSSQLMigrationsHaveNoDialectLeaks(t *testing.T) {
	triggers := mssqlTriggerTables(t)
	names := sqlFiles(t, mssql.FS)
	if len(names) == 0 {
		t.Fatal("no .sql files embedded in migrations/mssql")
	}
	for _, name := range names {
		for _, f := range lintTSQL(readFS(t, mssql.FS, name), triggers) {
			t.Errorf("migrations/mssql/%s: %s", name, f)
		}
	}
}

func TestMSSQLQuerySetsHaveNoDialectLeaks(t *testing.T) {
	root := repoRoot(t)
	triggers := mssqlTriggerTables(t)
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != filepath.Join(root, "internal") &&
			(strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "queries_mssql.go" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Log("no internal/**/queries_mssql.go yet: nothing to scan")
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := sqlInGoSource(path, src)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		rel, _ := filepath.Rel(root, path)
		for _, q := range texts {
			for _, f := range lintTSQL(q.text, triggers) {
				t.Errorf("%s:%d (SQL %s)", rel, q.line, f)
			}
		}
	}
}

func TestSQLiteMigrationsHaveNoTSQLLeaks(t *testing.T) {
	names := sqlFiles(t, sqlite.FS)
	if len(names) == 0 {
		t.Fatal("no .sql files embedded in migrations/sqlite")
	}
	for _, name := range names {
		for _, f := range lintSQLite(readFS(t, sqlite.FS, name)) {
			t.Errorf("migrations/sqlite/%s: %s", name, f)
		}
	}
}

var migrationName = regexp.MustCompile(`^(\d{6})_([a-z0-9_]+)\.(up|down)\.sql$`)

func TestMigrationFoldersInStep(t *testing.T) {
	ms, sq := sqlFiles(t, mssql.FS), sqlFiles(t, sqlite.FS)
	if strings.Join(ms, "\n") != strings.Join(sq, "\n") {
		t.Errorf("migrations/mssql and migrations/sqlite differ:\nmssql:  %v\nsqlite: %v", ms, sq)
	}
	// Every version has exactly one title, an up and a down, and versions run 1, 2, 3, ...
	titles := map[int]string{}
	dirs := map[int]map[string]bool{}
	for _, name := range ms {
		m := migrationName.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("migrations/mssql/%s: name is not NNNNNN_title.up|down.sql", name)
			continue
		}
		v, _ := strconv.Atoi(m[1])
		if prev, ok := titles[v]; ok && prev != m[2] {
			t.Errorf("version %d has two titles: %s and %s", v, prev, m[2])
		}
		titles[v] = m[2]
		if dirs[v] == nil {
			dirs[v] = map[string]bool{}
		}
		dirs[v][m[3]] = true
	}
	for v := 1; v <= len(titles); v++ {
		if _, ok := titles[v]; !ok {
			t.Errorf("migration version %d is missing: versions must run from 1 without gaps", v)
			continue
		}
		if !dirs[v]["up"] || !dirs[v]["down"] {
			t.Errorf("migration %06d_%s needs both an up and a down file", v, titles[v])
		}
	}
}

func TestTriggerTablesAreKnown(t *testing.T) {
	// The OUTPUT check is only as good as this list: the guard trigger must be found in
	// the migrations themselves, not only in the fallback.
	var texts []string
	for _, name := range sqlFiles(t, mssql.FS) {
		texts = append(texts, readFS(t, mssql.FS, name))
	}
	if got := triggerTablesOf(texts...); !got["RUNS"] {
		t.Errorf("triggerTablesOf found %v in migrations/mssql; want RUNS (TR_Runs_Guard)", got)
	}
}

func TestTSQLLinterCatchesLeaks(t *testing.T) {
	triggers := map[string]bool{"RUNS": true}
	bad := []struct{ name, sql, want string }{
		{"limit", "SELECT RunId FROM dbo.Runs WHERE TenantId = @p1 LIMIT 1;", "LIMIT"},
		{"returning", "UPDATE dbo.Projects SET Active = 0 WHERE ProjectId = @p1 RETURNING Version;", "RETURNING"},
		{"on conflict", "INSERT INTO Tenants (TenantId) VALUES (@p1) ON CONFLICT DO NOTHING;", "ON CONFLICT"},
		{"insert or ignore", "INSERT OR IGNORE INTO Tenants (TenantId) VALUES (@p1);", "INSERT OR"},
		{"autoincrement", "CREATE TABLE t (Id INTEGER PRIMARY KEY AUTOINCREMENT);", "AUTOINCREMENT"},
		{"concat", "SELECT N'a' || N'b';", "||"},
		{"strftime", "SELECT strftime('%Y', 'now');", "strftime"},
		{"datetime function", "SELECT datetime('now');", "datetime(...)"},
		{"julianday", "SELECT julianday(DueAt) FROM Runs;", "julianday"},
		{"true literal", "SELECT 1 WHERE Active = TRUE;", "TRUE"},
		{"false literal", "UPDATE dbo.Projects SET Active = false;", "FALSE"},
		{"ifnull", "SELECT IFNULL(EndedAt, DueAt) FROM dbo.Runs;", "IFNULL"},
		{"go line", "CREATE TABLE t (a int);\nGO\nCREATE TABLE u (a int);", "GO is a client batch separator"},
		{"go with count", "SELECT 1;\n  go 2\n", "GO is a client batch separator"},
		{"trigger not first", "SET NOCOUNT ON;\nCREATE TRIGGER dbo.T ON dbo.Runs AFTER UPDATE AS BEGIN SET NOCOUNT ON; END;", "CREATE TRIGGER must be the first"},
		{"function not first", "BEGIN TRAN;\nCREATE FUNCTION dbo.f() RETURNS TABLE AS RETURN SELECT 1 AS x;", "CREATE FUNCTION must be the first"},
		{"create or alter view not first", "SELECT 1;\nCREATE OR ALTER VIEW dbo.v AS SELECT 1 AS x;", "CREATE VIEW must be the first"},
		{"procedure not first", "DROP PROCEDURE dbo.p;\nCREATE PROCEDURE dbo.p AS SELECT 1;", "CREATE PROCEDURE must be the first"},
		{"security policy not first", "DROP SECURITY POLICY dbo.P;\nCREATE SECURITY POLICY dbo.P ADD FILTER PREDICATE dbo.f(TenantId) ON dbo.Runs;", "CREATE SECURITY POLICY must be the first"},
		{"statement after security policy", "CREATE SECURITY POLICY dbo.P ADD FILTER PREDICATE dbo.f(TenantId) ON dbo.Runs WITH (STATE = ON);\nSELECT 1;", "statements after CREATE SECURITY POLICY"},
		{"two functions", "CREATE FUNCTION dbo.f() RETURNS TABLE AS RETURN SELECT 1 AS x;\nCREATE FUNCTION dbo.g() RETURNS TABLE AS RETURN SELECT 1 AS x;", "must be the first"},
		{"update output without into", "UPDATE dbo.Runs SET State = 1 OUTPUT inserted.RunId WHERE RunId = @p1;", "OUTPUT without INTO"},
		{"bracketed table", "UPDATE [dbo].[Runs] SET [State] = 1 OUTPUT inserted.[Version] WHERE [RunId] = @p1;", "OUTPUT without INTO"},
		{"cte update output", ";WITH c AS (SELECT TOP (1) * FROM dbo.Runs WITH (UPDLOCK, READPAST, ROWLOCK) WHERE State = 0 ORDER BY DueAt)\nUPDATE c SET State = 1 OUTPUT inserted.RunId;", "OUTPUT without INTO"},
		{"insert output without into", "INSERT INTO dbo.Runs (RunId) OUTPUT inserted.Version VALUES (@p1);", "OUTPUT without INTO"},
		{"unterminated string", "SELECT N'abc", "unterminated"},
		{"leak inside exec", "BEGIN TRAN;\nEXEC(N'SELECT RunId FROM dbo.Runs LIMIT 1');\nCOMMIT;", "in EXEC(N'...'): LIMIT"},
		{"output inside exec", "EXEC(N'UPDATE dbo.Runs SET State = 1 OUTPUT inserted.RunId WHERE RunId = 1');", "in EXEC(N'...'): OUTPUT without INTO"},
		{"trigger not first inside exec", "EXEC(N'SET NOCOUNT ON; CREATE OR ALTER TRIGGER dbo.T ON dbo.Runs AFTER UPDATE AS BEGIN SET NOCOUNT ON; END;');", "CREATE TRIGGER must be the first"},
		{"readpast alone", "DELETE TOP (100) FROM dbo.ConsoleSessions WITH (READPAST) WHERE TenantId = @p1;", "READPAST without READCOMMITTEDLOCK"},
		{"readpast with updlock only", "SELECT TOP (1) RunId FROM dbo.Runs WITH (UPDLOCK, READPAST, ROWLOCK) WHERE State = 0;", "READPAST without READCOMMITTEDLOCK"},
		{"readcommittedlock in another hint list", "SELECT r.RunId FROM dbo.Runs AS r WITH (READPAST) JOIN dbo.Projects AS p WITH (READCOMMITTEDLOCK) ON p.ProjectId = r.ProjectId;", "READPAST without READCOMMITTEDLOCK"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			got := lintTSQL(c.sql, triggers)
			for _, f := range got {
				if strings.Contains(f.msg, c.want) {
					return
				}
			}
			t.Errorf("lintTSQL(%q) = %v; want a finding containing %q", c.sql, got, c.want)
		})
	}

	good := []struct{ name, sql string }{
		{"words in comments and strings", "-- LIMIT 1 RETURNING TRUE\n/* GO\n ON CONFLICT /* nested || */ */\nSELECT N'LIMIT 1 || TRUE' AS [Limit], 'GO' AS [True];"},
		{"output into", "DECLARE @t TABLE (RunId uniqueidentifier, Version binary(8));\nUPDATE dbo.Runs SET State = 1 OUTPUT inserted.RunId, inserted.Version INTO @t WHERE RunId = @p1;\nSELECT RunId, Version FROM @t;"},
		{"output on a table without trigger", "UPDATE dbo.Projects SET Active = 0 OUTPUT inserted.Version WHERE ProjectId = @p1;"},
		{"procedure output parameter", "EXEC dbo.p @Runs = @x OUTPUT;"},
		{"trigger first after comments", "-- guard\n/* more */\nCREATE TRIGGER dbo.T ON dbo.Runs AFTER UPDATE AS BEGIN SET NOCOUNT ON; IF UPDATE(RunId) BEGIN THROW 50001, N'x', 1; END; END;"},
		{"wrapped in exec", "SET XACT_ABORT ON;\nBEGIN TRAN;\nEXEC(N'CREATE FUNCTION dbo.f() RETURNS TABLE AS RETURN SELECT 1 AS x');\nCOMMIT;"},
		{"time type and go as identifier part", "DECLARE @t time(3) = CAST(SYSUTCDATETIME() AS time(3)); SELECT GoLive, [GO] FROM dbo.x;"},
		{"top and offset fetch", "SELECT TOP (10) RunId FROM dbo.Runs WHERE TenantId = @p1 ORDER BY QueuedAt DESC OFFSET 0 ROWS FETCH NEXT 10 ROWS ONLY;"},
		{"alter table default", "ALTER TABLE dbo.x ADD CONSTRAINT DF_x DEFAULT (0) FOR y;"},
		{"readpast with readcommittedlock", "SELECT TOP (@p2) RunId FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK) WHERE State = 1 ORDER BY LeasedUntil;"},
		{"create or alter trigger wrapped in exec", "BEGIN TRAN;\nEXEC(N'CREATE OR ALTER TRIGGER dbo.T ON dbo.Runs AFTER UPDATE AS BEGIN SET NOCOUNT ON; THROW 50001, N''x'', 1; END;');\nCOMMIT;"},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			if got := lintTSQL(c.sql, triggers); len(got) != 0 {
				t.Errorf("lintTSQL(%q) = %v; want no findings", c.sql, got)
			}
		})
	}
}

func TestSQLiteLinterCatchesLeaks(t *testing.T) {
	bad := []struct{ name, sql, want string }{
		{"top paren", "SELECT TOP (1) RunId FROM Runs;", "TOP is T-SQL"},
		{"top number", "SELECT TOP 1 RunId FROM Runs;", "TOP is T-SQL"},
		{"nvarchar", "CREATE TABLE t (a NVARCHAR(64) NOT NULL);", "NVARCHAR"},
		{"getdate", "UPDATE Runs SET DueAt = GETDATE();", "GETDATE"},
		{"sysutcdatetime", "UPDATE Runs SET DueAt = SYSUTCDATETIME();", "SYSUTCDATETIME"},
		{"output inserted", "UPDATE Runs SET State = 1 OUTPUT inserted.RunId WHERE RunId = ?;", "OUTPUT inserted"},
		{"n string", "SELECT N'x';", "N'...'"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			got := lintSQLite(c.sql)
			for _, f := range got {
				if strings.Contains(f.msg, c.want) {
					return
				}
			}
			t.Errorf("lintSQLite(%q) = %v; want a finding containing %q", c.sql, got, c.want)
		})
	}
	good := "-- TOP (1) NVARCHAR GETDATE\nSELECT 'TOP (1)' AS [Top], Version FROM Runs WHERE State = 0 ORDER BY DueAt LIMIT 1 RETURNING *;\n/* /* not nested in SQLite */"
	if got := lintSQLite(good); len(got) != 0 {
		t.Errorf("lintSQLite(%q) = %v; want no findings", good, got)
	}
}

func TestGoQuerySetScan(t *testing.T) {
	// The queries_mssql.go path must find SQL in constants, joined across +, and skip
	// ordinary strings, or the scan of the real query sets would pass without reading.
	src := `package runs

import "fmt"

const claimRun = "WITH c AS (SELECT TOP (1) RunId FROM dbo.Runs WHERE State = 0) " +
	"UPDATE c SET State = 1 OUTPUT inserted.RunId;"

var queries = struct{ Get, List string }{
	Get:  ` + "`SELECT RunId FROM dbo.Runs WHERE RunId = @p1 LIMIT 1`" + `,
	List: "SELECT RunId FROM dbo.Runs WHERE TenantId = @p1 ORDER BY QueuedAt DESC",
}

var errNotSQL = fmt.Errorf("set lease: %w limit reached, true story", nil)
`
	texts, err := sqlInGoSource("queries_mssql.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 3 {
		t.Fatalf("sqlInGoSource found %d SQL texts, want 3: %+v", len(texts), texts)
	}
	if !strings.Contains(texts[0].text, "OUTPUT inserted.RunId;") || !strings.HasPrefix(texts[0].text, "WITH c AS") {
		t.Errorf("the concatenated constant was not joined: %q", texts[0].text)
	}
	var all []string
	for _, q := range texts {
		for _, f := range lintTSQL(q.text, map[string]bool{"RUNS": true}) {
			all = append(all, f.msg)
		}
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"OUTPUT without INTO", "LIMIT"} {
		if !strings.Contains(joined, want) {
			t.Errorf("findings %q lack %q", all, want)
		}
	}
	if len(all) != 2 {
		t.Errorf("got %d findings, want 2: %q", len(all), all)
	}
}
