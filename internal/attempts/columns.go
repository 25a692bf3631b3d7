package attempts

import (
	"strconv"
	"strings"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// column is one column of ExecutionAttempts that Attempt maps: its name (the db tag of the
// field it fills), its type in each dialect's table (TestColumnTableMirrorsAttempts holds
// both to the migrations), and its value in the claim's insert.
type column struct {
	name   string
	mssql  string // with the BIN2 collation of an identifier
	sqlite string
	// arg is the column's value in the insert, which takes the columns that have one, in
	// this order, as its numbered arguments; nil: the insert writes a literal (CorrectionCount
	// 0), the database's value (Version) or nothing (NULL).
	arg func(d sqldb.Dialect, a *Attempt) any
}

// table is the columns of ExecutionAttempts in the order every list of them is built in:
// columns, insertedColumns, and the insert's column and argument lists. A column added for
// a field of Attempt is one entry here (and the migrations); new columns go last.
var table = []column{
	{"AttemptId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, a *Attempt) any { return a.AttemptID }},
	{"RunId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, a *Attempt) any { return a.RunID }},
	{"StepId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, a *Attempt) any { return a.StepID }},
	{"TenantId", id64, "TEXT", func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.TenantID) }},
	{"ProjectId", id64, "TEXT", func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.ProjectID) }},
	{"EnvironmentId", id64, "TEXT", func(d sqldb.Dialect, a *Attempt) any { return d.NullText(a.EnvironmentID) }},
	{"LeaseId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, a *Attempt) any { return a.LeaseID }},
	{"FencingToken", "bigint", "INTEGER", func(_ sqldb.Dialect, a *Attempt) any { return a.FencingToken }},
	{"SnapshotId", "uniqueidentifier", "TEXT", func(_ sqldb.Dialect, a *Attempt) any { return a.SnapshotID }},
	{"ReleaseId", "nvarchar(256)" + bin2, "TEXT", func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.ReleaseID) }},
	{"AdapterVersion", "nvarchar(32)" + bin2, "TEXT", func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.AdapterVersion) }},
	{"AgentId", "nvarchar(128)" + bin2, "TEXT", func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.AgentID) }},
	{"ModelProfileId", "nvarchar(128)" + bin2, "TEXT", func(d sqldb.Dialect, a *Attempt) any { return d.Text(a.ModelProfileID) }},
	{"State", "int", "INTEGER", func(_ sqldb.Dialect, a *Attempt) any { return int(a.State) }},
	{"Phase", "int", "INTEGER", func(_ sqldb.Dialect, a *Attempt) any { return int(a.Phase) }},
	{"CorrectionCount", "int", "INTEGER", nil},
	{"MaxCorrections", "int", "INTEGER", func(_ sqldb.Dialect, a *Attempt) any { return a.MaxCorrections }},
	{"LastCheckpointId", "uniqueidentifier", "TEXT", nil},
	{"ContextSnapshotRef", "nvarchar(512)", "TEXT", nil},
	{"OutcomeHash", "nvarchar(128)" + bin2, "TEXT", nil},
	{"CancellationObservedAt", "datetimeoffset", "DATETIME", nil},
	{"StartedAt", "datetimeoffset", "DATETIME", func(d sqldb.Dialect, a *Attempt) any { return d.Time(a.StartedAt) }},
	{"EndedAt", "datetimeoffset", "DATETIME", nil},
	{"Version", "rowversion", "INTEGER", nil},
	{"ErrorCode", id64, "TEXT", nil},
	{"ErrorMessage", "nvarchar(2000)", "TEXT", nil},
	{"ErrorDetails", "nvarchar(max)", "TEXT", nil},
}

const (
	bin2 = " COLLATE Latin1_General_100_BIN2"
	id64 = "nvarchar(64)" + bin2
)

// columns is every column, as a statement that answers the attempt lists them, and
// insertedColumns the same as SQL Server's OUTPUT spells them.
var columns, insertedColumns = columnList(""), columnList("inserted.")

// insertColumns is the columns the insert takes from its arguments, in argument order.
var insertColumns = func() string {
	var names []string
	for _, c := range table {
		if c.arg != nil {
			names = append(names, c.name)
		}
	}
	return joinWrapped(names)
}()

func columnList(prefix string) string {
	names := make([]string, len(table))
	for i, c := range table {
		names[i] = prefix + c.name
	}
	return joinWrapped(names)
}

// insertValues is the insert's placeholders in order ("?1, ?2, ..." or "@p1, ...").
func insertValues(placeholder string) string {
	var ps []string
	for _, c := range table {
		if c.arg != nil {
			ps = append(ps, placeholder+strconv.Itoa(len(ps)+1))
		}
	}
	return joinWrapped(ps)
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

// insertArgs is the insert's arguments (table's columns that have one, in order). The
// statement only stores its text, so all of it goes as Dialect.Text: one declaration list
// (SQL Server's plan-cache key) for every length.
func insertArgs(d sqldb.Dialect, a Attempt) []any {
	args := make([]any, 0, len(table))
	for _, c := range table {
		if c.arg != nil {
			args = append(args, c.arg(d, &a))
		}
	}
	return args
}
