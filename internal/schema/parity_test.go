package schema

// The seed parity check (DESIGN.md section 3): the seed's six attempt-ledger tables
// (shared/seeds/001_*.txt) keep every column, type, nullability, default, key and index in
// migrations/mssql/000006_attempt_ledger.up.sql, and whatever the migration adds to them
// is on DeclaredAdditions. A second check keeps the SQL Server and SQLite migrations
// declaring the same tables, columns, keys and indexes.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqllint"
	"github.com/ledger-dev/ledger/migrations/mssql"
	"github.com/ledger-dev/ledger/migrations/sqlite"
)

// ---------------------------------------------------------------------------------------
// DDL model

type ddlColumn struct {
	Name        string
	Type        string // lower case without spaces: nvarchar(64), datetimeoffset, rowversion
	Collation   string
	Null        string // "NULL", "NOT NULL", or "" when the DDL does not say
	Default     string // canonical expression, "" without a default
	DefaultName string // constraint name of a named default
	Extra       []string
}

// definition is the column's canonical form, as DeclaredAdditions writes it.
func (c *ddlColumn) definition() string {
	parts := []string{c.Type}
	if c.Collation != "" {
		parts = append(parts, "COLLATE "+c.Collation)
	}
	if c.Null != "" {
		parts = append(parts, c.Null)
	}
	if c.Default != "" {
		if c.DefaultName != "" {
			parts = append(parts, "CONSTRAINT "+c.DefaultName)
		}
		parts = append(parts, "DEFAULT "+c.Default)
	}
	parts = append(parts, c.Extra...)
	return strings.Join(parts, " ")
}

type ddlKey struct {
	Name      string
	Clustered string // "", "CLUSTERED" or "NONCLUSTERED"
	Cols      []string
}

func (k *ddlKey) String() string {
	if k == nil {
		return "none"
	}
	s := "PRIMARY KEY "
	if k.Clustered != "" {
		s += k.Clustered + " "
	}
	return fmt.Sprintf("%s %s(%s)", k.Name, s, strings.Join(k.Cols, ", "))
}

type ddlFK struct {
	Name     string
	Cols     []string
	RefTable string
	RefCols  []string
	Rest     string // ON DELETE / ON UPDATE actions
}

// shape is the foreign key without its name.
func (f ddlFK) shape() string {
	s := fmt.Sprintf("(%s) REFERENCES %s (%s)", strings.Join(f.Cols, ", "), f.RefTable, strings.Join(f.RefCols, ", "))
	if f.Rest != "" {
		s += " " + f.Rest
	}
	return s
}

type ddlIndex struct {
	Name      string
	Unique    bool
	Clustered string
	Cols      []string
	Include   []string
	Filter    string
	Rest      string // WITH (...) options and the like
}

// definition is the index's canonical form, as DeclaredAdditions writes it.
func (ix ddlIndex) definition() string {
	var b strings.Builder
	if ix.Unique {
		b.WriteString("UNIQUE ")
	}
	if ix.Clustered != "" {
		b.WriteString(ix.Clustered + " ")
	}
	fmt.Fprintf(&b, "INDEX (%s)", strings.Join(ix.Cols, ", "))
	if len(ix.Include) > 0 {
		fmt.Fprintf(&b, " INCLUDE (%s)", strings.Join(ix.Include, ", "))
	}
	if ix.Filter != "" {
		b.WriteString(" WHERE " + ix.Filter)
	}
	if ix.Rest != "" {
		b.WriteString(" " + ix.Rest)
	}
	return b.String()
}

type ddlTable struct {
	Name    string
	Columns []*ddlColumn
	PK      *ddlKey
	FKs     []ddlFK
	Indexes []ddlIndex
	Others  []string // CHECK and UNIQUE constraints, canonical text
}

func (t *ddlTable) column(name string) (*ddlColumn, int) {
	for i, c := range t.Columns {
		if c.Name == name {
			return c, i
		}
	}
	return nil, -1
}

type ddlSchema struct {
	Tables   map[string]*ddlTable
	Order    []string // table names in the order they were created
	Unparsed []string // statements that are not table or index DDL
	indexes  []pendingIndex
}

type pendingIndex struct {
	table string
	ix    ddlIndex
}

// ---------------------------------------------------------------------------------------
// Rendering

// renderKeywords are upper-cased when an expression is rendered; other words keep their
// case, quoted identifiers lose their quotes.
var renderKeywords = map[string]bool{"AND": true, "OR": true, "NOT": true, "IS": true, "NULL": true, "IN": true,
	"BETWEEN": true, "LIKE": true, "ON": true, "DELETE": true, "UPDATE": true, "CASCADE": true, "SET": true,
	"NO": true, "ACTION": true, "DEFAULT": true, "WITH": true, "ASC": true, "DESC": true}

// render gives tokens a canonical text: single spaces, none inside parentheses or before
// commas, keywords upper-cased, identifiers unquoted, strings re-quoted. dropN drops the N
// of N'...' (for comparing with SQLite).
func render(toks []sqllint.Token, dropN bool) string {
	var b strings.Builder
	prev := sqllint.Token{Kind: sqllint.TokSymbol, Text: "("}
	for _, t := range toks {
		text := t.Text
		switch t.Kind {
		case sqllint.TokWord:
			if renderKeywords[strings.ToUpper(text)] {
				text = strings.ToUpper(text)
			}
		case sqllint.TokString:
			text = "'" + strings.ReplaceAll(text, "'", "''") + "'"
			if t.NPrefix && !dropN {
				text = "N" + text
			}
		}
		space := true
		switch {
		case sqllint.IsSym(prev, "(") || sqllint.IsSym(prev, "."):
			space = false
		case sqllint.IsSym(t, ")") || sqllint.IsSym(t, ",") || sqllint.IsSym(t, "."):
			space = false
		case sqllint.IsSym(t, "(") && (prev.Kind == sqllint.TokWord || prev.Kind == sqllint.TokIdent) && !renderKeywords[strings.ToUpper(prev.Text)]:
			space = false // a function call or a type's arguments
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(text)
		prev = t
	}
	return b.String()
}

// ---------------------------------------------------------------------------------------
// Parser

// parseDDL reads CREATE TABLE, CREATE INDEX and ALTER TABLE ... ADD statements. SET,
// BEGIN TRANSACTION and COMMIT are skipped; any other statement goes to Unparsed.
func parseDDL(src string, nestedComments bool) (*ddlSchema, error) {
	toks, err := sqllint.Lex(src, nestedComments)
	if err != nil {
		return nil, err
	}
	s := &ddlSchema{Tables: map[string]*ddlTable{}}
	for _, stmt := range sqllint.SplitStatements(toks) {
		if err := s.statement(stmt); err != nil {
			return nil, fmt.Errorf("line %d: %w", stmt[0].Line, err)
		}
	}
	for _, p := range s.indexes {
		tbl, ok := s.Tables[p.table]
		if !ok {
			return nil, fmt.Errorf("index %s on unknown table %s", p.ix.Name, p.table)
		}
		tbl.Indexes = append(tbl.Indexes, p.ix)
	}
	return s, nil
}

func (s *ddlSchema) statement(st []sqllint.Token) error {
	w := func(i int, words ...string) bool { return sqllint.IsWord(sqllint.TokAt(st, i), words...) }
	if g := unguarded(st); len(g) != len(st) {
		return s.statement(g)
	}
	switch {
	case w(0, "SET"), w(0, "COMMIT"), w(0, "BEGIN") && w(1, "TRAN", "TRANSACTION"):
		return nil
	case w(0, "CREATE") && w(1, "TABLE"):
		return s.createTable(st)
	case w(0, "CREATE") && (w(1, "INDEX") || w(1, "UNIQUE", "CLUSTERED", "NONCLUSTERED")):
		return s.createIndex(st)
	case w(0, "ALTER") && w(1, "TABLE"):
		return s.alterTable(st)
	case w(0, "DROP") && w(1, "INDEX"):
		return s.dropIndex(st)
	case w(0, "DROP") && w(1, "TABLE"):
		return s.dropTable(st)
	case w(0, "EXEC", "EXECUTE") && sqllint.IsSym(sqllint.TokAt(st, 1), "(") && sqllint.TokAt(st, 2).Kind == sqllint.TokString && sqllint.IsSym(sqllint.TokAt(st, 3), ")") && len(st) == 4:
		// EXEC(N'...') runs its text as a batch of its own, compiled when it runs (a
		// migration uses it for statements that name a column the same file adds): its DDL
		// is the migration's DDL.
		inner, err := sqllint.Lex(sqllint.TokAt(st, 2).Text, true)
		if err != nil {
			return err
		}
		for _, stmt := range sqllint.SplitStatements(inner) {
			if err := s.statement(stmt); err != nil {
				return err
			}
		}
		return nil
	}
	s.Unparsed = append(s.Unparsed, render(st, false))
	return nil
}

// dropIndex reads DROP INDEX [IF EXISTS] name (SQLite) or DROP INDEX name ON table (T-SQL).
func (s *ddlSchema) dropIndex(st []sqllint.Token) error {
	at := 2
	if sqllint.IsWord(sqllint.TokAt(st, 2), "IF") && sqllint.IsWord(sqllint.TokAt(st, 3), "EXISTS") {
		at = 4
	}
	name, _, err := dottedName(st, at)
	if err != nil {
		return err
	}
	for i, p := range s.indexes {
		if p.ix.Name == name {
			s.indexes = append(s.indexes[:i], s.indexes[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("DROP INDEX of unknown index %s", name)
}

// dropTable reads DROP TABLE name: the table and its indexes go.
func (s *ddlSchema) dropTable(st []sqllint.Token) error {
	name, _, err := dottedName(st, 2)
	if err != nil {
		return err
	}
	if _, ok := s.Tables[name]; !ok {
		return fmt.Errorf("DROP TABLE of unknown table %s", name)
	}
	delete(s.Tables, name)
	for i, n := range s.Order {
		if n == name {
			s.Order = append(s.Order[:i], s.Order[i+1:]...)
			break
		}
	}
	kept := s.indexes[:0]
	for _, p := range s.indexes {
		if p.table != name {
			kept = append(kept, p)
		}
	}
	s.indexes = kept
	return nil
}

// dottedName reads a dotted name at st[i] and returns its last part and the index after it.
func dottedName(st []sqllint.Token, i int) (string, int, error) {
	last := ""
	for {
		t := sqllint.TokAt(st, i)
		if !sqllint.IsName(t) {
			return "", i, fmt.Errorf("expected a name, found %q", t.Text)
		}
		last = t.Text
		i++
		if !sqllint.IsSym(sqllint.TokAt(st, i), ".") {
			return last, i, nil
		}
		i++
	}
}

// group returns the tokens inside the parentheses opening at st[i] and the index after
// the closing one.
func group(st []sqllint.Token, i int) ([]sqllint.Token, int, error) {
	if !sqllint.IsSym(sqllint.TokAt(st, i), "(") {
		return nil, i, fmt.Errorf("expected (, found %q", sqllint.TokAt(st, i).Text)
	}
	depth := 0
	for j := i; j < len(st); j++ {
		switch {
		case sqllint.IsSym(st[j], "("):
			depth++
		case sqllint.IsSym(st[j], ")"):
			depth--
			if depth == 0 {
				return st[i+1 : j], j + 1, nil
			}
		}
	}
	return nil, i, fmt.Errorf("unbalanced parentheses")
}

// splitCommas splits tokens at the commas outside parentheses.
func splitCommas(toks []sqllint.Token) [][]sqllint.Token {
	var out [][]sqllint.Token
	depth, start := 0, 0
	for i, t := range toks {
		switch {
		case sqllint.IsSym(t, "("):
			depth++
		case sqllint.IsSym(t, ")"):
			depth--
		case sqllint.IsSym(t, ",") && depth == 0:
			out = append(out, toks[start:i])
			start = i + 1
		}
	}
	return append(out, toks[start:])
}

// columnList reads "(a, b DESC)" at st[i]: names, with DESC kept.
func columnList(st []sqllint.Token, i int) ([]string, int, error) {
	inner, next, err := group(st, i)
	if err != nil {
		return nil, i, err
	}
	var cols []string
	for _, part := range splitCommas(inner) {
		if len(part) == 0 || !sqllint.IsName(part[0]) {
			return nil, i, fmt.Errorf("bad column list %q", render(inner, false))
		}
		col := part[0].Text
		switch {
		case len(part) == 1 || len(part) == 2 && sqllint.IsWord(part[1], "ASC"):
		case len(part) == 2 && sqllint.IsWord(part[1], "DESC"):
			col += " DESC"
		default:
			return nil, i, fmt.Errorf("bad column list entry %q", render(part, false))
		}
		cols = append(cols, col)
	}
	return cols, next, nil
}

func (s *ddlSchema) createTable(st []sqllint.Token) error {
	i := 2
	if sqllint.IsWord(sqllint.TokAt(st, i), "IF") { // SQLite: IF NOT EXISTS
		i += 3
	}
	tname, i, err := dottedName(st, i)
	if err != nil {
		return err
	}
	body, _, err := group(st, i)
	if err != nil {
		return err
	}
	if _, dup := s.Tables[tname]; dup {
		return fmt.Errorf("table %s created twice", tname)
	}
	tbl := &ddlTable{Name: tname}
	s.Tables[tname] = tbl
	s.Order = append(s.Order, tname)
	for _, el := range splitCommas(body) {
		if err := tbl.element(el); err != nil {
			return fmt.Errorf("table %s: %w", tname, err)
		}
	}
	return nil
}

func (s *ddlSchema) alterTable(st []sqllint.Token) error {
	tname, i, err := dottedName(st, 2)
	if err != nil {
		return err
	}
	tbl, ok := s.Tables[tname]
	if !ok {
		return fmt.Errorf("ALTER TABLE of unknown table %s", tname)
	}
	if sqllint.IsWord(sqllint.TokAt(st, i), "WITH") && sqllint.IsWord(sqllint.TokAt(st, i+1), "CHECK", "NOCHECK") {
		i += 2
	}
	if sqllint.IsWord(sqllint.TokAt(st, i), "DROP") && sqllint.IsWord(sqllint.TokAt(st, i+1), "COLUMN") {
		// DROP COLUMN a[, b]: SQLite names one, T-SQL a list.
		for _, el := range splitCommas(st[i+2:]) {
			name, _, err := dottedName(el, 0)
			if err != nil {
				return fmt.Errorf("table %s: %w", tname, err)
			}
			_, at := tbl.column(name)
			if at < 0 {
				return fmt.Errorf("table %s: DROP COLUMN of unknown column %s", tname, name)
			}
			tbl.Columns = append(tbl.Columns[:at], tbl.Columns[at+1:]...)
		}
		return nil
	}
	if sqllint.IsWord(sqllint.TokAt(st, i), "DROP") && sqllint.IsWord(sqllint.TokAt(st, i+1), "CONSTRAINT") {
		return nil // constraints other than keys are not compared between dialects
	}
	if !sqllint.IsWord(sqllint.TokAt(st, i), "ADD") {
		s.Unparsed = append(s.Unparsed, render(st, false))
		return nil
	}
	if sqllint.IsWord(sqllint.TokAt(st, i+1), "COLUMN") { // SQLite: ADD COLUMN name ...
		i++
	}
	for _, el := range splitCommas(st[i+1:]) {
		if err := tbl.element(el); err != nil {
			return fmt.Errorf("table %s: %w", tname, err)
		}
	}
	return nil
}

func (s *ddlSchema) createIndex(st []sqllint.Token) error {
	ix := ddlIndex{}
	i := 1
	for !sqllint.IsWord(sqllint.TokAt(st, i), "INDEX") {
		if i >= len(st) {
			return fmt.Errorf("CREATE INDEX without INDEX")
		}
		switch {
		case sqllint.IsWord(st[i], "UNIQUE"):
			ix.Unique = true
		case sqllint.IsWord(st[i], "CLUSTERED", "NONCLUSTERED"):
			ix.Clustered = strings.ToUpper(st[i].Text)
		default:
			return fmt.Errorf("unexpected %q in CREATE INDEX", st[i].Text)
		}
		i++
	}
	i++
	if sqllint.IsWord(sqllint.TokAt(st, i), "IF") {
		i += 3
	}
	var err error
	if ix.Name, i, err = dottedName(st, i); err != nil {
		return err
	}
	if !sqllint.IsWord(sqllint.TokAt(st, i), "ON") {
		return fmt.Errorf("index %s: expected ON", ix.Name)
	}
	table, i, err := dottedName(st, i+1)
	if err != nil {
		return err
	}
	if ix.Cols, i, err = columnList(st, i); err != nil {
		return fmt.Errorf("index %s: %w", ix.Name, err)
	}
	if sqllint.IsWord(sqllint.TokAt(st, i), "INCLUDE") {
		if ix.Include, i, err = columnList(st, i+1); err != nil {
			return fmt.Errorf("index %s: %w", ix.Name, err)
		}
	}
	if sqllint.IsWord(sqllint.TokAt(st, i), "WHERE") {
		j := i + 1
		for j < len(st) && !sqllint.IsWord(st[j], "WITH") {
			j++
		}
		ix.Filter = render(st[i+1:j], false)
		i = j
	}
	if i < len(st) {
		ix.Rest = render(st[i:], false)
	}
	s.indexes = append(s.indexes, pendingIndex{table: table, ix: ix})
	return nil
}

// element parses one element of a CREATE TABLE body or of ALTER TABLE ... ADD.
func (t *ddlTable) element(el []sqllint.Token) error {
	if len(el) == 0 {
		return fmt.Errorf("empty element")
	}
	if sqllint.IsWord(el[0], "CONSTRAINT", "PRIMARY", "FOREIGN", "CHECK", "UNIQUE") {
		return t.constraint(el)
	}
	return t.columnDef(el)
}

func (t *ddlTable) constraint(el []sqllint.Token) error {
	cname := ""
	i := 0
	if sqllint.IsWord(el[0], "CONSTRAINT") {
		n, next, err := dottedName(el, 1)
		if err != nil {
			return err
		}
		cname, i = n, next
	}
	switch {
	case sqllint.IsWord(sqllint.TokAt(el, i), "PRIMARY") && sqllint.IsWord(sqllint.TokAt(el, i+1), "KEY"):
		if t.PK != nil {
			return fmt.Errorf("two primary keys")
		}
		k := &ddlKey{Name: cname}
		i += 2
		if sqllint.IsWord(sqllint.TokAt(el, i), "CLUSTERED", "NONCLUSTERED") {
			k.Clustered = strings.ToUpper(el[i].Text)
			i++
		}
		cols, next, err := columnList(el, i)
		if err != nil {
			return fmt.Errorf("primary key %s: %w", cname, err)
		}
		if next != len(el) {
			return fmt.Errorf("primary key %s: unexpected %q", cname, render(el[next:], false))
		}
		k.Cols = cols
		t.PK = k
	case sqllint.IsWord(sqllint.TokAt(el, i), "FOREIGN") && sqllint.IsWord(sqllint.TokAt(el, i+1), "KEY"):
		cols, next, err := columnList(el, i+2)
		if err != nil {
			return fmt.Errorf("foreign key %s: %w", cname, err)
		}
		fk, err := references(el, next, cname, cols)
		if err != nil {
			return err
		}
		t.FKs = append(t.FKs, fk)
	case sqllint.IsWord(sqllint.TokAt(el, i), "CHECK", "UNIQUE"):
		t.Others = append(t.Others, strings.TrimSpace("CONSTRAINT "+cname+" "+render(el[i:], false)))
	default:
		return fmt.Errorf("unknown constraint %q", render(el, false))
	}
	return nil
}

// references reads "REFERENCES t (cols) [ON ...]" at el[i].
func references(el []sqllint.Token, i int, cname string, cols []string) (ddlFK, error) {
	fk := ddlFK{Name: cname, Cols: cols}
	if !sqllint.IsWord(sqllint.TokAt(el, i), "REFERENCES") {
		return fk, fmt.Errorf("foreign key %s: expected REFERENCES", cname)
	}
	var err error
	if fk.RefTable, i, err = dottedName(el, i+1); err != nil {
		return fk, err
	}
	if fk.RefCols, i, err = columnList(el, i); err != nil {
		return fk, fmt.Errorf("foreign key %s: %w", cname, err)
	}
	j := i
	for j < len(el) && sqllint.IsWord(el[j], "ON", "DELETE", "UPDATE", "CASCADE", "SET", "NULL", "DEFAULT", "NO", "ACTION", "RESTRICT") {
		j++
	}
	fk.Rest = render(el[i:j], false)
	if j != len(el) {
		return fk, fmt.Errorf("foreign key %s: unexpected %q", cname, render(el[j:], false))
	}
	return fk, nil
}

// columnOptionWords end a column's type.
var columnOptionWords = map[string]bool{"COLLATE": true, "NOT": true, "NULL": true, "DEFAULT": true,
	"CONSTRAINT": true, "PRIMARY": true, "REFERENCES": true, "CHECK": true, "UNIQUE": true, "IDENTITY": true,
	"GENERATED": true, "ROWGUIDCOL": true, "SPARSE": true, "AS": true}

func (t *ddlTable) columnDef(el []sqllint.Token) error {
	if !sqllint.IsName(el[0]) {
		return fmt.Errorf("bad column %q", render(el, false))
	}
	c := &ddlColumn{Name: el[0].Text}
	if col, _ := t.column(c.Name); col != nil {
		return fmt.Errorf("column %s declared twice", c.Name)
	}
	i := 1
	var typeWords []string
	for i < len(el) && el[i].Kind == sqllint.TokWord && !columnOptionWords[strings.ToUpper(el[i].Text)] {
		typeWords = append(typeWords, strings.ToLower(el[i].Text))
		i++
	}
	if len(typeWords) == 0 {
		return fmt.Errorf("column %s has no type", c.Name)
	}
	c.Type = strings.Join(typeWords, " ")
	if sqllint.IsSym(sqllint.TokAt(el, i), "(") {
		args, next, err := group(el, i)
		if err != nil {
			return err
		}
		c.Type += "(" + strings.ToLower(strings.ReplaceAll(render(args, false), " ", "")) + ")"
		i = next
	}
	pendingName := ""
	for i < len(el) {
		tk := el[i]
		switch {
		case sqllint.IsWord(tk, "COLLATE"):
			c.Collation = sqllint.TokAt(el, i+1).Text
			i += 2
		case sqllint.IsWord(tk, "NOT") && sqllint.IsWord(sqllint.TokAt(el, i+1), "NULL"):
			c.Null = "NOT NULL"
			i += 2
		case sqllint.IsWord(tk, "NULL"):
			c.Null = "NULL"
			i++
		case sqllint.IsWord(tk, "CONSTRAINT"):
			n, next, err := dottedName(el, i+1)
			if err != nil {
				return err
			}
			pendingName, i = n, next
			continue // the name belongs to the next option
		case sqllint.IsWord(tk, "DEFAULT"):
			j := i + 1
			switch {
			case sqllint.IsSym(sqllint.TokAt(el, j), "("):
				_, next, err := group(el, j)
				if err != nil {
					return err
				}
				j = next
			case sqllint.IsSym(sqllint.TokAt(el, j), "-") || sqllint.IsSym(sqllint.TokAt(el, j), "+"):
				j += 2
			default:
				j++
			}
			c.Default, c.DefaultName = render(el[i+1:j], false), pendingName
			i = j
		case sqllint.IsWord(tk, "PRIMARY") && sqllint.IsWord(sqllint.TokAt(el, i+1), "KEY"):
			if t.PK != nil {
				return fmt.Errorf("two primary keys")
			}
			t.PK = &ddlKey{Name: pendingName, Cols: []string{c.Name}}
			i += 2
			for i < len(el) && sqllint.IsWord(el[i], "ASC", "DESC", "CLUSTERED", "NONCLUSTERED", "AUTOINCREMENT") {
				c.Extra = append(c.Extra, strings.ToUpper(el[i].Text))
				i++
			}
		case sqllint.IsWord(tk, "REFERENCES"):
			j := i + 1
			for j < len(el) && !sqllint.IsSym(el[j], "(") {
				j++
			}
			_, next, err := group(el, j)
			if err != nil {
				return err
			}
			for next < len(el) && sqllint.IsWord(el[next], "ON", "DELETE", "UPDATE", "CASCADE", "SET", "NULL", "DEFAULT", "NO", "ACTION", "RESTRICT") {
				next++
			}
			fk, err := references(el[:next], i, pendingName, []string{c.Name})
			if err != nil {
				return err
			}
			t.FKs = append(t.FKs, fk)
			i = next
		case sqllint.IsWord(tk, "CHECK"):
			_, next, err := group(el, i+1)
			if err != nil {
				return err
			}
			t.Others = append(t.Others, strings.TrimSpace("CONSTRAINT "+pendingName+" "+render(el[i:next], false)))
			i = next
		case sqllint.IsWord(tk, "UNIQUE"):
			t.Others = append(t.Others, strings.TrimSpace("CONSTRAINT "+pendingName+" UNIQUE ("+c.Name+")"))
			i++
		default:
			c.Extra = append(c.Extra, render(el[i:i+1], false))
			i++
		}
		pendingName = ""
	}
	t.Columns = append(t.Columns, c)
	return nil
}

// ---------------------------------------------------------------------------------------
// Seed parity

// seedStatements extracts the DDL statements from the seed page, which mixes them with
// prose and column tables: a statement starts on a line that opens with CREATE TABLE,
// CREATE [UNIQUE] INDEX or ALTER TABLE and runs to the line that ends with ';'.
func seedStatements(page string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		up := strings.ToUpper(trimmed)
		if !in && (strings.HasPrefix(up, "CREATE TABLE ") || strings.HasPrefix(up, "CREATE INDEX ") ||
			strings.HasPrefix(up, "CREATE UNIQUE INDEX ") || strings.HasPrefix(up, "ALTER TABLE ")) {
			in = true
		}
		if in {
			b.WriteString(line)
			b.WriteByte('\n')
			if strings.HasSuffix(trimmed, ";") {
				in = false
			}
		}
	}
	return b.String()
}

func additionKey(table string, kind AdditionKind, item string) string {
	return table + "|" + string(kind) + "|" + item
}

// compareSeed reports every way mig departs from seed that adds does not declare, and
// every declared addition mig does not make. An empty result means parity.
func compareSeed(seed, mig *ddlSchema, adds []Addition) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	declared := map[string]Addition{}
	for _, a := range adds {
		declared[additionKey(a.Table, a.Kind, a.Item)] = a
	}
	used := map[string]bool{}
	// declaredAs checks an addition the migration makes against the list.
	declaredAs := func(table string, kind AdditionKind, item, definition string) {
		key := additionKey(table, kind, item)
		a, ok := declared[key]
		switch {
		case !ok:
			bad("%s.%s: undeclared %s %q: add it to DeclaredAdditions with a reason, or remove it", table, item, kind, definition)
		case a.Definition != definition:
			bad("%s.%s: declared %s is %q but the migration has %q", table, item, kind, a.Definition, definition)
		}
		used[key] = true
	}

	for _, st := range mig.Unparsed {
		bad("unexpected statement in the migration: %s", st)
	}
	for _, name := range seed.Order {
		st, mt := seed.Tables[name], mig.Tables[name]
		if mt == nil {
			bad("%s: table missing from the migration", name)
			continue
		}
		// Columns: every seed column, exactly, in the seed's order.
		lastPos := -1
		for _, sc := range st.Columns {
			mc, pos := mt.column(sc.Name)
			if mc == nil {
				bad("%s.%s: seed column missing from the migration", name, sc.Name)
				continue
			}
			if pos < lastPos {
				bad("%s.%s: column out of the seed's order", name, sc.Name)
			}
			lastPos = pos
			if mc.Type != sc.Type {
				bad("%s.%s: type %s, seed has %s", name, sc.Name, mc.Type, sc.Type)
			}
			if mc.Null != sc.Null {
				bad("%s.%s: nullability %q, seed has %q", name, sc.Name, mc.Null, sc.Null)
			}
			if mc.Default != sc.Default || mc.DefaultName != sc.DefaultName {
				bad("%s.%s: default %q %q, seed has %q %q", name, sc.Name, mc.DefaultName, mc.Default, sc.DefaultName, sc.Default)
			}
			if strings.Join(mc.Extra, " ") != strings.Join(sc.Extra, " ") {
				bad("%s.%s: column options %q, seed has %q", name, sc.Name, mc.Extra, sc.Extra)
			}
			switch {
			case mc.Collation == sc.Collation:
			case sc.Collation == "":
				declaredAs(name, AddCollation, sc.Name, mc.Collation)
			default:
				bad("%s.%s: collation %q, seed has %q", name, sc.Name, mc.Collation, sc.Collation)
			}
		}
		for _, mc := range mt.Columns {
			if sc, _ := st.column(mc.Name); sc == nil {
				declaredAs(name, AddColumn, mc.Name, mc.definition())
			}
		}

		// Keys.
		if st.PK.String() != mt.PK.String() {
			bad("%s: primary key %s, seed has %s", name, mt.PK, st.PK)
		}
		mfks := map[string]ddlFK{}
		for _, fk := range mt.FKs {
			mfks[fk.Name] = fk
		}
		for _, sfk := range st.FKs {
			mfk, ok := mfks[sfk.Name]
			switch {
			case !ok:
				bad("%s: seed foreign key %s %s missing from the migration", name, sfk.Name, sfk.shape())
			case mfk.shape() != sfk.shape():
				bad("%s: foreign key %s is %s, seed has %s", name, sfk.Name, mfk.shape(), sfk.shape())
			}
			delete(mfks, sfk.Name)
		}
		for fkName, fk := range mfks {
			bad("%s: undeclared foreign key %s %s", name, fkName, fk.shape())
		}
		seedOthers := strings.Join(st.Others, "\n")
		for _, o := range mt.Others {
			if !strings.Contains(seedOthers, o) {
				bad("%s: undeclared constraint %s", name, o)
			}
		}
		for _, o := range st.Others {
			if !strings.Contains(strings.Join(mt.Others, "\n"), o) {
				bad("%s: seed constraint %s missing from the migration", name, o)
			}
		}

		// Indexes.
		mix := map[string]ddlIndex{}
		for _, ix := range mt.Indexes {
			mix[ix.Name] = ix
		}
		for _, six := range st.Indexes {
			mx, ok := mix[six.Name]
			switch {
			case !ok:
				bad("%s: seed index %s %s missing from the migration", name, six.Name, six.definition())
			case mx.definition() != six.definition():
				bad("%s: index %s is %s, seed has %s", name, six.Name, mx.definition(), six.definition())
			}
			delete(mix, six.Name)
		}
		for _, ix := range mt.Indexes {
			if _, extra := mix[ix.Name]; extra {
				declaredAs(name, AddIndex, ix.Name, ix.definition())
			}
		}
	}
	for _, name := range mig.Order {
		if seed.Tables[name] == nil {
			bad("%s: table not in the seed", name)
		}
	}
	for _, a := range adds {
		if _, seedTable := seed.Tables[a.Table]; seedTable && !used[additionKey(a.Table, a.Kind, a.Item)] {
			bad("%s.%s: declared addition (%s) not found in the migration: remove it from DeclaredAdditions", a.Table, a.Item, a.Kind)
		}
	}
	return problems
}

// seedSchema parses the seed DDL, or skips the test when shared/seeds is not beside the
// repository (CI runs with shared/ next to the clone).
func seedSchema(t *testing.T) *ddlSchema {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var path string
	for {
		matches, _ := filepath.Glob(filepath.Join(dir, "shared", "seeds", "001_*.txt"))
		if len(matches) > 0 {
			path = matches[0]
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("seed DDL not found: expected shared/seeds/001_*.txt beside the repository root")
		}
		dir = parent
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := parseDDL(seedStatements(string(page)), true)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	// The parse must have found the seed's six tables, each with a key, so that a parser
	// regression cannot make the comparison pass on nothing.
	if len(seed.Order) != 6 || len(seed.Unparsed) != 0 {
		t.Fatalf("parse %s: tables %v, unparsed %q; want the six ledger tables", path, seed.Order, seed.Unparsed)
	}
	nIdx, nFK := 0, 0
	for _, name := range seed.Order {
		tbl := seed.Tables[name]
		if len(tbl.Columns) == 0 || tbl.PK == nil {
			t.Fatalf("parse %s: table %s has no columns or no primary key", path, name)
		}
		nIdx += len(tbl.Indexes)
		nFK += len(tbl.FKs)
	}
	if nIdx == 0 || nFK == 0 {
		t.Fatalf("parse %s: %d indexes and %d foreign keys; the seed has both", path, nIdx, nFK)
	}
	return seed
}

const ledgerMigration = "000006_attempt_ledger.up.sql"

func TestAttemptLedgerMatchesSeed(t *testing.T) {
	seed := seedSchema(t)
	mig, err := parseDDL(readFS(t, mssql.FS, ledgerMigration), true)
	if err != nil {
		t.Fatalf("parse migrations/mssql/%s: %v", ledgerMigration, err)
	}
	if err := applyLaterAdditions(mig, laterUpMigrations(t)); err != nil {
		t.Fatal(err)
	}
	for _, p := range compareSeed(seed, mig, DeclaredAdditions) {
		t.Error(p)
	}
}

// laterUpMigrations returns the texts of the SQL Server up migrations after
// ledgerMigration, in version order, keyed by file name.
func laterUpMigrations(t *testing.T) [][2]string {
	t.Helper()
	var out [][2]string
	for _, name := range sqlFiles(t, mssql.FS) {
		if strings.HasSuffix(name, ".up.sql") && name > ledgerMigration {
			out = append(out, [2]string{name, readFS(t, mssql.FS, name)})
		}
	}
	return out
}

// applyLaterAdditions adds to mig what later migrations add to the tables it declares
// (ALTER TABLE ... ADD and CREATE INDEX on them), so an addition made after
// ledgerMigration is held to DeclaredAdditions as well. Statements on other tables are
// not the seed's business and are skipped.
func applyLaterAdditions(mig *ddlSchema, files [][2]string) error {
	for _, f := range files {
		toks, err := sqllint.Lex(f[1], true)
		if err != nil {
			return fmt.Errorf("%s: %w", f[0], err)
		}
		for _, st := range sqllint.SplitStatements(toks) {
			st = unguarded(st)
			target := ""
			switch {
			case sqllint.IsWord(sqllint.TokAt(st, 0), "ALTER") && sqllint.IsWord(sqllint.TokAt(st, 1), "TABLE"):
				target, _, _ = dottedName(st, 2)
			case sqllint.IsWord(sqllint.TokAt(st, 0), "CREATE") && (sqllint.IsWord(sqllint.TokAt(st, 1), "INDEX") || sqllint.IsWord(sqllint.TokAt(st, 1), "UNIQUE", "CLUSTERED", "NONCLUSTERED")):
				for i := range st {
					if sqllint.IsWord(st[i], "ON") {
						target, _, _ = dottedName(st, i+1)
						break
					}
				}
			}
			if mig.Tables[target] == nil {
				continue
			}
			if err := mig.statement(st); err != nil {
				return fmt.Errorf("%s line %d: %w", f[0], st[0].Line, err)
			}
		}
	}
	for _, p := range mig.indexes {
		tbl := mig.Tables[p.table]
		if !hasIndex(tbl, p.ix.Name) {
			tbl.Indexes = append(tbl.Indexes, p.ix)
		}
	}
	return nil
}

// unguarded returns the statement an IF [NOT] EXISTS (...) guard runs (a migration that
// checks sys.indexes before building an index someone may have built by hand, or before
// dropping one someone may have dropped), or st.
func unguarded(st []sqllint.Token) []sqllint.Token {
	open := 3
	if sqllint.IsWord(sqllint.TokAt(st, 1), "EXISTS") {
		open = 2
	} else if !sqllint.IsWord(sqllint.TokAt(st, 1), "NOT") || !sqllint.IsWord(sqllint.TokAt(st, 2), "EXISTS") {
		return st
	}
	if !sqllint.IsWord(sqllint.TokAt(st, 0), "IF") || !sqllint.IsSym(sqllint.TokAt(st, open), "(") {
		return st
	}
	depth := 0
	for i := open; i < len(st); i++ {
		switch {
		case sqllint.IsSym(st[i], "("):
			depth++
		case sqllint.IsSym(st[i], ")"):
			depth--
			if depth == 0 {
				return st[i+1:]
			}
		}
	}
	return st
}

func hasIndex(t *ddlTable, name string) bool {
	for _, ix := range t.Indexes {
		if ix.Name == name {
			return true
		}
	}
	return false
}

func TestLaterMigrationsAreHeldToTheDeclaredAdditions(t *testing.T) {
	seed := seedSchema(t)
	mig, err := parseDDL(readFS(t, mssql.FS, ledgerMigration), true)
	if err != nil {
		t.Fatal(err)
	}
	later := [][2]string{{"999999_probe.up.sql", "SET XACT_ABORT ON;\nBEGIN TRANSACTION;\n" +
		"ALTER TABLE [dbo].[CallRecords] ADD [Probe] int NULL;\n" +
		"CREATE INDEX [IX_Probe] ON [dbo].[CallRecords] ([Probe]);\n" +
		"CREATE TABLE [dbo].[NotSeed] ([A] int NOT NULL);\n" +
		"ALTER TABLE [dbo].[NotSeed] ADD [B] int NULL;\nCOMMIT TRANSACTION;"}}
	if err := applyLaterAdditions(mig, later); err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(compareSeed(seed, mig, DeclaredAdditions), "\n")
	for _, want := range []string{"CallRecords.Probe: undeclared column", "CallRecords.IX_Probe: undeclared index"} {
		if !strings.Contains(problems, want) {
			t.Errorf("compareSeed found %q; want a problem containing %q", problems, want)
		}
	}
	if strings.Contains(problems, "NotSeed") || strings.Contains(problems, "unexpected statement") {
		t.Errorf("statements on tables outside the seed were held to it: %q", problems)
	}
}

func TestParityCheckCatchesDrift(t *testing.T) {
	seed := seedSchema(t)
	text := readFS(t, mssql.FS, ledgerMigration)
	cases := []struct{ name, old, new, want string }{
		{"type changed", "[FencingToken] bigint NOT NULL", "[FencingToken] int NOT NULL",
			"ExecutionAttempts.FencingToken: type int, seed has bigint"},
		{"precision added", "[VerifiedAt] datetimeoffset NOT NULL", "[VerifiedAt] datetimeoffset(3) NOT NULL",
			"LoadedReleases.VerifiedAt: type datetimeoffset(3)"},
		{"column dropped", "    [Phase] int NOT NULL,\n    [AdapterStateRef]", "    [AdapterStateRef]",
			"Checkpoints.Phase: seed column missing"},
		{"undeclared column", "    [Version] rowversion NOT NULL,\n    CONSTRAINT [PK_CallRecords]",
			"    [Version] rowversion NOT NULL,\n    [Extra] int NULL,\n    CONSTRAINT [PK_CallRecords]",
			"CallRecords.Extra: undeclared column"},
		{"nullability", "[LastCheckpointId] uniqueidentifier NULL", "[LastCheckpointId] uniqueidentifier NOT NULL",
			"ExecutionAttempts.LastCheckpointId: nullability"},
		{"default dropped", "[CorrectionCount] int NOT NULL DEFAULT (0)", "[CorrectionCount] int NOT NULL",
			"ExecutionAttempts.CorrectionCount: default"},
		{"default changed", "[CorrectionCount] int NOT NULL DEFAULT (0)", "[CorrectionCount] int NOT NULL DEFAULT (1)",
			"ExecutionAttempts.CorrectionCount: default"},
		{"columns reordered",
			"    [SnapshotId] uniqueidentifier NOT NULL,\n    [ReleaseId] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,\n",
			"    [ReleaseId] nvarchar(256) COLLATE Latin1_General_100_BIN2 NOT NULL,\n    [SnapshotId] uniqueidentifier NOT NULL,\n",
			"out of the seed's order"},
		{"undeclared collation", "[Purpose] nvarchar(1024) NOT NULL", "[Purpose] nvarchar(1024) COLLATE Latin1_General_100_BIN2 NOT NULL",
			"SubAgentDelegations.Purpose: undeclared collation"},
		{"declared collation missing", "[ChildAgentId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL", "[ChildAgentId] nvarchar(128) NOT NULL",
			"SubAgentDelegations.ChildAgentId: declared addition (collation) not found"},
		{"seed index renamed", "[UX_Calls_Attempt_Sequence]", "[UX_Calls_Attempt_Seq]",
			"seed index UX_Calls_Attempt_Sequence"},
		{"seed index columns", "([RunId], [StepId])", "([StepId], [RunId])",
			"index IX_Attempts_Run_Step is INDEX (StepId, RunId)"},
		{"seed index not unique", "CREATE UNIQUE INDEX [UX_Attempts_Lease]", "CREATE INDEX [UX_Attempts_Lease]",
			"index UX_Attempts_Lease is INDEX (LeaseId), seed has UNIQUE INDEX (LeaseId)"},
		{"seed foreign key dropped", "ALTER TABLE [dbo].[Checkpoints] ADD CONSTRAINT [FK_Checkpoints_ExecutionAttempts_AttemptId] FOREIGN KEY ([AttemptId]) REFERENCES [dbo].[ExecutionAttempts] ([AttemptId]);", "",
			"seed foreign key FK_Checkpoints_ExecutionAttempts_AttemptId"},
		{"primary key changed", "CONSTRAINT [PK_LoadedReleases] PRIMARY KEY ([ReleaseId], [AdapterVersion])", "CONSTRAINT [PK_LoadedReleases] PRIMARY KEY ([ReleaseId])",
			"LoadedReleases: primary key"},
		{"undeclared constraint", "    CONSTRAINT [PK_SubAgentDelegations] PRIMARY KEY ([DelegationId])",
			"    CONSTRAINT [PK_SubAgentDelegations] PRIMARY KEY ([DelegationId]),\n    CONSTRAINT [CK_Depth] CHECK ([Depth] >= 0)",
			"SubAgentDelegations: undeclared constraint"},
		{"undeclared index", "COMMIT TRANSACTION;", "CREATE INDEX [IX_Extra] ON [dbo].[LoadedReleases] ([TenantId]);\nCOMMIT TRANSACTION;",
			"LoadedReleases.IX_Extra: undeclared index"},
		{"declared index missing", "CREATE INDEX [IX_Delegations_Attempt] ON [dbo].[SubAgentDelegations] ([AttemptId], [CreatedAt]);", "",
			"SubAgentDelegations.IX_Delegations_Attempt: declared addition (index) not found"},
		{"declared index changed", "WHERE [Status] = N'pending' AND [ExpiresAt] IS NOT NULL", "WHERE [Status] = N'pending'",
			"DecisionRequests.IX_Decisions_PendingExpiry: declared index"},
		{"declared column changed", "[AnswerJson] nvarchar(max) NULL", "[AnswerJson] nvarchar(4000) NULL",
			"DecisionRequests.AnswerJson: declared column"},
		{"table renamed", "CREATE TABLE [dbo].[LoadedReleases] (", "CREATE TABLE [dbo].[LoadedRelease] (",
			"LoadedReleases: table missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mutated := strings.Replace(text, c.old, c.new, 1)
			if mutated == text {
				t.Fatalf("mutation %q does not apply to %s: update the test", c.old, ledgerMigration)
			}
			mig, err := parseDDL(mutated, true)
			if err != nil {
				t.Fatalf("parse mutated migration: %v", err)
			}
			problems := compareSeed(seed, mig, DeclaredAdditions)
			for _, p := range problems {
				if strings.Contains(p, c.want) {
					return
				}
			}
			t.Errorf("compareSeed found %q; want a problem containing %q", problems, c.want)
		})
	}
}

func TestDeclaredAdditionsWellFormed(t *testing.T) {
	ledger := map[string]bool{"ExecutionAttempts": true, "Checkpoints": true, "CallRecords": true,
		"DecisionRequests": true, "SubAgentDelegations": true, "LoadedReleases": true}
	seen := map[string]bool{}
	for _, a := range DeclaredAdditions {
		key := additionKey(a.Table, a.Kind, a.Item)
		switch {
		case !ledger[a.Table]:
			t.Errorf("%s: not one of the seed's ledger tables", key)
		case a.Kind != AddColumn && a.Kind != AddIndex && a.Kind != AddCollation:
			t.Errorf("%s: unknown kind", key)
		case a.Item == "" || a.Definition == "" || strings.TrimSpace(a.Reason) == "":
			t.Errorf("%s: item, definition and reason are required", key)
		case seen[key]:
			t.Errorf("%s: declared twice", key)
		}
		seen[key] = true
	}
}

// ---------------------------------------------------------------------------------------
// Dialects in step

// dialectSchema parses every up migration of a dialect, in version order.
func dialectSchema(t *testing.T, fsys fs.FS, nestedComments bool) *ddlSchema {
	t.Helper()
	var all strings.Builder
	for _, name := range sqlFiles(t, fsys) {
		if strings.HasSuffix(name, ".up.sql") {
			all.WriteString(readFS(t, fsys, name))
			all.WriteString("\n;\n")
		}
	}
	s, err := parseDDL(all.String(), nestedComments)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tableShape describes a table in dialect-neutral terms: column names and nullability in
// order, key columns, foreign keys without names, and indexes with their filters.
func tableShape(tbl *ddlTable, dropN bool) []string {
	var out []string
	for _, c := range tbl.Columns {
		null := c.Null
		if null == "" {
			null = "NULL"
		}
		out = append(out, "column "+c.Name+" "+null)
	}
	if tbl.PK != nil {
		out = append(out, "primary key ("+strings.Join(tbl.PK.Cols, ", ")+")")
	}
	var fks, ixs []string
	for _, fk := range tbl.FKs {
		fks = append(fks, "foreign key "+fk.shape())
	}
	for _, ix := range tbl.Indexes {
		s := ix.Name + " ("
		if ix.Unique {
			s = "unique " + s
		}
		s += strings.Join(ix.Cols, ", ") + ")"
		if ix.Filter != "" {
			filter := ix.Filter
			if dropN {
				filter = strings.ReplaceAll(filter, "N'", "'")
			}
			s += " WHERE " + filter
		}
		ixs = append(ixs, "index "+s)
	}
	sort.Strings(fks)
	sort.Strings(ixs)
	return append(append(out, fks...), ixs...)
}

// TestRunsAdditionsDeclared: what later migrations add to or redefine on the Runs table
// of 000003 is on RunsAdditions, with the definition the migrations leave, and every
// entry there is in the migrations.
func TestRunsAdditionsDeclared(t *testing.T) {
	base, err := parseDDL(readFS(t, mssql.FS, "000003_runs.up.sql"), true)
	if err != nil {
		t.Fatal(err)
	}
	bt, ft := base.Tables["Runs"], dialectSchema(t, mssql.FS, true).Tables["Runs"]
	if bt == nil || ft == nil {
		t.Fatal("Runs not parsed")
	}
	declared := map[string]Addition{}
	for _, a := range RunsAdditions {
		if a.Table != "Runs" || strings.TrimSpace(a.Reason) == "" {
			t.Errorf("%s.%s: a Runs addition needs the table Runs and a reason", a.Table, a.Item)
		}
		declared[additionKey(a.Table, a.Kind, a.Item)] = a
	}
	found := map[string]bool{}
	check := func(kind AdditionKind, item, definition string) {
		key := additionKey("Runs", kind, item)
		found[key] = true
		a, ok := declared[key]
		switch {
		case !ok:
			t.Errorf("Runs.%s: undeclared %s %q: add it to RunsAdditions with a reason", item, kind, definition)
		case a.Definition != definition:
			t.Errorf("Runs.%s: declared %s is %q but the migrations leave %q", item, kind, a.Definition, definition)
		}
	}
	for _, c := range ft.Columns {
		if bc, _ := bt.column(c.Name); bc == nil {
			check(AddColumn, c.Name, c.definition())
		}
	}
	baseIx := map[string]string{}
	for _, ix := range bt.Indexes {
		baseIx[ix.Name] = ix.definition()
	}
	for _, ix := range ft.Indexes {
		if baseIx[ix.Name] != ix.definition() {
			check(AddIndex, ix.Name, ix.definition())
		}
	}
	for key := range declared {
		if !found[key] {
			t.Errorf("%s: declared in RunsAdditions but not made by the migrations", key)
		}
	}
}

// TestParserFollowsSchemaChanges: the forms 000011 uses to change a table after its
// creation (ADD COLUMN, DROP COLUMN, DROP INDEX, DROP TABLE, DDL inside EXEC(N'...')) change
// the parsed schema, so the dialects are compared as they end up, not as they began.
func TestParserFollowsSchemaChanges(t *testing.T) {
	src := `CREATE TABLE T (A int NOT NULL, B int NULL, C int NULL);
CREATE INDEX IX_T_B ON T (B);
CREATE TABLE Gone (A int NOT NULL);
CREATE INDEX IX_Gone ON Gone (A);
ALTER TABLE T ADD COLUMN D int NOT NULL DEFAULT 0;
ALTER TABLE T ADD [E] int NULL, [F] int NULL;
ALTER TABLE T DROP COLUMN C;
ALTER TABLE T DROP CONSTRAINT CK_T;
DROP INDEX IX_T_B ON T;
EXEC(N'CREATE INDEX [IX_T_D] ON [dbo].[T] ([D]) WHERE [D] = 1;');
DROP TABLE Gone;`
	s, err := parseDDL(src, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Unparsed) != 0 {
		t.Errorf("unparsed statements: %v", s.Unparsed)
	}
	if s.Tables["Gone"] != nil || len(s.Order) != 1 {
		t.Errorf("dropped table still there: %v", s.Order)
	}
	got := strings.Join(tableShape(s.Tables["T"], true), "; ")
	want := "column A NOT NULL; column B NULL; column D NOT NULL; column E NULL; column F NULL; index IX_T_D (D) WHERE D = 1"
	if got != want {
		t.Errorf("table T is\n  %s\nwant\n  %s", got, want)
	}
}

func TestDialectsDeclareSameSchema(t *testing.T) {
	ms := dialectSchema(t, mssql.FS, true)
	sq := dialectSchema(t, sqlite.FS, false)
	// SQLite emulates rowversion with a counter table; SQL Server needs none.
	sqliteOnly := map[string]bool{"RowVersionCounter": true}
	// Indexes SQL Server keeps and SQLite drops, each with why no SQLite statement loses a plan.
	sqliteOmits := map[string]string{
		"ExecutionAttempts IX_Attempts_Tenant_State": "a prefix of IX_Attempts_Tenant_State_Ended " +
			"(TenantId, State, EndedAt): every seek it served, the longer index serves (migrations/sqlite 000019)",
	}
	// Indexes SQLite makes partial where SQL Server keeps them whole: the filter SQLite adds,
	// and why SQL Server does not.
	sqliteFilters := map[string]string{
		"Runs IX_Runs_Parent": "ParentRunId IS NOT NULL\x00SQL Server's foreign-key check of a purge " +
			"(FK_Runs_ParentRun) may not match a filtered index (migration 36)",
		"Runs IX_Runs_ContinuedFromRunId": "ContinuedFromRunId IS NOT NULL\x00as IX_Runs_Parent, for FK_Runs_ContinuedFromRun",
		"ExecutionAttempts IX_Attempts_Release": "State = 0\x00SQL Server's statements pin it by an INDEX hint; " +
			"a filtered index's match to them is unverifiable without a server (migration 39)",
		"ExecutionAttempts IX_Attempts_Tenant_State_Ended": "EndedAt IS NOT NULL\x00as IX_Attempts_Release, for the " +
			"INDEX hints of history, insights and the overview (migration 39)",
	}

	if len(ms.Order) < 11 {
		t.Fatalf("parsed only %d SQL Server tables: %v", len(ms.Order), ms.Order)
	}
	for _, name := range sq.Order {
		if ms.Tables[name] == nil && !sqliteOnly[name] {
			t.Errorf("table %s is in migrations/sqlite but not in migrations/mssql", name)
		}
	}
	for _, name := range ms.Order {
		st := sq.Tables[name]
		if st == nil {
			t.Errorf("table %s is in migrations/mssql but not in migrations/sqlite", name)
			continue
		}
		for key := range sqliteOmits {
			table, index, _ := strings.Cut(key, " ")
			if table != name {
				continue
			}
			if !hasIndex(ms.Tables[name], index) || hasIndex(st, index) {
				t.Errorf("%s: listed as kept by SQL Server and dropped by SQLite, but mssql has it: %v, sqlite has it: %v",
					key, hasIndex(ms.Tables[name], index), hasIndex(st, index))
			}
		}
		m, s := tableShape(withoutIndexes(ms.Tables[name], name, sqliteOmits), true), tableShape(unfiltered(t, st, name, sqliteFilters), true)
		if strings.Join(m, "\n") != strings.Join(s, "\n") {
			t.Errorf("table %s differs between dialects:\nmssql:\n  %s\nsqlite:\n  %s",
				name, strings.Join(m, "\n  "), strings.Join(s, "\n  "))
		}
	}
}

// unfiltered is tbl with the filters that filters lists for it ("Table Index" keys, the
// filter before a NUL) taken off, after checking each is there as listed.
func unfiltered(t *testing.T, tbl *ddlTable, name string, filters map[string]string) *ddlTable {
	t.Helper()
	out := *tbl
	out.Indexes = slices.Clone(tbl.Indexes)
	for key, v := range filters {
		table, index, _ := strings.Cut(key, " ")
		if table != name {
			continue
		}
		filter, _, _ := strings.Cut(v, "\x00")
		found := false
		for i, ix := range out.Indexes {
			if ix.Name != index {
				continue
			}
			found = true
			if ix.Filter != filter {
				t.Errorf("%s: listed as filtered on SQLite by %q, but its filter is %q", key, filter, ix.Filter)
			}
			out.Indexes[i].Filter = ""
		}
		if !found {
			t.Errorf("%s: listed as filtered on SQLite, but SQLite has no such index", key)
		}
	}
	return &out
}

// withoutIndexes is tbl without the indexes omits lists for it ("Table Index" keys).
func withoutIndexes(tbl *ddlTable, name string, omits map[string]string) *ddlTable {
	out := *tbl
	out.Indexes = nil
	for _, ix := range tbl.Indexes {
		if _, gone := omits[name+" "+ix.Name]; !gone {
			out.Indexes = append(out.Indexes, ix)
		}
	}
	return &out
}
