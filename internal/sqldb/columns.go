package sqldb

import (
	"strconv"
	"strings"
)

// Column is one column of a store's table that its row type T maps: the name (the db tag
// of the field it fills), its type in each dialect's table (as the migrations declare it,
// with the BIN2 collation of an identifier on SQL Server; dbtest.MirrorsTable holds both to
// the migrations), and its value in the store's insert. A store declares its table once, as
// a []Column[T] in the order every list of its columns is built in; a column added later
// goes last, so that the insert's argument numbers stay as they were.
type Column[T any] struct {
	Name   string
	MSSQL  string
	SQLite string
	// Uses is the store's own mark of where the column is answered (0 when the store has
	// one column list).
	Uses uint8
	// Arg is the column's value in the insert, which takes the columns that have one, in
	// order, as its numbered arguments; nil: the insert writes a literal, the database's
	// value, or NULL.
	Arg func(d Dialect, row *T) any
}

// ColumnList is the names of the columns that keep accepts (nil: all), each after prefix,
// eight to a line so that the statements read.
func ColumnList[T any](cols []Column[T], prefix string, keep func(Column[T]) bool) string {
	var names []string
	for _, c := range cols {
		if keep == nil || keep(c) {
			names = append(names, prefix+c.Name)
		}
	}
	return joinWrapped(names)
}

// SQLiteColumnList is ColumnList for a SQLite statement's answer: a column declared
// DATETIME is answered as CAST(col AS TEXT) AS Name, so that the driver hands its text over
// as is and the scan parses it (timetext.go), instead of the driver's slow parse.
func SQLiteColumnList[T any](cols []Column[T], prefix string, keep func(Column[T]) bool) string {
	var names []string
	for _, c := range cols {
		if keep == nil || keep(c) {
			names = append(names, SQLiteTimeText(c.SQLite, prefix+c.Name, c.Name))
		}
	}
	return joinWrapped(names)
}

// SQLiteTimeText is how a SQLite statement answers the column expr of declared type
// sqliteType under the name as: a DATETIME column as text (CAST(expr AS TEXT) AS as),
// anything else as expr itself (with AS as when the names differ).
func SQLiteTimeText(sqliteType, expr, as string) string {
	switch {
	case sqliteType == "DATETIME":
		return "CAST(" + expr + " AS TEXT) AS " + as
	case expr != as && !strings.HasSuffix(expr, "."+as):
		return expr + " AS " + as
	}
	return expr
}

// InsertColumns is the columns the insert takes from its arguments, in argument order.
func InsertColumns[T any](cols []Column[T]) string {
	return ColumnList(cols, "", func(c Column[T]) bool { return c.Arg != nil })
}

// InsertValues is the insert's placeholders in argument order: "?1, ?2, ..." for
// placeholder "?", "@p1, @p2, ..." for "@p".
func InsertValues[T any](cols []Column[T], placeholder string) string {
	var ps []string
	for _, c := range cols {
		if c.Arg != nil {
			ps = append(ps, placeholder+strconv.Itoa(len(ps)+1))
		}
	}
	return joinWrapped(ps)
}

// InsertArg is the placeholder of the named column's insert argument.
func InsertArg[T any](cols []Column[T], placeholder, name string) string {
	n := 0
	for _, c := range cols {
		if c.Arg != nil {
			n++
			if c.Name == name {
				return placeholder + strconv.Itoa(n)
			}
		}
	}
	panic("sqldb: the insert takes no argument for column " + name)
}

// InsertArgs is the insert's arguments for row, in order.
func InsertArgs[T any](d Dialect, cols []Column[T], row *T) []any {
	args := make([]any, 0, len(cols))
	for _, c := range cols {
		if c.Arg != nil {
			args = append(args, c.Arg(d, row))
		}
	}
	return args
}

func joinWrapped(items []string) string {
	var b strings.Builder
	for i, s := range items {
		switch {
		case i > 0 && i%8 == 0:
			b.WriteString(",\n    ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	return b.String()
}
