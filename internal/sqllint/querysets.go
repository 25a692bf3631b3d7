package sqllint

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// CompareQuerySets checks a store's query sets statement by statement, every registered
// dialect's set against every other's: sets are the package's registered sets by dialect
// name (sqldb.QuerySets.All), values of the store's queries struct, whose string fields
// (and []string fields, read as one text) hold each dialect's statement of one name. With
// SQL Server absent from CI this is what catches a dialect drifting: each store's test
// calls it, and a dialect added to the package is compared with no edit to that test.
//
// Every statement field is filled in every set, unless its tag says a dialect may leave it
// empty (`sqllint:"optional"`: runs' lockSubject, which SQLite's one writer does without);
// such a field is compared among the sets that fill it. The tag names no dialect, so a
// dialect added later that does without the statement too edits nothing.
func CompareQuerySets[Q any](t testing.TB, sets map[string]*Q) {
	t.Helper()
	if len(sets) < 2 {
		t.Fatalf("CompareQuerySets got %d %T sets; every dialect registers one, so there are at least two to compare", len(sets), *new(Q))
	}
	vals := make(map[string]reflect.Value, len(sets))
	for name, q := range sets {
		vals[name] = reflect.ValueOf(q).Elem()
	}
	for _, p := range compareSets(vals, syntaxes) {
		t.Errorf("%s", p)
	}
}

// syntax is what the comparison knows of one dialect's SQL: how its placeholders and row
// bounds are written, and the findings that concern its statements alone.
type syntax struct {
	title          string // as findings name the dialect
	nestedComments bool   // whether /* */ comments nest (Lex)
	placeholders   func([]Token) map[string]bool
	bounds         func([]Token) map[string]bool
	boundWords     string // what bounds rows, for a finding that a text has none
	own            func([]Token) []string
}

// syntaxes has one entry per dialect name (sqldb's Dialect.Name); a set registered under a
// name it lacks is refused by name, so a new dialect that writes its SQL differently adds
// its reading here.
var syntaxes = map[string]syntax{
	"sqlserver": {title: "SQL Server", nestedComments: true, placeholders: mssqlPlaceholders, bounds: mssqlBounds,
		boundWords: "TOP or FETCH", own: tsqlFindings},
	"sqlite": {title: "SQLite", placeholders: sqlitePlaceholders, bounds: sqliteBounds, boundWords: "LIMIT",
		own: func([]Token) []string { return nil }},
}

// compareSets returns what is wrong with the sets (struct values of one type by dialect
// name), each finding prefixed with the field's name.
func compareSets(sets map[string]reflect.Value, syn map[string]syntax) []string {
	names := make([]string, 0, len(sets))
	for name := range sets {
		names = append(names, name)
	}
	sort.Strings(names)
	typ := sets[names[0]].Type()
	var out []string
	for _, name := range names {
		if v := sets[name]; v.Type() != typ || v.Kind() != reflect.Struct {
			return []string{fmt.Sprintf("the sets are not values of one struct type: %s is %s, %s is %s", names[0], typ, name, v.Type())}
		}
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		texts := map[string]string{}
		var empty []string
		for _, name := range names {
			if text := fieldText(sets[name].Field(i)); text != "" {
				texts[name] = text
			} else {
				empty = append(empty, name)
			}
		}
		if len(texts) > 0 && len(empty) > 0 && f.Tag.Get("sqllint") != "optional" {
			out = append(out, fmt.Sprintf("%s: empty in %v, filled in %v (a statement some dialect does without says so in its field's tag, `sqllint:\"optional\"`)",
				f.Name, empty, keys(setOf(texts))))
		}
		for _, p := range compareTexts(texts, syn) {
			out = append(out, f.Name+": "+p)
		}
	}
	return out
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

// ComparePair returns what is wrong with one statement's SQL Server and SQLite texts (see
// compareTexts).
func ComparePair(mssql, sqlite string) []string {
	return compareTexts(map[string]string{"sqlserver": mssql, "sqlite": sqlite}, syntaxes)
}

// compareTexts returns what is wrong with one statement's texts by dialect name:
//   - a dialect has no syntax entry;
//   - the placeholders used differ between two texts (@pN on SQL Server, ?N on SQLite);
//   - one text is bounded and another is not, or their bounds are different arguments
//     (TOP (@pN) / OFFSET … FETCH NEXT @pN on SQL Server, LIMIT ?N on SQLite): a lost TOP
//     leaves answers right (pages are trimmed in Go) and the cost unbounded;
//   - what a dialect finds in its own text: on SQL Server, a statement that is not a
//     bounded key seek lacks OPTION (MAXDOP 1) (see NeedsMaxdop), or a table variable's
//     string column without COLLATE is compared with a table's column (see
//     CollationFindings).
func compareTexts(texts map[string]string, syn map[string]syntax) []string {
	type read struct {
		syntax
		placeholders, bounds map[string]bool
	}
	names := keys(setOf(texts))
	var out []string
	reads := make([]read, 0, len(names))
	for _, name := range names {
		sx, ok := syn[name]
		if !ok {
			out = append(out, fmt.Sprintf("no reading of the %q dialect's SQL: sqllint's syntaxes need an entry for it", name))
			continue
		}
		toks, err := Lex(texts[name], sx.nestedComments)
		if err != nil {
			out = append(out, sx.title+": "+err.Error())
			continue
		}
		for _, f := range sx.own(toks) {
			out = append(out, sx.title+": "+f)
		}
		reads = append(reads, read{sx, sx.placeholders(toks), sx.bounds(toks)})
	}
	for i, a := range reads {
		for _, b := range reads[i+1:] {
			if !sameSet(a.placeholders, b.placeholders) {
				out = append(out, fmt.Sprintf("placeholders differ: %s uses %v, %s %v", a.title, keys(a.placeholders), b.title, keys(b.placeholders)))
			}
			switch {
			case len(a.bounds) == 0 && len(b.bounds) > 0:
				out = append(out, fmt.Sprintf("%s bounds the rows (%v), %s does not (no %s)", b.title, keys(b.bounds), a.title, a.boundWords))
			case len(b.bounds) == 0 && len(a.bounds) > 0:
				out = append(out, fmt.Sprintf("%s bounds the rows (%v), %s does not (no %s)", a.title, keys(a.bounds), b.title, b.boundWords))
			case !sameSet(argBounds(a.bounds), argBounds(b.bounds)):
				out = append(out, fmt.Sprintf("bounds differ: %s %v, %s %v", a.title, keys(a.bounds), b.title, keys(b.bounds)))
			}
		}
	}
	return out
}

// tsqlFindings are what a T-SQL statement is judged for alone. Go sources are linted
// constant by constant, so a statement built from pieces (a table variable declared in
// one, compared in another) is judged whole only here.
func tsqlFindings(toks []Token) []string {
	var out []string
	for _, f := range CollationFindings(toks) {
		out = append(out, f.Msg)
	}
	for _, stmt := range SplitStatements(toks) {
		if why := NeedsMaxdop(stmt); why != "" && !hasMaxdop1(stmt) {
			out = append(out, fmt.Sprintf("statement %q lacks OPTION (MAXDOP 1): %s (SESSION_CONTEXT in a parallel plan, TSQL.md)",
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

func setOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
