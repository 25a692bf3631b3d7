package runs

import (
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// runColumn is one column of Runs that Run maps: its name (the db tag of the Run field it
// fills), its type in each dialect's table (as the migrations declare it: the schema tests
// hold both to them), where it is answered, and its value in the enqueue's insert.
type runColumn struct {
	name string
	// mssql is the column's type in dbo.Runs, with the BIN2 collation of an identifier (the
	// @t table variable declares it so: a table variable's string column otherwise takes the
	// database's default collation, and comparing it with a BIN2 column of dbo.Runs is Msg
	// 468 on every database whose default is not BIN2); the rowversion is binary(8), what
	// OUTPUT gives of it.
	mssql string
	// sqlite is the column's declared type in SQLite's Runs.
	sqlite string
	// in says where the column is answered: in every read of a run (answered: runColumns), in
	// SQL Server's @t (mirrored: what OUTPUT ... INTO fills), and by a run leaving its lease
	// (left: leftColumns).
	in columnUse
	// arg is the column's value in the insert (queries.insert takes the columns that have one,
	// in this order, as its numbered arguments); nil: the insert writes a literal, the
	// database's value, or nothing.
	arg func(d sqldb.Dialect, r *Run) any
}

type columnUse uint8

const (
	answered columnUse = 1 << iota // in runColumns
	mirrored                       // in @t
	// left: in what requeue and endLeased answer, which is all that leaveLease, the run's
	// end (runEnded) and the hooks' RunChanged read of a run leaving its lease (Hooks says
	// so). A complete answered its 37 columns before; these cost about a third.
	left
)

// runTable is the columns of Runs in the order every column list is built in: runColumns,
// the insert's column and argument lists, and SQL Server's @t with its OUTPUT list. A column
// added to Runs for a field of Run is one entry here (after the field, in Run or in
// api.RunExtras, and the migrations); new columns go last, so that the insert's argument
// numbers stay as they were.
var runTable = []runColumn{
	{"RunId", "uniqueidentifier", "TEXT", answered | mirrored | left, func(_ sqldb.Dialect, r *Run) any { return r.RunID }},
	{"TenantId", id64, "TEXT", answered | mirrored | left, func(_ sqldb.Dialect, r *Run) any { return r.TenantID }},
	{"ProjectId", id64, "TEXT", answered | mirrored | left, func(d sqldb.Dialect, r *Run) any { return d.Text(r.ProjectID) }},
	{"EnvironmentId", id64, "TEXT", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return d.NullText(r.EnvironmentID) }},
	{"Subject", "nvarchar(256)" + bin2, "TEXT", answered | mirrored | left, func(_ sqldb.Dialect, r *Run) any { return r.Subject }},
	{"Kind", id64, "TEXT", answered | mirrored | left, func(d sqldb.Dialect, r *Run) any { return d.Text(r.Kind) }},
	{"AgentId", "nvarchar(128)" + bin2, "TEXT", answered | mirrored | left, func(d sqldb.Dialect, r *Run) any { return d.Text(r.AgentID) }},
	{"StepId", "uniqueidentifier", "TEXT", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return r.StepID }},
	{"SnapshotId", "uniqueidentifier", "TEXT", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return r.SnapshotID }},
	{"Input", "nvarchar(max)", "TEXT", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return r.Input.Arg(d) }},
	{"Band", "int", "INTEGER", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return int(r.Band) }},
	{"State", "int", "INTEGER", answered | mirrored | left, nil}, // the insert's literal 0: queued
	{"Epoch", "bigint", "INTEGER", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return r.Epoch }},
	{"HolderId", "nvarchar(128)" + bin2, "TEXT", answered | mirrored, nil},
	{"LeaseSeconds", "int", "INTEGER", answered | mirrored, nil},
	{"LeasedUntil", "datetimeoffset(3)", "DATETIME", answered | mirrored, nil},
	{"Attempt", "int", "INTEGER", answered | mirrored | left, func(_ sqldb.Dialect, r *Run) any { return r.Attempt }},
	{"MaxAttempts", "int", "INTEGER", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return r.MaxAttempts }},
	{"MaxCorrections", "int", "INTEGER", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return r.MaxCorrections }},
	{"QueuedAt", "datetimeoffset(3)", "DATETIME", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return d.Time(r.QueuedAt) }},
	{"DueAt", "datetimeoffset(3)", "DATETIME", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return d.Time(r.DueAt) }},
	{"DeadlineAt", "datetimeoffset(3)", "DATETIME", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return d.NullTime(r.DeadlineAt) }},
	{"EndedAt", "datetimeoffset(3)", "DATETIME", answered | mirrored | left, nil},
	{"Outcome", "nvarchar(16)" + bin2, "TEXT", answered | mirrored | left, nil},
	{"ErrorCode", id64, "TEXT", answered | mirrored | left, nil},
	{"ErrorMessage", "nvarchar(2000)", "TEXT", answered | mirrored, nil},
	{"CancelRequestedAt", "datetimeoffset(3)", "DATETIME", answered | mirrored, nil},
	{"IdempotencyKey", "nvarchar(256)" + bin2, "TEXT", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return r.IdempotencyKey }},
	{"ParentRunId", "uniqueidentifier", "TEXT", answered | mirrored | left, func(_ sqldb.Dialect, r *Run) any { return nullID(r.ParentRunID) }},
	{"Depth", "int", "INTEGER", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return r.Depth }},
	{"ContinuedFromRunId", "uniqueidentifier", "TEXT", answered | mirrored | left, func(_ sqldb.Dialect, r *Run) any { return nullID(r.ContinuedFromRunID) }},
	{"CreatedBy", id64, "TEXT", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return d.Text(r.CreatedBy) }},
	// RequestHash is read only where an idempotency key is compared (byIdempotency).
	{"RequestHash", "nvarchar(64)" + bin2, "TEXT", 0, func(d sqldb.Dialect, r *Run) any { return d.NullText(r.RequestHash) }},
	{"Version", "binary(8)", "INTEGER", answered | mirrored, nil},
	// SubjectHead is answered only by the writes that may move it (the insert, the ends).
	{"SubjectHead", "bit", "INTEGER", mirrored, nil},
	{"Tags", "nvarchar(max)", "TEXT", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return r.Tags.Arg(d) }},
	{"Metadata", "nvarchar(max)", "TEXT", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return r.Metadata.Arg(d) }},
	{"ForkedFromCheckpointId", "uniqueidentifier", "TEXT", answered | mirrored, func(_ sqldb.Dialect, r *Run) any { return nullID(r.ForkedFromCheckpointID) }},
	{"TraceParent", "nvarchar(55)", "TEXT", answered | mirrored, func(d sqldb.Dialect, r *Run) any { return d.NullText(r.TraceParent) }},
}

// The SQL Server types the table repeats.
const (
	bin2 = " COLLATE Latin1_General_100_BIN2"
	id64 = "nvarchar(64)" + bin2
)

// runColumns is the columns every read of a whole run answers (the answered ones, in order),
// and leftColumns those a run leaving its lease answers.
var runColumns, leftColumns = columnList(answered, ""), columnList(left, "")

// runInsertColumns is the columns the insert takes from its arguments, in argument order.
var runInsertColumns = func() string {
	var names []string
	for _, c := range runTable {
		if c.arg != nil {
			names = append(names, c.name)
		}
	}
	return joinWrapped(names)
}()

// columnList joins the names of the columns used as in, each after prefix.
func columnList(in columnUse, prefix string) string {
	var names []string
	for _, c := range runTable {
		if c.in&in != 0 {
			names = append(names, prefix+c.name)
		}
	}
	return joinWrapped(names)
}

// joinWrapped joins a column or argument list, eight to a line, so the statements read.
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

// insertValues is the insert's argument placeholders in order ("?1, ?2, ..." or "@p1, ..."),
// and insertArg the placeholder of one column's argument.
func insertValues(placeholder string) string {
	var ps []string
	for _, c := range runTable {
		if c.arg != nil {
			ps = append(ps, placeholder+strconv.Itoa(len(ps)+1))
		}
	}
	return joinWrapped(ps)
}

func insertArg(placeholder, name string) string {
	n := 0
	for _, c := range runTable {
		if c.arg != nil {
			n++
			if c.name == name {
				return placeholder + strconv.Itoa(n)
			}
		}
	}
	panic("runs: the insert takes no argument for column " + name)
}

// insertArgs is the insert's arguments for r (runTable's columns that have one, in order);
// hash is the request hash (nil: none). The one place they are built: the service and the
// tests that play a concurrent enqueuer both use it.
func insertArgs(d sqldb.Dialect, r Run, hash *string) []any {
	r.RequestHash = hash
	args := make([]any, 0, len(runTable))
	for _, c := range runTable {
		if c.arg != nil {
			args = append(args, c.arg(d, &r))
		}
	}
	return args
}

// mssqlRunTable is the table variable OUTPUT ... INTO fills, and mssqlRunOutput the OUTPUT
// list that fills it, column for column: both built from runTable, so they cannot drift.
// mssqlLeftTable and mssqlLeftOutput are the same for the columns a run leaving its lease
// answers.
var (
	mssqlRunTable, mssqlRunOutput   = mssqlTableOf(mirrored)
	mssqlLeftTable, mssqlLeftOutput = mssqlTableOf(left)
)

func mssqlTableOf(in columnUse) (decl, output string) {
	var cols []string
	for _, c := range runTable {
		if c.in&in != 0 {
			cols = append(cols, c.name+" "+c.mssql)
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
