package sqllint

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// CompareQuerySets checks a store's two query sets statement by statement: mssql and
// sqlite are values of the store's queries struct, whose string fields (and []string
// fields, read as one text) hold each dialect's statement of one name. With SQL Server
// absent from CI this is what catches a dialect drifting: each store's test calls it.
// A field left empty in one dialect (SQLite's lockSubject: one writer needs no lock) is
// skipped.
func CompareQuerySets(t testing.TB, mssql, sqlite any) {
	t.Helper()
	ms, lite := reflect.ValueOf(mssql), reflect.ValueOf(sqlite)
	if ms.Kind() == reflect.Pointer {
		ms, lite = ms.Elem(), lite.Elem()
	}
	if ms.Type() != lite.Type() || ms.Kind() != reflect.Struct {
		t.Fatalf("CompareQuerySets wants two values of one struct type, got %s and %s", ms.Type(), lite.Type())
	}
	for i := range ms.NumField() {
		name := ms.Type().Field(i).Name
		a, b := fieldText(ms.Field(i)), fieldText(lite.Field(i))
		if a == "" || b == "" {
			continue
		}
		for _, p := range ComparePair(a, b) {
			t.Errorf("%s: %s", name, p)
		}
	}
}

// fieldText is a string field's statement, or a []string field's statements joined.
func fieldText(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = v.Index(i).String()
		}
		return strings.Join(parts, ";\n")
	}
	return ""
}

// ComparePair returns what is wrong with one statement's two texts:
//   - the placeholders used differ (@pN on SQL Server, ?N on SQLite);
//   - one text is bounded and the other is not, or their bounds are different arguments
//     (TOP (@pN) / OFFSET … FETCH NEXT @pN on SQL Server, LIMIT ?N on SQLite): a lost TOP
//     leaves answers right (pages are trimmed in Go) and the cost unbounded;
//   - a SQL Server statement that is not a bounded key seek lacks OPTION (MAXDOP 1)
//     (see NeedsMaxdop);
//   - a table variable's string column without COLLATE is compared with a table's column
//     (see CollationFindings).
func ComparePair(mssql, sqlite string) []string {
	var out []string
	mt, err := Lex(mssql, true)
	if err != nil {
		return []string{"T-SQL: " + err.Error()}
	}
	st, err := Lex(sqlite, false)
	if err != nil {
		return []string{"SQLite: " + err.Error()}
	}
	mp, sp := mssqlPlaceholders(mt), sqlitePlaceholders(st)
	if !sameSet(mp, sp) {
		out = append(out, fmt.Sprintf("placeholders differ: SQL Server uses %v, SQLite %v", keys(mp), keys(sp)))
	}
	mb, sb := mssqlBounds(mt), sqliteBounds(st)
	switch {
	case len(mb) == 0 && len(sb) > 0:
		out = append(out, fmt.Sprintf("SQLite bounds the rows (LIMIT %v), SQL Server does not (no TOP or FETCH)", keys(sb)))
	case len(sb) == 0 && len(mb) > 0:
		out = append(out, fmt.Sprintf("SQL Server bounds the rows (%v), SQLite does not (no LIMIT)", keys(mb)))
	case !sameSet(argBounds(mb), argBounds(sb)):
		out = append(out, fmt.Sprintf("bounds differ: SQL Server %v, SQLite %v", keys(mb), keys(sb)))
	}
	// Go sources are linted constant by constant, so a statement built from pieces (a table
	// variable declared in one, compared in another) is judged whole only here.
	for _, f := range CollationFindings(mt) {
		out = append(out, "SQL Server: "+f.Msg)
	}
	for _, stmt := range SplitStatements(mt) {
		if why := NeedsMaxdop(stmt); why != "" && !hasMaxdop1(stmt) {
			out = append(out, fmt.Sprintf("SQL Server statement %q lacks OPTION (MAXDOP 1): %s (SESSION_CONTEXT in a parallel plan, TSQL.md)",
				head(stmt), why))
		}
	}
	return out
}

// NeedsMaxdop says why a T-SQL statement is not a bounded key seek, or "" when it is one.
// The security predicate reads SESSION_CONTEXT on every access, and a parallel plan on a
// reset pooled session may read it wrong (TSQL.md, third reading), so every statement that
// can read a range gets a serial plan: one with a TOP or FETCH of more than one row, a
// GROUP BY, DISTINCT, an aggregate, or an ORDER BY without TOP (1). A statement that finds
// its rows by key equality has none of these and gets a trivial (serial) plan.
func NeedsMaxdop(stmt []Token) string {
	hasTopOne := false
	for i, t := range stmt {
		if IsWord(t, "TOP") && IsSym(TokAt(stmt, i+1), "(") && TokAt(stmt, i+2).Text == "1" && IsSym(TokAt(stmt, i+3), ")") {
			hasTopOne = true
		}
	}
	for i, t := range stmt {
		next := TokAt(stmt, i+1)
		switch {
		case IsWord(t, "TOP"):
			arg := next
			if IsSym(next, "(") {
				arg = TokAt(stmt, i+2)
			}
			if arg.Text != "1" {
				return "TOP (" + arg.Text + ") reads a range"
			}
		case IsWord(t, "FETCH", "OFFSET"):
			return t.Text + " reads a range"
		case IsWord(t, "GROUP") && IsWord(next, "BY"):
			return "GROUP BY reads a range"
		case IsWord(t, "DISTINCT"):
			return "DISTINCT reads a range"
		case IsWord(t, "COUNT", "COUNT_BIG", "SUM", "MIN", "MAX", "AVG", "STRING_AGG") && IsSym(next, "("):
			return "the aggregate " + strings.ToUpper(t.Text) + " reads a range"
		case IsWord(t, "ORDER") && IsWord(next, "BY") && !hasTopOne:
			return "ORDER BY without TOP (1) reads a range"
		}
	}
	if why := selectScans(stmt, hasTopOne); why != "" {
		return why
	}
	return ""
}

// selectScans says why a plain SELECT of a table reads a range though it has no TOP, ORDER
// BY or aggregate: it has no WHERE, or its WHERE compares no column with an argument
// (RevokedAt IS NULL, State = 1: a filter, not a key), so nothing bounds the rows it
// reads. A WHERE with an equality on an argument is taken for a key seek; which columns
// are keys the lint cannot know, so a seek on a tenant's whole range passes here and is
// left to the statement's reading check.
func selectScans(stmt []Token, hasTopOne bool) string {
	if len(stmt) == 0 || !IsWord(stmt[0], "SELECT") || hasTopOne {
		return ""
	}
	depth, from, where := 0, -1, -1
	for i, t := range stmt {
		switch {
		case IsSym(t, "("):
			depth++
		case IsSym(t, ")"):
			depth--
		case depth == 0 && IsWord(t, "FROM") && from < 0:
			from = i
		case depth == 0 && IsWord(t, "WHERE") && where < 0:
			where = i
		}
	}
	if from < 0 || IsSym(TokAt(stmt, from+1), "(") || strings.HasPrefix(TokAt(stmt, from+1).Text, "@") {
		return "" // no table, a derived table or a table variable: judged by what it reads
	}
	if where < 0 {
		return "a SELECT of a table without WHERE reads it all"
	}
	depth = 0
	for i := where + 1; i < len(stmt); i++ {
		t := stmt[i]
		switch {
		case IsSym(t, "("):
			depth++
		case IsSym(t, ")"):
			depth--
		case depth == 0 && IsWord(t, "OPTION"):
			i = len(stmt)
		case depth == 0 && IsSym(t, "="):
			if _, ok := mssqlArg(TokAt(stmt, i+1)); ok {
				return ""
			}
			if _, ok := mssqlArg(TokAt(stmt, i-1)); ok {
				return ""
			}
		}
	}
	return "a SELECT whose WHERE compares no column with an argument reads a range (a scan)"
}

// hasMaxdop1 reports whether the statement ends in OPTION (…, MAXDOP 1, …).
func hasMaxdop1(stmt []Token) bool {
	for i, t := range stmt {
		if !IsWord(t, "OPTION") || !IsSym(TokAt(stmt, i+1), "(") {
			continue
		}
		for j := i + 2; j < len(stmt) && !IsSym(stmt[j], ")"); j++ {
			if IsWord(stmt[j], "MAXDOP") && TokAt(stmt, j+1).Text == "1" {
				return true
			}
		}
	}
	return false
}

func head(stmt []Token) string {
	var words []string
	for _, t := range stmt[:min(len(stmt), 6)] {
		words = append(words, t.Text)
	}
	return strings.Join(words, " ") + " …"
}

// mssqlPlaceholders returns the N of every @pN.
func mssqlPlaceholders(toks []Token) map[string]bool {
	out := map[string]bool{}
	for _, t := range toks {
		if n, ok := mssqlArg(t); ok {
			out[n] = true
		}
	}
	return out
}

func mssqlArg(t Token) (string, bool) {
	if t.Kind != TokWord || len(t.Text) < 3 || !strings.EqualFold(t.Text[:2], "@p") {
		return "", false
	}
	if _, err := strconv.Atoi(t.Text[2:]); err != nil {
		return "", false
	}
	return "p" + t.Text[2:], true
}

// sqlitePlaceholders returns the N of every ?N (an unnumbered ? is reported as "?").
func sqlitePlaceholders(toks []Token) map[string]bool {
	out := map[string]bool{}
	for i, t := range toks {
		if n, ok := sqliteArg(toks, i); ok && IsSym(t, "?") {
			out[n] = true
		}
	}
	return out
}

func sqliteArg(toks []Token, i int) (string, bool) {
	if !IsSym(TokAt(toks, i), "?") {
		return "", false
	}
	if n := TokAt(toks, i+1); n.Kind == TokNumber {
		return "p" + n.Text, true
	}
	return "?", true
}

// mssqlBounds returns the arguments of every TOP (x), TOP x and FETCH NEXT|FIRST x.
func mssqlBounds(toks []Token) map[string]bool {
	out := map[string]bool{}
	for i, t := range toks {
		j := -1
		switch {
		case IsWord(t, "TOP") && IsSym(TokAt(toks, i+1), "("):
			j = i + 2
		case IsWord(t, "TOP"):
			j = i + 1
		case IsWord(t, "FETCH") && IsWord(TokAt(toks, i+1), "NEXT", "FIRST"):
			j = i + 2
		}
		if j >= 0 {
			out[boundText(TokAt(toks, j), func(t Token) (string, bool) { return mssqlArg(t) })] = true
		}
	}
	return out
}

// sqliteBounds returns the argument of every LIMIT.
func sqliteBounds(toks []Token) map[string]bool {
	out := map[string]bool{}
	for i, t := range toks {
		if !IsWord(t, "LIMIT") {
			continue
		}
		if n, ok := sqliteArg(toks, i+1); ok {
			out[n] = true
		} else {
			out[TokAt(toks, i+1).Text] = true
		}
	}
	return out
}

func boundText(t Token, arg func(Token) (string, bool)) string {
	if n, ok := arg(t); ok {
		return n
	}
	return t.Text
}

// argBounds keeps the bounds that are arguments (pN): literal bounds such as TOP (1) in a
// scalar subquery differ between the dialects by design (SQLite takes a scalar subquery's
// first row without LIMIT 1).
func argBounds(b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range b {
		if strings.HasPrefix(k, "p") {
			out[k] = true
		}
	}
	return out
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
