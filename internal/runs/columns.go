package runs

import (
	"strings"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// runColumn is one column of Runs that Run maps (sqldb.Column; col makes one). On SQL
// Server its type has the BIN2 collation of an identifier, because the @t table variable is
// declared from it (a table variable's string column otherwise takes the database's default
// collation, and comparing it with a BIN2 column of dbo.Runs is Msg 468 on every database
// whose default is not BIN2), and the rowversion is binary(8), what OUTPUT gives of it. Uses
// says where the column is answered: in every read of a run (answered: runColumns), in SQL
// Server's @t (mirrored: what OUTPUT ... INTO fills), and by a run leaving its lease (left:
// leftColumns).
type runColumn = sqldb.Column[Run]

func col(name, mssql, sqlite string, uses uint8, arg func(sqldb.Dialect, *Run) any) runColumn {
	return runColumn{Name: name, MSSQL: mssql, SQLite: sqlite, Uses: uses, Arg: arg}
}

const (
	answered = 1 << iota // in runColumns
	mirrored             // in @t
	// left: in what requeue and endLeased answer. leaveLease, the run's end (runEnded) and
	// the hooks' RunChanged read 13 columns of a run leaving its lease (Hooks says which):
	// the fence read 4 of them and the statement wrote 5 from its arguments, so these
	// answer the other 4. A complete answered its 37 columns before, then those 13.
	left
	// leftKey: in SQL Server's @t of requeue and endLeased besides the left columns, for
	// endLeased's probe of the subject's queue (OUTPUT may not hold a subquery).
	leftKey
)

// runTable is the columns of Runs in the order every column list is built in: runColumns,
// the insert's column and argument lists, and SQL Server's @t with its OUTPUT list. A column
// added to Runs for a field of Run is one entry here (after the field, in Run or in
// api.RunExtras, and the migrations); new columns go last, so that the insert's argument
// numbers stay as they were.
var runTable = []runColumn{
	col("RunId", "uniqueidentifier", "TEXT", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.RunID }),
	col("TenantId", id64, "TEXT", answered|mirrored|leftKey, func(_ sqldb.Dialect, r *Run) any { return r.TenantID }),
	col("ProjectId", id64, "TEXT", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return d.Text(r.ProjectID) }),
	col("EnvironmentId", id64, "TEXT", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return d.NullText(r.EnvironmentID) }),
	col("Subject", "nvarchar(256)"+bin2, "TEXT", answered|mirrored|leftKey, func(_ sqldb.Dialect, r *Run) any { return r.Subject }),
	col("Kind", id64, "TEXT", answered|mirrored|left, func(d sqldb.Dialect, r *Run) any { return d.Text(r.Kind) }),
	col("AgentId", "nvarchar(128)"+bin2, "TEXT", answered|mirrored|left, func(d sqldb.Dialect, r *Run) any { return d.Text(r.AgentID) }),
	col("StepId", "uniqueidentifier", "TEXT", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.StepID }),
	col("SnapshotId", "uniqueidentifier", "TEXT", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.SnapshotID }),
	col("Input", "nvarchar(max)", "TEXT", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return r.Input.Arg(d) }),
	col("Band", "int", "INTEGER", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return int(r.Band) }),
	col("State", "int", "INTEGER", answered|mirrored, nil), // the insert's literal 0: queued
	col("Epoch", "bigint", "INTEGER", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.Epoch }),
	col("HolderId", "nvarchar(128)"+bin2, "TEXT", answered|mirrored, nil),
	col("LeaseSeconds", "int", "INTEGER", answered|mirrored, nil),
	col("LeasedUntil", "datetimeoffset(3)", "DATETIME", answered|mirrored, nil),
	col("Attempt", "int", "INTEGER", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.Attempt }),
	col("MaxAttempts", "int", "INTEGER", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.MaxAttempts }),
	col("MaxCorrections", "int", "INTEGER", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.MaxCorrections }),
	col("QueuedAt", "datetimeoffset(3)", "DATETIME", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return d.Time(r.QueuedAt) }),
	col("DueAt", "datetimeoffset(3)", "DATETIME", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return d.Time(r.DueAt) }),
	col("DeadlineAt", "datetimeoffset(3)", "DATETIME", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return d.NullTime(r.DeadlineAt) }),
	col("EndedAt", "datetimeoffset(3)", "DATETIME", answered|mirrored, nil),
	col("Outcome", "nvarchar(16)"+bin2, "TEXT", answered|mirrored, nil),
	col("ErrorCode", id64, "TEXT", answered|mirrored, nil),
	col("ErrorMessage", "nvarchar(2000)", "TEXT", answered|mirrored, nil),
	col("CancelRequestedAt", "datetimeoffset(3)", "DATETIME", answered|mirrored, nil),
	col("IdempotencyKey", "nvarchar(256)"+bin2, "TEXT", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.IdempotencyKey }),
	col("ParentRunId", "uniqueidentifier", "TEXT", answered|mirrored|left, func(_ sqldb.Dialect, r *Run) any { return nullID(r.ParentRunID) }),
	col("Depth", "int", "INTEGER", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return r.Depth }),
	col("ContinuedFromRunId", "uniqueidentifier", "TEXT", answered|mirrored|left, func(_ sqldb.Dialect, r *Run) any { return nullID(r.ContinuedFromRunID) }),
	col("CreatedBy", id64, "TEXT", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return d.Text(r.CreatedBy) }),
	// RequestHash is read only where an idempotency key is compared (byIdempotency).
	col("RequestHash", "nvarchar(64)"+bin2, "TEXT", 0, func(d sqldb.Dialect, r *Run) any { return d.NullText(r.RequestHash) }),
	col("Version", "binary(8)", "INTEGER", answered|mirrored, nil),
	// SubjectHead is answered only by the writes that may move it (the insert, the ends).
	col("SubjectHead", "bit", "INTEGER", mirrored, nil),
	col("Tags", "nvarchar(max)", "TEXT", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return r.Tags.Arg(d) }),
	col("Metadata", "nvarchar(max)", "TEXT", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return r.Metadata.Arg(d) }),
	col("ForkedFromCheckpointId", "uniqueidentifier", "TEXT", answered|mirrored, func(_ sqldb.Dialect, r *Run) any { return nullID(r.ForkedFromCheckpointID) }),
	col("TraceParent", "nvarchar(55)", "TEXT", answered|mirrored, func(d sqldb.Dialect, r *Run) any { return d.NullText(r.TraceParent) }),
}

// The SQL Server types the table repeats.
const (
	bin2 = " COLLATE Latin1_General_100_BIN2"
	id64 = "nvarchar(64)" + bin2
)

// runColumns is the columns every read of a whole run answers (the answered ones, in order),
// leftColumns those a run leaving its lease answers, and runInsertColumns the columns the
// insert takes from its arguments, in argument order.
// sqliteRunColumns and sqliteLeftColumns are the same for SQLite's statements, with each
// time column answered as text (sqldb.SQLiteColumnList). A SQLite statement that answers
// them and orders by a time column names it with its table (Runs.QueuedAt): the bare name
// is the answered text's alias there, which no index orders.
var (
	runColumns, leftColumns             = columnList(answered, ""), columnList(left, "")
	sqliteRunColumns, sqliteLeftColumns = sqliteColumnList(answered, ""), sqliteColumnList(left, "")
	runInsertColumns                    = sqldb.InsertColumns(runTable)
)

// columnList joins the names of the columns used as in, each after prefix.
func columnList(in uint8, prefix string) string {
	return sqldb.ColumnList(runTable, prefix, func(c runColumn) bool { return c.Uses&in != 0 })
}

func sqliteColumnList(in uint8, prefix string) string {
	return sqldb.SQLiteColumnList(runTable, prefix, func(c runColumn) bool { return c.Uses&in != 0 })
}

// insertValues is the insert's argument placeholders in order ("?1, ?2, ..." or "@p1, ..."),
// and insertArg the placeholder of one column's argument.
func insertValues(placeholder string) string { return sqldb.InsertValues(runTable, placeholder) }

func insertArg(placeholder, name string) string { return sqldb.InsertArg(runTable, placeholder, name) }

// insertArgs is the insert's arguments for r (runTable's columns that have one, in order);
// hash is the request hash (nil: none). The one place they are built: the service and the
// tests that play a concurrent enqueuer both use it.
func insertArgs(d sqldb.Dialect, r Run, hash *string) []any {
	r.RequestHash = hash
	return sqldb.InsertArgs(d, runTable, &r)
}

// mssqlRunTable is the table variable OUTPUT ... INTO fills, and mssqlRunOutput the OUTPUT
// list that fills it, column for column: both built from runTable, so they cannot drift.
// mssqlLeftTable and mssqlLeftOutput are the same for the columns a run leaving its lease
// answers and the two keys endLeased's probe reads.
var (
	mssqlRunTable, mssqlRunOutput   = mssqlTableOf(mirrored)
	mssqlLeftTable, mssqlLeftOutput = mssqlTableOf(left | leftKey)
)

func mssqlTableOf(in uint8) (decl, output string) {
	var cols []string
	for _, c := range runTable {
		if c.Uses&in != 0 {
			cols = append(cols, c.Name+" "+c.MSSQL)
		}
	}
	return "DECLARE @t TABLE (" + strings.Join(cols, ", ") + ");\n",
		"\nOUTPUT " + columnList(in, "inserted.") + "\nINTO @t"
}

// nullID is an optional id as a statement argument (nil: NULL).
func nullID(id uuid.NullUUID) any {
	if !id.Valid {
		return nil
	}
	return id.UUID
}
