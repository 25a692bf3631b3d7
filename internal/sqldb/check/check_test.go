package check

import (
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	mssqlmigrations "github.com/ledger-dev/ledger/migrations/mssql"
)

// Every check's evaluation is a pure function of its rows: these tables feed each one a
// passing and a failing result (and what it cannot read), as SQL Server or SQLite would.

func some(v int64) sql.NullInt64      { return sql.NullInt64{Int64: v, Valid: true} }
func str(s string) sql.NullString     { return sql.NullString{String: s, Valid: true} }
func nullInt() sql.NullInt64          { return sql.NullInt64{} }
func nullStr() sql.NullString         { return sql.NullString{} }
func version(v string) sql.NullString { return str(v) }

// goodOptions is @@OPTIONS as the session init leaves it.
func goodOptions() int {
	opts := 0
	for _, o := range sessionOptions {
		if o.on {
			opts |= o.bit
		}
	}
	return opts
}

func optionBit(t *testing.T, name string) int {
	t.Helper()
	for _, o := range sessionOptions {
		if o.name == name {
			return o.bit
		}
	}
	t.Fatalf("no session option %s", name)
	return 0
}

type evalCase struct {
	name   string
	got    Result
	want   Status
	saying string // the detail or the fix says this
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got.Status != c.want {
				t.Fatalf("status %s, want %s (%s; fix: %s)", c.got.Status, c.want, c.got.Detail, c.got.Fix)
			}
			if c.got.Detail == "" {
				t.Fatal("no detail")
			}
			if c.want != StatusOK && c.got.Fix == "" {
				t.Fatalf("a %s result has no fix: %s", c.want, c.got.Detail)
			}
			if c.saying != "" && !strings.Contains(c.got.Detail+" | "+c.got.Fix, c.saying) {
				t.Fatalf("%q does not say %q (fix: %q)", c.got.Detail, c.saying, c.got.Fix)
			}
		})
	}
}

func TestMSSQLCheckEvaluations(t *testing.T) {
	t.Parallel()
	good := goodOptions()
	db := databaseRow{DatabaseName: "ledger", CompatibilityLevel: 130, ReadCommittedSnapshot: 1}
	old := databaseRow{DatabaseName: "led]ger", CompatibilityLevel: 120}
	allTables := []tablePermRow{
		{TableName: "Runs", NeedWrite: 1, CanSelect: some(1), CanInsert: some(1), CanUpdate: some(1), CanDelete: some(1)},
		{TableName: "schema_migrations", NeedWrite: 0, CanSelect: some(1), CanInsert: some(0), CanUpdate: some(0), CanDelete: some(0)},
	}
	noDelete := slices.Clone(allTables)
	noDelete[0].CanDelete = some(0)
	missing := slices.Clone(allTables)
	missing[0].CanSelect = nullInt()
	migrateAll := migratePermRow{UserName: "ledger_migrate", CreateTable: some(1), CreateFunction: some(1),
		AlterSecurityPolicy: some(1), CreateRole: some(1), AlterSchema: some(1), ReferencesSchema: some(1),
		SelectSchema: some(1), InsertSchema: some(1), UpdateSchema: some(1), DeleteSchema: some(1), RoleExists: 0,
		InRole: nullInt(), AlterAnyRole: some(1)}
	roleExists := migrateAll
	roleExists.CreateRole, roleExists.RoleExists, roleExists.InRole, roleExists.AlterAnyRole = some(0), 1, some(1), some(0)
	// A role a DBA made without adding the login: DATABASE_PRINCIPAL_ID says it is missing.
	roleHidden := migrateAll
	roleHidden.InRole, roleHidden.AlterAnyRole = nullInt(), some(0)
	noCreateRole := migrateAll
	noCreateRole.CreateRole = some(0)
	noPolicyRight := migrateAll
	noPolicyRight.AlterSecurityPolicy = some(0)
	modules := func(canView int64, mods ...[3]any) []moduleRow {
		if len(mods) == 0 {
			return []moduleRow{{CanViewDefinition: some(canView)}}
		}
		var rows []moduleRow
		for _, m := range mods {
			rows = append(rows, moduleRow{CanViewDefinition: some(canView), Name: str(m[0].(string)), TypeDesc: str("SQL_TRIGGER"),
				AnsiNulls: some(m[1].(int64)), QuotedIdentifier: some(m[2].(int64))})
		}
		return rows
	}
	// tables: name, filtered, blocked, name, ...
	policy := func(canView int64, exists int, enabled sql.NullInt64, tables ...any) []policyRow {
		if len(tables) == 0 {
			return []policyRow{{CanViewDefinition: some(canView), PolicyExists: exists, Enabled: enabled, TableName: nullStr()}}
		}
		var rows []policyRow
		for i := 0; i < len(tables); i += 3 {
			rows = append(rows, policyRow{CanViewDefinition: some(canView), PolicyExists: exists, Enabled: enabled,
				TableName: str(tables[i].(string)), Filtered: tables[i+1].(int), Blocked: tables[i+2].(int)})
		}
		return rows
	}
	runEvalCases(t, []evalCase{
		{"2016 SP1 passes", evalVersion(versionRow{version("13.0.4001.0"), some(3)}), StatusOK, "13.0.4001.0"},
		{"2022 passes", evalVersion(versionRow{version("16.0.4135.4"), some(2)}), StatusOK, ""},
		{"2016 RTM fails", evalVersion(versionRow{version("13.0.1601.5"), some(3)}), StatusFail, "2016 SP1"},
		{"2014 fails", evalVersion(versionRow{version("12.0.6024.0"), some(3)}), StatusFail, "upgrade"},
		{"Azure SQL Database passes whatever it reports", evalVersion(versionRow{version("12.0.2000.8"), some(5)}), StatusOK, "Azure SQL Database"},
		{"Azure SQL Managed Instance passes", evalVersion(versionRow{version("12.0.2000.8"), some(8)}), StatusOK, "Managed Instance"},
		{"an unreadable version is unknown", evalVersion(versionRow{version("vNext"), some(3)}), StatusUnknown, "13.0.4001"},

		{"level 130 passes", evalCompatibility(db), StatusOK, "130"},
		{"level 160 passes", evalCompatibility(databaseRow{DatabaseName: "ledger", CompatibilityLevel: 160}), StatusOK, ""},
		{"level 120 fails with the statement to fix it", evalCompatibility(old), StatusFail, "ALTER DATABASE [led]]ger] SET COMPATIBILITY_LEVEL = 130"},
		{"level 120 explains Msg 208", evalCompatibility(old), StatusFail, "Msg 208"},

		{"RCSI on is recommended", evalRCSI(db), StatusOK, "recommended"},
		{"RCSI off is supported with a warning", evalRCSI(databaseRow{DatabaseName: "ledger", CompatibilityLevel: 130}), StatusWarn, "SET READ_COMMITTED_SNAPSHOT ON"},

		{"the session init's options pass", evalSessionOptions(good), StatusOK, ""},
		{"XACT_ABORT is not this check's", evalSessionOptions(good | optionBit(t, "XACT_ABORT")), StatusOK, ""},
		{"QUOTED_IDENTIFIER off fails", evalSessionOptions(good &^ optionBit(t, "QUOTED_IDENTIFIER")), StatusFail, "QUOTED_IDENTIFIER OFF"},
		{"NUMERIC_ROUNDABORT on fails", evalSessionOptions(good | optionBit(t, "NUMERIC_ROUNDABORT")), StatusFail, "NUMERIC_ROUNDABORT ON"},
		{"NOCOUNT on fails", evalSessionOptions(good | optionBit(t, "NOCOUNT")), StatusFail, "NOCOUNT ON"},
		{"IMPLICIT_TRANSACTIONS on fails", evalSessionOptions(good | optionBit(t, "IMPLICIT_TRANSACTIONS")), StatusFail, "IMPLICIT_TRANSACTIONS ON"},

		{"XACT_ABORT off passes", evalXactAbort(good), StatusOK, "OFF"},
		{"XACT_ABORT on fails", evalXactAbort(good | 16384), StatusFail, "roll back the whole transaction"},

		{"modules created right pass", evalModules(modules(1, [3]any{"TR_Runs_Guard", int64(1), int64(1)}, [3]any{"fn_TenantAccess", int64(1), int64(1)}), ForServe), StatusOK, "fn_TenantAccess"},
		{"a trigger created with QUOTED_IDENTIFIER OFF fails", evalModules(modules(1, [3]any{"TR_Runs_Guard", int64(1), int64(0)}), ForServe), StatusFail, "TR_Runs_Guard (QUOTED_IDENTIFIER OFF)"},
		{"a bad module fails even when others are hidden", evalModules(modules(0, [3]any{"fn_TenantAccess", int64(0), int64(1)}), ForServe), StatusFail, "ANSI_NULLS OFF"},
		{"hidden modules are unknown, with the grant", evalModules(modules(0), ForServe), StatusUnknown, "GRANT VIEW DEFINITION ON SCHEMA::dbo"},
		{"no modules at all fails", evalModules(modules(1), ForServe), StatusFail, "ledger migrate up"},

		{"full data rights pass", evalServePermissions(allTables), StatusOK, ""},
		{"a missing DELETE fails and names it", evalServePermissions(noDelete), StatusFail, "Runs (DELETE)"},
		{"a missing table fails", evalServePermissions(missing), StatusFail, "Runs (missing)"},

		{"a role member passes", evalMaintenanceRole(roleRow{UserName: "ledger_service", InRole: some(1), DBOwner: some(0), RoleID: some(5)}), StatusOK, "ledger_maintenance"},
		{"dbo passes with a warning", evalMaintenanceRole(roleRow{UserName: "dbo", InRole: some(0), DBOwner: some(1), RoleID: some(5)}), StatusWarn, "more rights"},
		{"a db_owner member passes with a warning", evalMaintenanceRole(roleRow{UserName: "admin", InRole: some(0), DBOwner: some(1), RoleID: nullInt()}), StatusWarn, ""},
		{"a missing role fails", evalMaintenanceRole(roleRow{UserName: "ledger_service", InRole: nullInt(), DBOwner: some(0), RoleID: nullInt()}), StatusFail, "ledger migrate up"},
		{"a non-member fails with the statement", evalMaintenanceRole(roleRow{UserName: "ledger_service", InRole: some(0), DBOwner: some(0), RoleID: some(5)}), StatusFail, "ALTER ROLE [ledger_maintenance] ADD MEMBER [ledger_service]"},

		{"a migration login in the role passes", evalMigrateMaintenanceRole(roleRow{UserName: "ledger_migrate", InRole: some(1), DBOwner: some(0), RoleID: some(5)}), StatusOK, ""},
		{"a database owner migrates without the role", evalMigrateMaintenanceRole(roleRow{UserName: "dbo", InRole: some(0), DBOwner: some(1), RoleID: some(5)}), StatusOK, "database owner"},
		{"a migration login outside the role is warned", evalMigrateMaintenanceRole(roleRow{UserName: "ledger_migrate", InRole: some(0), DBOwner: some(0), RoleID: some(5)}), StatusWarn, "moves data"},

		{"full DDL rights pass", evalMigratePermissions(migrateAll), StatusOK, ""},
		{"CREATE ROLE is not needed once the role exists", evalMigratePermissions(roleExists), StatusOK, ""},
		{"CREATE ROLE is needed before", evalMigratePermissions(noCreateRole), StatusFail, "GRANT CREATE ROLE TO [ledger_migrate]"},
		{"a login that cannot see the role fails", evalMigratePermissions(roleHidden), StatusFail, "ALTER ROLE [ledger_maintenance] ADD MEMBER [ledger_migrate]"},
		{"ALTER ANY SECURITY POLICY is needed", evalMigratePermissions(noPolicyRight), StatusFail, "ALTER ANY SECURITY POLICY"},

		{"the policy on every tenant table passes", evalPolicy(policy(1, 1, some(1), "Runs", 1, 1, "Tenants", 1, 1), ForServe), StatusOK, "all 2 tables"},
		{"a blocked-only table passes and is named", evalPolicy(policy(1, 1, some(1), "Runs", 1, 1, "ReleaseOwners", 0, 1), ForServe), StatusOK, "writes only, by design: ReleaseOwners"},
		{"a missing policy fails", evalPolicy(policy(1, 0, nullInt(), "Runs", 0, 0), ForServe), StatusFail, "ledger migrate up"},
		{"a policy it cannot see is unknown", evalPolicy(policy(0, 0, nullInt(), "Runs", 0, 0), ForServe), StatusUnknown, "VIEW DEFINITION"},
		{"a policy that is off fails", evalPolicy(policy(1, 1, some(0), "Runs", 1, 1), ForServe), StatusFail, "WITH (STATE = ON)"},
		{"a tenant table outside the policy fails", evalPolicy(policy(1, 1, some(1), "Runs", 1, 1, "LeaseCounters", 0, 0), ForServe), StatusFail, "LeaseCounters"},
	})
}

func TestSchemaAndSQLiteCheckEvaluations(t *testing.T) {
	t.Parallel()
	okFile := fileState{path: "/d/ledger.db", exists: true, regular: true, size: 4096, writable: true, dirWritable: true}
	readOnly := okFile
	readOnly.writable = false
	readOnlyDir := okFile
	readOnlyDir.dirWritable = false
	dir := okFile
	dir.regular = false
	runEvalCases(t, []evalCase{
		{"a current schema passes", evalSchemaState(migrate.SchemaState{Version: 13, Latest: 13}), StatusOK, "13 of 13"},
		{"a schema behind fails", evalSchemaState(migrate.SchemaState{Version: 10, Latest: 13}), StatusFail, "ledger migrate up"},
		{"a dirty schema fails", evalSchemaState(migrate.SchemaState{Version: 13, Latest: 13, Dirty: true}), StatusFail, "ledger migrate force 13"},
		{"a schema ahead fails", evalSchemaState(migrate.SchemaState{Version: 14, Latest: 13}), StatusFail, "newer"},

		{"a writable file passes", sqliteFileCheck(okFile), StatusOK, "writable"},
		{"no file fails", sqliteFileCheck(fileState{path: "/d/ledger.db"}), StatusFail, "no database file at /d/ledger.db"},
		{"a directory fails", sqliteFileCheck(dir), StatusFail, "not a regular file"},
		{"a read-only file fails", sqliteFileCheck(readOnly), StatusFail, "not writable"},
		{"a read-only directory fails", sqliteFileCheck(readOnlyDir), StatusFail, "-wal and -shm"},
		{"an unreadable file fails", sqliteFileCheck(fileState{path: "/d/ledger.db", err: errors.New("permission denied")}), StatusFail, "permission denied"},

		{"WAL passes", evalJournalMode("wal"), StatusOK, "WAL"},
		{"rollback journal fails", evalJournalMode("delete"), StatusFail, "PRAGMA journal_mode=WAL"},
		{"NORMAL passes and says what it loses", evalSynchronous(1), StatusOK, "not of the OS"},
		{"FULL passes", evalSynchronous(2), StatusOK, "power loss"},
		{"OFF fails", evalSynchronous(0), StatusFail, "LEDGER_SQLITE_SYNC"},
		{"foreign keys on pass", evalForeignKeys(true), StatusOK, ""},
		{"foreign keys off fail", evalForeignKeys(false), StatusFail, ""},
	})
}

func TestCheckReportFailsOnlyOnRequiredFailures(t *testing.T) {
	t.Parallel()
	r := Report{Checks: []Result{
		{Name: "a", Required: true, Status: StatusOK, Detail: "fine"},
		{Name: "b", Required: true, Status: StatusWarn, Detail: "meh", Fix: "tune"},
		{Name: "c", Required: true, Status: StatusUnknown, Detail: "hidden", Fix: "grant"},
		{Name: "d", Required: false, Status: StatusFail, Detail: "optional", Fix: "maybe"},
	}}
	if !r.OK() || r.Err() != nil {
		t.Fatalf("warnings, unknowns and optional failures stopped the service: %v", r.Err())
	}
	r.Checks = append(r.Checks, Result{Name: "e", Required: true, Status: StatusFail, Detail: "level 120", Fix: "ALTER DATABASE"})
	if r.OK() {
		t.Fatal("a required failure passed")
	}
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), "e: level 120 (fix: ALTER DATABASE)") || strings.Contains(err.Error(), "optional") {
		t.Fatalf("Err() = %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatal("Err() spans lines")
	}
}

func TestLedgerTablesComeFromTheMigrations(t *testing.T) {
	t.Parallel()
	tables := ledgerTables()
	for _, want := range []string{"Tenants", "ApiKeys", "Projects", "Runs", "TaskRunLocks", "ExecutionAttempts",
		"Checkpoints", "CallRecords", "DecisionRequests", "SubAgentDelegations", "LoadedReleases", "IdempotencyTombstones"} {
		if !slices.Contains(tables, want) {
			t.Errorf("ledgerTables() lacks %s: %v", want, tables)
		}
	}
	seen := map[string]bool{}
	for _, tb := range tables {
		if seen[tb] {
			t.Errorf("%s listed twice", tb)
		}
		seen[tb] = true
	}
	q := servePermissionsQuery()
	for _, tb := range append(tables, "schema_migrations") {
		if !strings.Contains(q, "(N'"+tb+"', ") {
			t.Errorf("the permissions query does not ask about %s", tb)
		}
	}
	if got := removeString([]string{"a", "b", "a"}, "a"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("removeString = %v", got)
	}
}

func TestParsePurpose(t *testing.T) {
	t.Parallel()
	for _, p := range []Purpose{ForServe, ForMigrate} {
		got, err := ParsePurpose(p.String())
		if err != nil || got != p {
			t.Fatalf("ParsePurpose(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParsePurpose("deploy"); err == nil {
		t.Fatal("ParsePurpose accepted deploy")
	}
}

// A least-privilege migration login (schema rights, CREATE TABLE; no ALTER ANY SECURITY
// POLICY, CREATE FUNCTION, role rights or membership) may migrate a database already past
// migration 13: the check asks only what the pending migrations need (issue 26 item 7).
func TestMigratePermissionsAskWhatThePendingMigrationsNeed(t *testing.T) {
	t.Parallel()
	yes := sql.NullInt64{Int64: 1, Valid: true}
	no := sql.NullInt64{Int64: 0, Valid: true}
	least := migratePermRow{UserName: "ledger_migrate", CreateTable: yes, CreateFunction: no, AlterSecurityPolicy: no, CreateRole: no,
		AlterSchema: yes, ReferencesSchema: yes, SelectSchema: yes, InsertSchema: yes, UpdateSchema: yes, DeleteSchema: yes,
		RoleExists: 0, InRole: no, AlterAnyRole: no}
	if res := evalMigratePermissions(least); res.Status != StatusFail {
		t.Fatalf("with every migration pending: %+v; want a failure", res)
	}
	migs := fstest.MapFS{
		"000001_t.up.sql": {Data: []byte("-- migration: additive\nCREATE TABLE [dbo].[T] ([a] int);")},
		"000002_f.up.sql": {Data: []byte("-- migration: additive\nCREATE FUNCTION [dbo].[f]() RETURNS int AS BEGIN RETURN 1 END;")},
		"000003_p.up.sql": {Data: []byte("-- migration: breaking\n-- a policy.\nCREATE SECURITY POLICY [dbo].[P] ADD FILTER PREDICATE [dbo].[f]() ON [dbo].[T];")},
		"000004_r.up.sql": {Data: []byte("-- migration: breaking\n-- a role.\nCREATE ROLE [r];")},
		"000005_i.up.sql": {Data: []byte("-- migration: additive\n-- a function of the role, in a comment only\nCREATE INDEX [IX_T] ON [dbo].[T] ([a]);")},
	}
	for _, c := range []struct {
		version uint
		want    Status
	}{{0, StatusFail}, {1, StatusFail}, {2, StatusFail}, {3, StatusFail}, {4, StatusOK}, {5, StatusOK}} {
		res := evalMigratePermissionsFor(least, pendingNeeds(migs, c.version))
		if res.Status != c.want {
			t.Errorf("schema at %d: %s %s; want %s", c.version, res.Status, res.Detail, c.want)
		}
	}
	if n := pendingNeeds(mssqlmigrations.FS, 12); !n.role || !n.securityPolicy || n.createFunction {
		t.Errorf("past 12 the pending migrations need %+v; want the role and the policy, no function", n)
	}
}

func TestSessionInitSetsWhatTheChecksRequire(t *testing.T) {
	t.Parallel()
	// Every option `ledger check` requires is set by the init, to the value it requires,
	// so a check failure means the server overrode it, never that ledger forgot it.
	set := map[string]string{}
	for _, line := range strings.Split(sqldb.MSSQLSessionInit, "\n") {
		f := strings.Fields(strings.TrimSuffix(line, ";"))
		if len(f) != 3 || f[0] != "SET" {
			t.Fatalf("unexpected session init line %q", line)
		}
		set[f[1]] = f[2]
	}
	for _, o := range sessionOptions {
		want := "OFF"
		if o.on {
			want = "ON"
		}
		if set[o.name] != want {
			t.Errorf("the session init sets %s %q, the check requires %s", o.name, set[o.name], want)
		}
	}
}
