// Package sqllint is the machine check the SQL Server half gets without a server (TSQL.md,
// last sections): a lexer for T-SQL and SQLite texts, the dialect-leak and trap lint run
// over every migration and query set, and the statement-by-statement comparison of a
// store's two query sets (querysets.go).
package sqllint

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ---------------------------------------------------------------------------------------
// Lexer

// TokKind is what a Token is.
type TokKind int

const (
	TokWord   TokKind = iota // keyword or unquoted identifier; also @var, @@fn, #temp
	TokIdent                 // quoted identifier: [x], "x" or `x`; text is the bare name
	TokString                // string literal; text is the unescaped content
	TokNumber                // numeric literal
	TokSymbol                // operator or punctuation
)

// Token is one lexed token of a SQL text.
type Token struct {
	Kind    TokKind
	Text    string
	Line    int  // line of the token's first character, from 1
	NPrefix bool // a string written N'...'
}

// Lex splits SQL text into tokens and drops comments. nestedComments is true for T-SQL,
// whose block comments nest, and false for SQLite, whose do not.
func Lex(src string, nestedComments bool) ([]Token, error) {
	var toks []Token
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
			t := Token{Kind: TokString, Line: line, NPrefix: c != '\''}
			if t.NPrefix {
				i++
			}
			text, next, lines, err := readQuoted(src, i, '\'')
			if err != nil {
				return nil, fmt.Errorf("line %d: unterminated string literal", line)
			}
			t.Text = text
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
			toks = append(toks, Token{Kind: TokIdent, Text: text, Line: line})
			i, line = next, line+lines
		case c >= '0' && c <= '9' || (c == '.' && i+1 < n && src[i+1] >= '0' && src[i+1] <= '9'):
			j := i + 1
			for j < n && (isWordByte(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, Token{Kind: TokNumber, Text: src[i:j], Line: line})
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
				toks = append(toks, Token{Kind: TokWord, Text: src[i:j], Line: line})
				i = j
				continue
			}
			if i+1 < n {
				switch two := src[i : i+2]; two {
				case "||", "<>", "!=", "<=", ">=", "!<", "!>", "::":
					toks = append(toks, Token{Kind: TokSymbol, Text: two, Line: line})
					i += 2
					continue
				}
			}
			toks = append(toks, Token{Kind: TokSymbol, Text: src[i : i+size], Line: line})
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

// TokAt returns toks[i], or an empty symbol outside the slice.
func TokAt(toks []Token, i int) Token {
	if i < 0 || i >= len(toks) {
		return Token{Kind: TokSymbol}
	}
	return toks[i]
}

// IsWord reports whether t is an unquoted word equal (case-insensitively) to one of words.
func IsWord(t Token, words ...string) bool {
	if t.Kind != TokWord {
		return false
	}
	for _, w := range words {
		if strings.EqualFold(t.Text, w) {
			return true
		}
	}
	return false
}

// IsSym reports whether t is the symbol s.
func IsSym(t Token, s string) bool { return t.Kind == TokSymbol && t.Text == s }

// IsName reports whether t names an object: an unquoted word or a quoted identifier.
func IsName(t Token) bool { return t.Kind == TokWord || t.Kind == TokIdent }

// SplitStatements splits tokens at every ';' outside parentheses. Empty statements are
// dropped.
func SplitStatements(toks []Token) [][]Token {
	var out [][]Token
	depth, start := 0, 0
	for i, t := range toks {
		switch {
		case IsSym(t, "("):
			depth++
		case IsSym(t, ")"):
			depth--
		case IsSym(t, ";") && depth <= 0:
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

// Finding is one lint result: the line in the text (from 1) and what is wrong.
type Finding struct {
	Line int
	Msg  string
}

func (f Finding) String() string { return fmt.Sprintf("line %d: %s", f.Line, f.Msg) }

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
func tsqlModuleStatement(toks []Token, i int) (string, int) {
	t := toks[i]
	if !IsWord(t, "CREATE", "ALTER") {
		return "", i
	}
	if IsWord(t, "ALTER") && IsWord(TokAt(toks, i-1), "OR") && IsWord(TokAt(toks, i-2), "CREATE") {
		return "", i // the ALTER of CREATE OR ALTER, read with its CREATE
	}
	j := i + 1
	if IsWord(t, "CREATE") && IsWord(TokAt(toks, j), "OR") && IsWord(TokAt(toks, j+1), "ALTER") {
		j += 2
	}
	next := TokAt(toks, j)
	switch {
	case IsWord(next, "TRIGGER", "FUNCTION", "VIEW", "PROCEDURE", "PROC"):
		return strings.ToUpper(next.Text), j + 1
	case IsWord(t, "CREATE") && IsWord(next, "SCHEMA", "DEFAULT", "RULE"):
		return strings.ToUpper(next.Text), j + 1
	case IsWord(t, "CREATE") && IsWord(next, "SECURITY") && IsWord(TokAt(toks, j+1), "POLICY"):
		return "SECURITY POLICY", j + 2
	}
	return "", i
}

// LintTSQL checks one T-SQL batch. triggerTables holds the upper-cased names of the tables
// that have a DML trigger, on which OUTPUT needs INTO (Msg 334).
func LintTSQL(src string, triggerTables map[string]bool) []Finding {
	toks, err := Lex(src, true)
	if err != nil {
		return []Finding{{0, err.Error()}}
	}
	var out []Finding
	add := func(t Token, format string, args ...any) {
		out = append(out, Finding{t.Line, fmt.Sprintf(format, args...)})
	}

	perLine := map[int]int{}
	for _, t := range toks {
		perLine[t.Line]++
	}
	modules := 0
	for i, t := range toks {
		next := TokAt(toks, i+1)
		if t.Kind == TokWord {
			if msg, ok := tsqlLeakWords[strings.ToUpper(t.Text)]; ok {
				add(t, "%s", msg)
			}
			if IsWord(t, "DATETIME", "DATE") && IsSym(next, "(") {
				add(t, "%s(...) is a SQLite date function: use SYSUTCDATETIME, DATEADD, CAST", t.Text)
			}
			if IsWord(t, "ON") && IsWord(next, "CONFLICT") {
				add(t, "ON CONFLICT is SQLite: use INSERT ... WHERE NOT EXISTS under UPDLOCK, HOLDLOCK")
			}
			if IsWord(t, "MERGE") && (i == 0 || IsSym(TokAt(toks, i-1), ";") || IsSym(TokAt(toks, i-1), ")")) {
				add(t, "MERGE is refused: one that changes a filtered unique index's filter column can raise a false duplicate-key error; write an UPDATE and an INSERT")
			}
			if IsWord(t, "DATABASE_PRINCIPAL_ID") && !insideTry(toks, i) {
				add(t, "DATABASE_PRINCIPAL_ID sees a role only for its members and ALTER ANY ROLE holders: an existence check in a migration must sit in BEGIN TRY ... BEGIN CATCH that accepts 15023/15247")
			}
			if IsWord(t, "INSERT") && IsWord(next, "OR") {
				add(t, "INSERT OR ... is SQLite: use a conditional INSERT")
			}
			if IsWord(t, "GO") && (perLine[t.Line] == 1 || perLine[t.Line] == 2 && TokAt(toks, i+1).Kind == TokNumber && TokAt(toks, i+1).Line == t.Line) {
				add(t, "GO is a client batch separator, a syntax error for golang-migrate and the driver: one batch per file")
			}
		}
		if IsSym(t, "||") {
			add(t, "|| is SQLite string concatenation (SQL Server 2016 lacks it): use + or CONCAT")
		}
		if IsWord(t, "READPAST") && !hintListHas(toks, i, "READCOMMITTEDLOCK") {
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
					if IsSym(toks[j], ";") {
						if j+1 < len(toks) {
							add(toks[j+1], "statements after CREATE %s in the same batch: keep it alone in its file", what)
						}
						break
					}
				}
			}
		}
	}

	out = append(out, CollationFindings(toks)...)

	for _, stmt := range SplitStatements(toks) {
		if IsWord(stmt[0], "EXEC", "EXECUTE") {
			// EXEC(N'...') runs its text as a batch of its own: lint it as one.
			if IsSym(TokAt(stmt, 1), "(") && TokAt(stmt, 2).Kind == TokString {
				for _, f := range LintTSQL(TokAt(stmt, 2).Text, triggerTables) {
					out = append(out, Finding{stmt[2].Line + f.Line - 1, "in EXEC(N'...'): " + f.Msg})
				}
			}
			continue // @param OUTPUT of a procedure call
		}
		touched := ""
		for _, t := range stmt {
			if IsName(t) && triggerTables[strings.ToUpper(t.Text)] {
				touched = t.Text
				break
			}
		}
		if touched == "" {
			continue
		}
		for k, t := range stmt {
			if !IsWord(t, "OUTPUT") {
				continue
			}
			into := false
			for _, u := range stmt[k+1:] {
				if IsWord(u, "INTO") {
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

// insideTry reports whether toks[i] lies between a BEGIN TRY and its END TRY.
func insideTry(toks []Token, i int) bool {
	depth := 0
	for j := 0; j < i; j++ {
		switch {
		case IsWord(toks[j], "BEGIN") && IsWord(TokAt(toks, j+1), "TRY"):
			depth++
		case IsWord(toks[j], "END") && IsWord(TokAt(toks, j+1), "TRY"):
			depth--
		}
	}
	return depth > 0
}

// hintListHas reports whether the parenthesised list around toks[i] (a table hint list,
// WITH (...)) names word.
func hintListHas(toks []Token, i int, word string) bool {
	start := i
	for depth := 0; start > 0; start-- {
		if IsSym(toks[start-1], ")") {
			depth++
		} else if IsSym(toks[start-1], "(") {
			if depth == 0 {
				break
			}
			depth--
		}
	}
	for j := start; j < len(toks) && !IsSym(toks[j], ")"); j++ {
		if IsWord(toks[j], word) {
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

// LintSQLite checks one SQLite text for T-SQL that leaked in.
func LintSQLite(src string) []Finding {
	toks, err := Lex(src, false)
	if err != nil {
		return []Finding{{0, err.Error()}}
	}
	var out []Finding
	add := func(t Token, format string, args ...any) {
		out = append(out, Finding{t.Line, fmt.Sprintf(format, args...)})
	}
	for i, t := range toks {
		next := TokAt(toks, i+1)
		switch {
		case t.Kind == TokWord:
			if msg, ok := sqliteLeakWords[strings.ToUpper(t.Text)]; ok {
				add(t, "%s", msg)
			}
			if IsWord(t, "TOP") && (IsSym(next, "(") || next.Kind == TokNumber) {
				add(t, "TOP is T-SQL: use LIMIT")
			}
			if IsWord(t, "OUTPUT") && IsWord(next, "INSERTED", "DELETED") {
				add(t, "OUTPUT inserted/deleted is T-SQL: use RETURNING")
			}
		case t.Kind == TokString && t.NPrefix:
			add(t, "N'...' string literals are T-SQL: SQLite strings need no prefix")
		}
	}
	return out
}

// TriggerTablesOf returns the upper-cased names of the tables that CREATE TRIGGER ... ON
// names in the given texts.
func TriggerTablesOf(texts ...string) map[string]bool {
	tables := map[string]bool{}
	for _, src := range texts {
		toks, err := Lex(src, true)
		if err != nil {
			continue
		}
		for i := range toks {
			if what, after := tsqlModuleStatement(toks, i); what == "TRIGGER" {
				j := after
				for j < len(toks) && !IsWord(toks[j], "ON") {
					j++
				}
				// The table name is the last part of the dotted name after ON.
				name := ""
				for j++; j < len(toks) && IsName(toks[j]); j += 2 {
					name = toks[j].Text
					if !IsSym(TokAt(toks, j+1), ".") {
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

// GoSQL is one SQL text found in a Go file.
type GoSQL struct {
	Line int // line of the literal in the Go file
	Text string
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
	toks, err := Lex(s, true)
	if err != nil {
		return strings.Contains(strings.ToUpper(s), "SELECT ")
	}
	for _, t := range toks {
		if IsSym(t, ";") {
			continue
		}
		if t.Kind != TokWord {
			return false
		}
		up := strings.ToUpper(t.Text)
		return sqlStarters[up] || sqlClauses[up] && t.Text == up
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

// SQLInGoSource returns the SQL texts among the string constants of a Go file. Constant
// concatenations are joined first, so a statement split over several literals is read
// whole.
func SQLInGoSource(filename string, src []byte) ([]GoSQL, error) {
	fset := gotoken.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []GoSQL
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
			out = append(out, GoSQL{Line: fset.Position(e.Pos()).Line, Text: s})
		}
		return false
	})
	return out, nil
}

// ---------------------------------------------------------------------------------------
// Collation of table variables and temp tables

// stringTypes are the T-SQL types whose columns carry a collation.
var stringTypes = map[string]bool{"NVARCHAR": true, "VARCHAR": true, "NCHAR": true, "CHAR": true,
	"NTEXT": true, "TEXT": true, "SYSNAME": true}

// comparisonOps are the operators whose operands must agree on a collation.
var comparisonOps = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true,
	"!<": true, "!>": true}

// CollationFindings reports each comparison of a table variable's or temp table's string
// column declared without COLLATE with a column of another table when neither operand has
// an explicit COLLATE. The table variable's column takes the database's default collation
// and the table's column its own (BIN2 for every identifier here): two implicit collations
// that differ are a conflict SQL Server refuses (Msg 468) on every database whose default
// collation is not the table's. Parameters and literals are coercible-default and take the
// column's collation, so they never conflict. Only qualified references (alias.Column) are
// judged: every statement here qualifies the columns of a join.
func CollationFindings(toks []Token) []Finding {
	uncollated := map[string]map[string]bool{} // table variable -> upper-cased string columns without COLLATE
	for i := range toks {
		name, open := "", -1
		switch {
		case IsWord(toks[i], "DECLARE") && strings.HasPrefix(TokAt(toks, i+1).Text, "@") &&
			IsWord(TokAt(toks, i+2), "TABLE") && IsSym(TokAt(toks, i+3), "("):
			name, open = toks[i+1].Text, i+3
		case IsWord(toks[i], "CREATE") && IsWord(TokAt(toks, i+1), "TABLE") &&
			strings.HasPrefix(TokAt(toks, i+2).Text, "#") && IsSym(TokAt(toks, i+3), "("):
			name, open = toks[i+2].Text, i+3
		default:
			continue
		}
		cols := map[string]bool{}
		element := func(el []Token) {
			if len(el) > 1 && IsName(el[0]) && stringTypes[strings.ToUpper(el[1].Text)] {
				for _, u := range el {
					if IsWord(u, "COLLATE") {
						return
					}
				}
				cols[strings.ToUpper(el[0].Text)] = true
			}
		}
		depth, start := 0, open+1
	scan:
		for j := open; j < len(toks); j++ {
			switch {
			case IsSym(toks[j], "("):
				depth++
			case IsSym(toks[j], ")"):
				depth--
				if depth == 0 {
					element(toks[start:j])
					break scan
				}
			case IsSym(toks[j], ",") && depth == 1:
				element(toks[start:j])
				start = j + 1
			}
		}
		uncollated[strings.ToUpper(name)] = cols
	}
	if len(uncollated) == 0 {
		return nil
	}
	// Aliases: "@t AS t", "@t t", "#x AS x"; a temp table is also its own qualifier.
	alias := map[string]string{}
	for i, t := range toks {
		up := strings.ToUpper(t.Text)
		if _, ok := uncollated[up]; !ok || t.Kind != TokWord {
			continue
		}
		if strings.HasPrefix(up, "#") {
			alias[up] = up
		}
		j := i + 1
		if IsWord(TokAt(toks, j), "AS") {
			j++
		}
		if a := TokAt(toks, j); IsName(a) && !strings.HasPrefix(a.Text, "@") && !sqlReserved[strings.ToUpper(a.Text)] {
			alias[strings.ToUpper(a.Text)] = up
		}
	}
	// ref reports the table variable of a qualified reference ending at toks[k] (the column)
	// and whether that column is declared without COLLATE.
	ref := func(k int) (string, bool) {
		if !IsSym(TokAt(toks, k-1), ".") || !IsName(TokAt(toks, k)) {
			return "", false
		}
		tv, ok := alias[strings.ToUpper(TokAt(toks, k-2).Text)]
		if !ok {
			return "", false
		}
		return tv, uncollated[tv][strings.ToUpper(toks[k].Text)]
	}
	isColumn := func(t Token) bool {
		return IsName(t) && !strings.HasPrefix(t.Text, "@") && !sqlReserved[strings.ToUpper(t.Text)]
	}
	var out []Finding
	for i, op := range toks {
		if op.Kind != TokSymbol || !comparisonOps[op.Text] {
			continue
		}
		// The operands next to the operator: a column reference, maybe qualified, with no
		// COLLATE on either side.
		l, r := i-1, i+1
		if !isColumn(TokAt(toks, l)) || !isColumn(TokAt(toks, r)) || IsWord(TokAt(toks, l-1), "COLLATE") ||
			IsWord(TokAt(toks, r+1), "COLLATE") ||
			IsSym(TokAt(toks, r+1), ".") && IsWord(TokAt(toks, r+3), "COLLATE") {
			continue
		}
		rEnd := r
		if IsSym(TokAt(toks, r+1), ".") {
			rEnd = r + 2
		}
		ltv, lbad := ref(l)
		rtv, rbad := ref(rEnd)
		switch {
		case lbad && rtv == "":
			out = append(out, Finding{op.Line, fmt.Sprintf("%s.%s of %s (declared without COLLATE) compared with a table's column: declare it with the collation of the column it mirrors or add COLLATE (Msg 468 where the database's default collation differs)",
				toks[l-2].Text, toks[l].Text, ltv)})
		case rbad && ltv == "":
			out = append(out, Finding{op.Line, fmt.Sprintf("%s.%s of %s (declared without COLLATE) compared with a table's column: declare it with the collation of the column it mirrors or add COLLATE (Msg 468 where the database's default collation differs)",
				toks[rEnd-2].Text, toks[rEnd].Text, rtv)})
		}
	}
	return out
}

// sqlReserved are words that follow a table name without being its alias, and words that
// are not column names next to an operator.
var sqlReserved = map[string]bool{"WHERE": true, "ON": true, "JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true,
	"CROSS": true, "OUTER": true, "SET": true, "OUTPUT": true, "VALUES": true, "SELECT": true, "GROUP": true,
	"ORDER": true, "UNION": true, "WITH": true, "OPTION": true, "TABLE": true, "FROM": true, "AND": true, "OR": true,
	"NOT": true, "NULL": true, "CASE": true, "WHEN": true, "THEN": true, "ELSE": true, "END": true, "IS": true,
	"EXISTS": true, "IN": true, "DEFAULT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "APPLY": true}
