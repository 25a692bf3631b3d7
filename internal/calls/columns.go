package calls

import (
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// column is one column of CallRecords that Call maps: its name (the db tag of the field it
// fills), its type in each dialect's table (TestColumnTableMirrorsCalls holds both to the
// migrations), and its value in Record's insert.
type column struct {
	name   string
	mssql  string // with the BIN2 collation of an identifier
	sqlite string
	// arg is the column's value in the insert, which takes the columns that have one, in
	// this order, as its numbered arguments; nil: the insert writes a literal (Status
	// 'started'), the database's value (Version) or NULL (what a finish sets).
	arg func(d sqldb.Dialect, r *newCall) any
}

// newCall is what the insert stores: the call's id, the fence it is recorded under (the
// attempt and the time) and the holder's draft.
type newCall struct {
	id uuid.UUID
	f  runs.Fenced
	n  Draft
}

// table is the columns of CallRecords in the order every list of them is built in: the
// answered columns (columns, cColumns, insertedColumns) and the insert's column and
// argument lists. A column added for a field of Call is one entry here (and the
// migrations); new columns go last.
var table = []column{
	{"CallId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, r *newCall) any { return r.id }},
	{"AttemptId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, r *newCall) any { return r.f.Attempt.AttemptID }},
	{"TenantId", "nvarchar(64)" + bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.Text(r.f.Attempt.TenantID) }},
	{"Sequence", "int", "INTEGER", func(_ sqldb.Dialect, r *newCall) any { return int32(r.n.Sequence) }},
	{"Kind", "int", "INTEGER", func(_ sqldb.Dialect, r *newCall) any { return int32(r.n.Kind) }},
	{"Target", "nvarchar(256)", "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.Text(r.n.Target) }},
	{"RequestHash", "nvarchar(128)" + bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.Text(r.n.RequestHash) }},
	{"PolicyDecisionId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, r *newCall) any {
		if r.n.PolicyDecisionID == nil {
			return nil
		}
		return *r.n.PolicyDecisionID
	}},
	{"ReceiptRef", "nvarchar(512)", "TEXT", nil},
	{"Status", "nvarchar(16)" + bin2, "TEXT", nil},
	{"StartedAt", "datetimeoffset", "DATETIME", func(d sqldb.Dialect, r *newCall) any { return d.Time(r.f.Now) }},
	{"EndedAt", "datetimeoffset", "DATETIME", nil},
	{"Version", "rowversion", "INTEGER", nil},
	{"Model", "nvarchar(128)" + bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.NullText(r.n.Model) }},
	{"Provider", "nvarchar(64)" + bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.NullText(r.n.Provider) }},
	{"Operation", "nvarchar(32)" + bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.NullText(r.n.Operation) }},
	{"ResponseModel", "nvarchar(128)" + bin2, "TEXT", nil},
	{"FinishReasons", "nvarchar(400)", "TEXT", nil},
	{"InputTokens", "bigint", "INTEGER", nil},
	{"OutputTokens", "bigint", "INTEGER", nil},
	{"CacheReadInputTokens", "bigint", "INTEGER", nil},
	{"CacheCreationInputTokens", "bigint", "INTEGER", nil},
	{"ReasoningOutputTokens", "bigint", "INTEGER", nil},
	{"CostMicros", "bigint", "INTEGER", nil},
}

const bin2 = " COLLATE Latin1_General_100_BIN2"

// insertColumns is the columns the insert takes from its arguments, in argument order.
var insertColumns = func() string {
	var names []string
	for _, c := range table {
		if c.arg != nil {
			names = append(names, c.name)
		}
	}
	return strings.Join(names, ", ")
}()

// insertValues is the insert's placeholders in order ("?1, ?2, ..." or "@p1, ...").
func insertValues(placeholder string) string {
	var ps []string
	for _, c := range table {
		if c.arg != nil {
			ps = append(ps, placeholder+strconv.Itoa(len(ps)+1))
		}
	}
	return strings.Join(ps, ", ")
}

// insertArgs is the insert's arguments (table's columns that have one, in order). The
// statement only stores its text, so all of it goes as Dialect.Text: one declaration list
// (SQL Server's plan-cache key) for every length.
func insertArgs(d sqldb.Dialect, id uuid.UUID, f runs.Fenced, n Draft) []any {
	r := newCall{id: id, f: f, n: n}
	args := make([]any, 0, len(table))
	for _, c := range table {
		if c.arg != nil {
			args = append(args, c.arg(d, &r))
		}
	}
	return args
}
