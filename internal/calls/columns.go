package calls

import (
	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// column is one column of CallRecords that Call maps (sqldb.Column; col makes one); the
// insert writes a literal for Status ('started'), the database's Version, and NULL for the
// columns without an argument (what a finish sets).
type column = sqldb.Column[newCall]

func col(name, mssql, sqlite string, arg func(sqldb.Dialect, *newCall) any) column {
	return column{Name: name, MSSQL: mssql, SQLite: sqlite, Arg: arg}
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
	col("CallId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, r *newCall) any { return r.id }),
	col("AttemptId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, r *newCall) any { return r.f.Attempt.AttemptID }),
	col("TenantId", "nvarchar(64)"+bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.Text(r.f.Attempt.TenantID) }),
	col("Sequence", "int", "INTEGER", func(_ sqldb.Dialect, r *newCall) any { return int32(r.n.Sequence) }),
	col("Kind", "int", "INTEGER", func(_ sqldb.Dialect, r *newCall) any { return int32(r.n.Kind) }),
	col("Target", "nvarchar(256)", "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.Text(r.n.Target) }),
	col("RequestHash", "nvarchar(128)"+bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.Text(r.n.RequestHash) }),
	col("PolicyDecisionId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, r *newCall) any {
		if r.n.PolicyDecisionID == nil {
			return nil
		}
		return *r.n.PolicyDecisionID
	}),
	col("ReceiptRef", "nvarchar(512)", "TEXT", nil),
	col("Status", "nvarchar(16)"+bin2, "TEXT", nil),
	col("StartedAt", "datetimeoffset", "DATETIME", func(d sqldb.Dialect, r *newCall) any { return d.Time(r.f.Now) }),
	col("EndedAt", "datetimeoffset", "DATETIME", nil),
	col("Version", "rowversion", "INTEGER", nil),
	col("Model", "nvarchar(128)"+bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.NullText(r.n.Model) }),
	col("Provider", "nvarchar(64)"+bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.NullText(r.n.Provider) }),
	col("Operation", "nvarchar(32)"+bin2, "TEXT", func(d sqldb.Dialect, r *newCall) any { return d.NullText(r.n.Operation) }),
	col("ResponseModel", "nvarchar(128)"+bin2, "TEXT", nil),
	col("FinishReasons", "nvarchar(400)", "TEXT", nil),
	col("InputTokens", "bigint", "INTEGER", nil),
	col("OutputTokens", "bigint", "INTEGER", nil),
	col("CacheReadInputTokens", "bigint", "INTEGER", nil),
	col("CacheCreationInputTokens", "bigint", "INTEGER", nil),
	col("ReasoningOutputTokens", "bigint", "INTEGER", nil),
	col("CostMicros", "bigint", "INTEGER", nil),
}

const bin2 = " COLLATE Latin1_General_100_BIN2"

// insertColumns is the columns the insert takes from its arguments, in argument order.
var insertColumns = sqldb.InsertColumns(table)

// insertValues is the insert's placeholders in order ("?1, ?2, ..." or "@p1, ...").
func insertValues(placeholder string) string { return sqldb.InsertValues(table, placeholder) }

// insertArgs is the insert's arguments (table's columns that have one, in order). The
// statement only stores its text, so all of it goes as Dialect.Text: one declaration list
// (SQL Server's plan-cache key) for every length.
func insertArgs(d sqldb.Dialect, id uuid.UUID, f runs.Fenced, n Draft) []any {
	return sqldb.InsertArgs(d, table, &newCall{id: id, f: f, n: n})
}
