package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"

	mssqlmigrations "github.com/ledger-dev/ledger/migrations/mssql"
)

// No SQL Server runs here, so the SQL Server dialect is tested with synthetic driver errors
// shaped as go-mssqldb builds them: mssql.Error describes the last server message and All
// lists every message of the batch, first to last.

// serverErr returns the driver's error for a batch whose messages are msgs, in order.
func serverErr(msgs ...mssql.Error) error {
	last := msgs[len(msgs)-1]
	last.All = msgs
	return last
}

func msg(n int32, text string) mssql.Error { return mssql.Error{Number: n, Class: 16, Message: text} }

// terminated is the message SQL Server sends after the one that failed a statement.
var terminated = msg(3621, "The statement has been terminated.")

func TestMSSQLMapError(t *testing.T) {
	t.Parallel()
	d := mssqlDialect{}
	netErr := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	cases := []struct {
		name string
		err  error
		want error // nil: passes through unchanged
	}{
		{"deadlock victim", serverErr(msg(1205, "Transaction (Process ID 61) was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction.")), ErrRetryable},
		{"lock timeout", serverErr(msg(1222, "Lock request time out period exceeded."), terminated), ErrRetryable},
		{"snapshot update conflict", serverErr(msg(3960, "Snapshot isolation transaction aborted due to update conflict.")), ErrRetryable},
		{"deadlock before an unmapped message", serverErr(msg(1205, "deadlocked"), msg(266, "Transaction count after EXECUTE indicates a mismatching number of BEGIN and COMMIT statements.")), ErrRetryable},
		{"foreign key on insert", serverErr(msg(547, `The INSERT statement conflicted with the FOREIGN KEY constraint "FK_Runs_Projects". The conflict occurred in database "ledger", table "dbo.Projects".`), terminated), ErrBadReference},
		{"reference on delete", serverErr(msg(547, `The DELETE statement conflicted with the REFERENCE constraint "FK_Runs_ParentRun". The conflict occurred in database "ledger", table "dbo.Runs", column 'ParentRunId'.`), terminated), ErrBadReference},
		{"foreign key with a generated name", serverErr(msg(547, `The INSERT statement conflicted with the FOREIGN KEY constraint "FK__Runs__Tenant__3B75D760".`)), ErrBadReference},
		{"foreign key in another language", serverErr(msg(547, `L'instruction INSERT est en conflit avec la contrainte FOREIGN KEY "FK_ApiKeys_Tenants".`)), ErrBadReference},
		{"check constraint", serverErr(msg(547, `The UPDATE statement conflicted with the CHECK constraint "CK_Runs_Band". The conflict occurred in database "ledger", table "dbo.Runs", column 'Band'.`), terminated), ErrRefused},
		{"check whose message says FOREIGN KEY elsewhere", serverErr(msg(547, `The INSERT statement conflicted with the CHECK constraint "CK_Projects_RetentionDays". (FOREIGN KEY)`)), ErrRefused},
		{"row-level security block", serverErr(msg(33504, "The attempted operation failed because the target object 'ledger.dbo.Runs' has a block predicate that conflicts with this operation."), terminated), ErrRefused},
		{"trigger identity refusal", serverErr(msg(50001, "run identity is immutable")), ErrRefused},
		{"trigger transition refusal before 3609", serverErr(msg(50002, "illegal run transition"), msg(3609, "The transaction ended in the trigger. The batch has been aborted.")), ErrRefused},
		{"last trigger number", serverErr(msg(59999, "refused")), ErrRefused},
		{"past the trigger range", serverErr(msg(60000, "user message")), nil},
		{"azure database not available", serverErr(msg(40613, "Database 'ledger' on server 'srv' is not currently available. Please retry the connection later.")), ErrUnavailable},
		{"azure service busy", serverErr(msg(40501, "The service is currently busy. Retry the request after 10 seconds. Incident ID: x. Code: 1.")), ErrUnavailable},
		{"azure service error", serverErr(msg(40197, "The service has encountered an error processing your request. Please try again. Error code 40540.")), ErrUnavailable},
		{"azure not enough resources", serverErr(msg(49918, "Cannot process request. Not enough resources to process request.")), ErrUnavailable},
		{"azure too many create or update", serverErr(msg(49919, "Cannot process create or update request.")), ErrUnavailable},
		{"azure too many operations", serverErr(msg(49920, "Cannot process request. Too many operations in progress.")), ErrUnavailable},
		{"azure worker limit", serverErr(msg(10928, "Resource ID : 1. The request limit for the database is 90 and has been reached.")), ErrUnavailable},
		{"azure minimum guarantee", serverErr(msg(10929, "Resource ID : 1. The request minimum guarantee is 0, maximum limit is 90.")), ErrUnavailable},
		{"fatal error severed the connection", mssql.ServerError{}, ErrUnavailable},
		{"OPENJSON below compatibility level 130", serverErr(msg(208, "Invalid object name 'OPENJSON'.")), ErrMisconfigured},
		{"table missing: schema behind", serverErr(msg(208, "Invalid object name 'dbo.RunLeaseCounters'.")), ErrMisconfigured},
		{"column missing", serverErr(msg(207, "Invalid column name 'AdapterVersion'.")), ErrMisconfigured},
		{"wrong SET options for a filtered index", serverErr(msg(1934, "INSERT failed because the following SET options have incorrect settings: 'QUOTED_IDENTIFIER'.")), ErrMisconfigured},
		{"permission denied", serverErr(msg(229, "The INSERT permission was denied on the object 'Runs', database 'ledger', schema 'dbo'.")), ErrMisconfigured},
		{"column permission denied", serverErr(msg(230, "The UPDATE permission was denied on the column 'State' of the object 'Runs'.")), ErrMisconfigured},
		{"collation conflict of a comparison", serverErr(msg(468, `Cannot resolve the collation conflict between "SQL_Latin1_General_CP1_CI_AS" and "Latin1_General_100_BIN2" in the equal to operation.`)), ErrCollationConflict},
		{"collation conflict of an operation", serverErr(msg(446, "Cannot resolve collation conflict for equal to operation.")), ErrCollationConflict},
		{"collation conflict of a UNION column", serverErr(msg(451, `Cannot resolve collation conflict between "Latin1_General_100_BIN2" and "SQL_Latin1_General_CP1_CI_AS" in UNION operator occurring in SELECT statement column 1.`)), ErrCollationConflict},
		{"collation unresolved", serverErr(msg(457, "Implicit conversion of nvarchar value to nvarchar cannot be performed because the collation of the value is unresolved due to a collation conflict.")), ErrCollationConflict},
		{"unmapped server message", serverErr(msg(8152, "String or binary data would be truncated.")), nil},
		{"network error", fmt.Errorf("read: %w", netErr), ErrUnavailable},
		{"bad connection", driver.ErrBadConn, ErrUnavailable},
		{"connection closed mid-read", io.EOF, ErrUnavailable},
		{"short read", io.ErrUnexpectedEOF, ErrUnavailable},
		{"broken TDS stream", mssql.StreamError{InnerError: errors.New("bad token")}, ErrUnavailable},
		{"no rows", sql.ErrNoRows, ErrNotFound},
		{"canceled by the caller", context.Canceled, nil},
		{"not the driver's", errors.New("decode: bad json"), nil},
	}
	sentinels := []error{ErrNotFound, ErrBadReference, ErrRefused, ErrRetryable, ErrUnavailable, ErrMisconfigured, ErrCollationConflict}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := d.MapError(c.err)
			// mssql.Error holds a slice, so errors are compared by their text.
			if !strings.Contains(got.Error(), c.err.Error()) {
				t.Fatalf("MapError lost the original error: %v", got)
			}
			var me mssql.Error
			if errors.As(c.err, &me) && !errors.As(got, &me) {
				t.Fatalf("the mapped error no longer unwraps to the driver's: %v", got)
			}
			for _, s := range sentinels {
				if errors.Is(got, s) != (s == c.want) {
					t.Fatalf("MapError(%v) = %v; errors.Is(%v) = %v, want %v", c.err, got, s, errors.Is(got, s), s == c.want)
				}
			}
			if IsConflict(got) {
				t.Fatalf("MapError(%v) = %v is a conflict", c.err, got)
			}
			if c.want == nil && got.Error() != c.err.Error() {
				t.Fatalf("MapError changed an error it does not map: %v", got)
			}
			if again := d.MapError(got); again.Error() != got.Error() {
				t.Fatalf("mapping twice wrapped again: %v", again)
			}
		})
	}
	if d.MapError(nil) != nil {
		t.Fatal("MapError(nil) is not nil")
	}
	if got := d.MapError(serverErr(msg(208, "Invalid object name 'OPENJSON'."))); !strings.Contains(got.Error(), "ledger check") {
		t.Fatalf("a 208 does not point at `ledger check`: %v", got)
	}
}

// uniqueNames reads migrations/mssql for every unique index (a duplicate is Msg 2601) and
// every PRIMARY KEY or UNIQUE constraint (Msg 2627), with its table.
func uniqueNames(t *testing.T) map[string]struct {
	number int32
	table  string
} {
	t.Helper()
	out := map[string]struct {
		number int32
		table  string
	}{}
	index := regexp.MustCompile(`(?i)CREATE\s+UNIQUE\s+(?:NONCLUSTERED\s+|CLUSTERED\s+)?INDEX\s+\[(\w+)\]\s+ON\s+\[dbo\]\.\[(\w+)\]`)
	table := regexp.MustCompile(`(?i)CREATE\s+TABLE\s+\[dbo\]\.\[(\w+)\]`)
	constraint := regexp.MustCompile(`(?i)CONSTRAINT\s+\[(\w+)\]\s+(?:PRIMARY\s+KEY|UNIQUE)`)
	for _, name := range upFiles(t) {
		text := readMigration(t, name)
		for _, m := range index.FindAllStringSubmatch(text, -1) {
			out[m[1]] = struct {
				number int32
				table  string
			}{mssqlDuplicateIndex, m[2]}
		}
		// A constraint belongs to the last CREATE TABLE before it.
		tables := table.FindAllStringSubmatchIndex(text, -1)
		for _, m := range constraint.FindAllStringSubmatchIndex(text, -1) {
			owner := ""
			for _, tm := range tables {
				if tm[0] < m[0] {
					owner = text[tm[2]:tm[3]]
				}
			}
			out[text[m[2]:m[3]]] = struct {
				number int32
				table  string
			}{mssqlDuplicateKey, owner}
		}
	}
	return out
}

// conflictMarkers finds the index and constraint names the stores pass to IsConflict: every
// Go string literal in internal/ (tests aside) that is exactly such a name.
func conflictMarkers(t *testing.T) []string {
	t.Helper()
	lit := regexp.MustCompile(`"((?:UX|PK|UQ)_\w+)"`)
	seen := map[string]bool{}
	root := filepath.Join("..", "..", "internal")
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(src), -1) {
			seen[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func duplicateMessage(number int32, name, table, key string) mssql.Error {
	if number == mssqlDuplicateIndex {
		return msg(number, fmt.Sprintf("Cannot insert duplicate key row in object 'dbo.%s' with unique index '%s'. The duplicate key value is (%s).", table, name, key))
	}
	return msg(number, fmt.Sprintf("Violation of PRIMARY KEY constraint '%s'. Cannot insert duplicate key in object 'dbo.%s'. The duplicate key value is (%s).", name, table, key))
}

func TestMSSQLMapErrorNamesEachRecognisedIndex(t *testing.T) {
	t.Parallel()
	d := mssqlDialect{}
	catalog := uniqueNames(t)
	markers := conflictMarkers(t)
	if len(markers) == 0 {
		t.Fatal("found no conflict markers in internal/: the scan is broken")
	}
	// Names the stores recognise by IsConflict(err) with no marker: a duplicate of the
	// project key (concurrent create), of the task lock key (concurrent acquire) and of
	// the continuation index (concurrent continue).
	names := append(markers, "PK_Projects", "PK_TaskRunLocks", "UX_Runs_ContinuedFrom")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			u, ok := catalog[name]
			if !ok {
				t.Fatalf("the stores recognise %s, but no migration creates a unique index or key of that name", name)
			}
			// The key value holds user data that names every other marker: it must never
			// decide the match. The interesting message is not the last one.
			key := "t-1, " + strings.Join(names, " ")
			err := fmt.Errorf("insert: %w", serverErr(duplicateMessage(u.number, name, u.table, key), terminated))
			got := d.MapError(err)
			var ce *ConflictError
			if !errors.As(got, &ce) || ce.Constraint != name {
				t.Fatalf("MapError(%d on %s) = %v, want a conflict on %s", u.number, name, got, name)
			}
			if !IsConflict(got, name) || !IsConflict(got) {
				t.Fatalf("IsConflict does not see %s", name)
			}
			for _, other := range names {
				if other != name && IsConflict(got, other) {
					t.Fatalf("a duplicate on %s matched the marker %s", name, other)
				}
			}
			if !errors.Is(got, err) {
				t.Fatal("the conflict does not wrap the driver error")
			}
		})
	}
}

func TestQuotedName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		msg  string
		q    byte
		n    int
		want string
	}{
		{"a 'x' b 'y' c", '\'', 1, "x"},
		{"a 'x' b 'y' c", '\'', 2, "y"},
		{`a "FK_A" b`, '"', 1, "FK_A"},
		{"no names here (key)", '\'', 1, "no names here "},
		{"unterminated 'x", '\'', 1, "unterminated 'x"},
		{"one 'x' (k 'y')", '\'', 3, "one 'x' "},
	}
	for _, c := range cases {
		if got := quotedName(c.msg, c.q, c.n); got != c.want {
			t.Errorf("quotedName(%q, %q, %d) = %q, want %q", c.msg, c.q, c.n, got, c.want)
		}
	}
}

func TestMSSQLConfig(t *testing.T) {
	t.Parallel()
	const base = "sqlserver://svc:s3cret@db.example:1433?database=ledger"
	cases := []struct {
		name    string
		dsn     string
		app     string
		wantErr string
	}{
		{"turns guid conversion on", base, "ledger", ""},
		{"keeps it on", base + "&guid+conversion=true", "ledger", ""},
		{"keeps it on, any spelling", base + "&GUID+Conversion=yes", "ledger", ""},
		{"keeps the caller's app name", base + "&app+name=billing-ledger", "billing-ledger", ""},
		{"refuses guid conversion off", base + "&guid+conversion=false", "", "guid conversion=false"},
		{"refuses it off, any spelling", base + "&Guid+Conversion=0", "", "guid conversion=0"},
		{"refuses it off as no", base + "&guid+conversion=no", "", "guid conversion=no"},
		{"reports a bad value", base + "&guid+conversion=maybe", "", "guid conversion"},
		{"not a URL", "sqlserver://svc:s3cret@db example:1433?%zz", "", "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := mssqlConfig(c.dsn)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("mssqlConfig(%q) error %v, want one naming %q", c.dsn, err, c.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !cfg.Encoding.GuidConversion {
				t.Fatal("guid conversion is off")
			}
			if cfg.AppName != c.app {
				t.Fatalf("app name %q, want %q", cfg.AppName, c.app)
			}
			// The rewritten configuration survives the driver's own URL form (which drops the
			// app name, so only the conversion and the database are compared).
			again, err := msdsn.Parse(cfg.URL().String())
			if err != nil {
				t.Fatal(err)
			}
			if !again.Encoding.GuidConversion || again.Database != "ledger" {
				t.Fatalf("round trip lost settings: guid %v, database %q", again.Encoding.GuidConversion, again.Database)
			}
		})
	}
}

func TestMSSQLConnectorSetsTheSessionOptions(t *testing.T) {
	t.Parallel()
	c, _, err := newMSSQLConnector("sqlserver://svc:pw@db.example?database=ledger")
	if err != nil {
		t.Fatal(err)
	}
	if c.SessionInitSQL != MSSQLSessionInit {
		t.Fatalf("the connector runs %q on new sessions", c.SessionInitSQL)
	}
	set := map[string]string{}
	for _, line := range strings.Split(MSSQLSessionInit, "\n") {
		f := strings.Fields(strings.TrimSuffix(line, ";"))
		if len(f) != 3 || f[0] != "SET" {
			t.Fatalf("unexpected session init line %q", line)
		}
		set[f[1]] = f[2]
	}
	if set["LANGUAGE"] != "us_english" {
		t.Errorf("the session init sets LANGUAGE %q: MapError reads English messages", set["LANGUAGE"])
	}
}

func TestScopeArgsNeverLetATenantSetTheBypass(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"acme", "LedgerMaintenance", "1", "", "x'; EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = 1; --", "N'LedgerMaintenance'"} {
		tenant, maint := scopeArgs(TenantScope(id))
		if maint != 0 || tenant != id {
			t.Fatalf("TenantScope(%q) sends tenant %v, bypass %d", id, tenant, maint)
		}
	}
	if tenant, maint := scopeArgs(MaintenanceScope()); tenant != nil || maint != 1 {
		t.Fatalf("MaintenanceScope sends tenant %v, bypass %d", tenant, maint)
	}
	if tenant, maint := scopeArgs(Scope{}); tenant != "" || maint != 0 {
		t.Fatalf("the zero Scope sends tenant %v, bypass %d", tenant, maint)
	}
	// The keys are literals of the statement and the values its parameters: nothing a
	// caller passes is ever part of the SQL text.
	want := "EXEC sys.sp_set_session_context @key = N'TenantId', @value = @p1;\nEXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = @p2;"
	if mssqlSetScope != want {
		t.Fatalf("SetScope's statement changed:\n%s", mssqlSetScope)
	}
}

func upFiles(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(mssqlmigrations.FS, "*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(names, func(i, j int) bool {
		a, _ := strconv.Atoi(names[i][:6])
		b, _ := strconv.Atoi(names[j][:6])
		return a < b
	})
	return names
}

func readMigration(t *testing.T, name string) string {
	t.Helper()
	b, err := fs.ReadFile(mssqlmigrations.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
