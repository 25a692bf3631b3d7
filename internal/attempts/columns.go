package attempts

import "github.com/ledger-dev/ledger/internal/sqldb"

// column is one column of ExecutionAttempts that Attempt maps (sqldb.Column; col makes one);
// the insert writes a literal for CorrectionCount (0), the database's Version, and NULL for
// the columns without an argument.
type column = sqldb.Column[Attempt]

func col(name, mssql, sqlite string, uses uint8, arg func(sqldb.Dialect, *Attempt) any) column {
	return column{Name: name, MSSQL: mssql, SQLite: sqlite, Uses: uses, Arg: arg}
}

const (
	// fenced: read by a holder's fence (runs' fence statement, FenceColumns), under the
	// locks of the transaction that then writes.
	fenced = 1 << iota
	// ended: written by the end from its arguments (State, EndedAt, the error) or from
	// them and a fenced column (OutcomeHash).
	ended
)

// table is the columns of ExecutionAttempts in the order every list of them is built in:
// columns, insertedColumns, and the insert's column and argument lists. A column added for
// a field of Attempt is one entry here (and the migrations); new columns go last.
var table = []column{
	col("AttemptId", "uniqueidentifier", "TEXT", fenced, func(_ sqldb.Dialect, a *Attempt) any { return a.AttemptID }),
	col("RunId", "uniqueidentifier", "TEXT", fenced, func(_ sqldb.Dialect, a *Attempt) any { return a.RunID }),
	col("StepId", "uniqueidentifier", "TEXT", 0, func(_ sqldb.Dialect, a *Attempt) any { return a.StepID }),
	col("TenantId", id64, "TEXT", fenced, func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.TenantID) }),
	col("ProjectId", id64, "TEXT", fenced, func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.ProjectID) }),
	col("EnvironmentId", id64, "TEXT", 0, func(d sqldb.Dialect, a *Attempt) any { return d.NullText(a.EnvironmentID) }),
	col("LeaseId", "uniqueidentifier", "TEXT", 0, func(_ sqldb.Dialect, a *Attempt) any { return a.LeaseID }),
	col("FencingToken", "bigint", "INTEGER", fenced, func(_ sqldb.Dialect, a *Attempt) any { return a.FencingToken }),
	col("SnapshotId", "uniqueidentifier", "TEXT", 0, func(_ sqldb.Dialect, a *Attempt) any { return a.SnapshotID }),
	col("ReleaseId", "nvarchar(256)"+bin2, "TEXT", 0, func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.ReleaseID) }),
	col("AdapterVersion", "nvarchar(32)"+bin2, "TEXT", 0, func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.AdapterVersion) }),
	col("AgentId", "nvarchar(128)"+bin2, "TEXT", 0, func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.AgentID) }),
	col("ModelProfileId", "nvarchar(128)"+bin2, "TEXT", 0, func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.ModelProfileID) }),
	col("State", "int", "INTEGER", fenced|ended, func(_ sqldb.Dialect, a *Attempt) any { return int(a.State) }),
	col("Phase", "int", "INTEGER", fenced, func(_ sqldb.Dialect, a *Attempt) any { return int(a.Phase) }),
	col("CorrectionCount", "int", "INTEGER", fenced, nil),
	col("MaxCorrections", "int", "INTEGER", fenced, func(_ sqldb.Dialect, a *Attempt) any { return a.MaxCorrections }),
	col("LastCheckpointId", "uniqueidentifier", "TEXT", 0, nil),
	col("ContextSnapshotRef", "nvarchar(512)", "TEXT", 0, nil),
	col("OutcomeHash", "nvarchar(128)"+bin2, "TEXT", fenced|ended, nil),
	col("CancellationObservedAt", "datetimeoffset", "DATETIME", fenced, nil),
	col("StartedAt", "datetimeoffset", "DATETIME", 0, func(d sqldb.Dialect, a *Attempt) any { return d.Time(a.StartedAt) }),
	col("EndedAt", "datetimeoffset", "DATETIME", ended, nil),
	col("Version", "rowversion", "INTEGER", 0, nil),
	col("ErrorCode", id64, "TEXT", ended, nil),
	col("ErrorMessage", "nvarchar(2000)", "TEXT", ended, nil),
	col("ErrorDetails", "nvarchar(max)", "TEXT", ended, nil),
}

const (
	bin2 = " COLLATE Latin1_General_100_BIN2"
	id64 = "nvarchar(64)" + bin2
)

// columns is every column, as a statement that answers the attempt lists them,
// insertedColumns the same as SQL Server's OUTPUT spells them, sqliteColumns as SQLite's
// statements answer them (times as text: sqldb.SQLiteColumnList), and insertColumns the
// columns the insert takes from its arguments, in argument order.
var (
	columns, insertedColumns = sqldb.ColumnList(table, "", nil), sqldb.ColumnList(table, "inserted.", nil)
	sqliteColumns            = sqldb.SQLiteColumnList(table, "", nil)
	insertColumns            = sqldb.InsertColumns(table)
)

// Columns and SQLiteColumns are columns and sqliteColumns for the packages that read the
// attempt beside this one (history's listings and feed), so that a column added here is
// answered there too.
var Columns, SQLiteColumns = columns, sqliteColumns

// SQLiteWholeColumns is every column of the attempt (alias a) as SQLite's statements answer
// them: what a fence reads for EndWhole.
var SQLiteWholeColumns = sqldb.SQLiteColumnList(table, "a.", nil)

// FenceColumns and SQLiteFenceColumns are the columns a holder's fence reads of the attempt
// (alias a), as SQL Server's and SQLite's statements answer them: what EndFenced takes from
// the caller. restColumns and sqliteRestColumns are the columns EndFenced reads back: those
// neither fenced nor written by the end from its arguments (the Version among them).
var (
	FenceColumns       = sqldb.ColumnList(table, "a.", func(c column) bool { return c.Uses&fenced != 0 })
	SQLiteFenceColumns = sqldb.SQLiteColumnList(table, "a.", func(c column) bool { return c.Uses&fenced != 0 })
	restColumns        = sqldb.ColumnList(table, "inserted.", func(c column) bool { return c.Uses&(fenced|ended) == 0 })
	sqliteRestColumns  = sqldb.SQLiteColumnList(table, "", func(c column) bool { return c.Uses&(fenced|ended) == 0 })
)

// insertValues is the insert's placeholders in order ("?1, ?2, ..." or "@p1, ...").
func insertValues(placeholder string) string { return sqldb.InsertValues(table, placeholder) }

// insertArgs is the insert's arguments (table's columns that have one, in order). The
// statement only stores its text, so all of it goes as Dialect.Text: one declaration list
// (SQL Server's plan-cache key) for every length.
func insertArgs(d sqldb.Dialect, a Attempt) []any { return sqldb.InsertArgs(d, table, &a) }
