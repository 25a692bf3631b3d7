package check

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	mssqlmigrations "github.com/ledger-dev/ledger/migrations/mssql"
)

// The checks of a SQL Server database, each a query and a pure evaluation of its rows.
//
// Reading check, shared by every query below: each reads built-in functions and catalog
// views only (no table of ours, no DMV), takes no locks that matter (catalog reads under
// the connection's READ COMMITTED; with READ_COMMITTED_SNAPSHOT on they read versions),
// returns its rows whatever RCSI says, and needs no permission beyond connecting to the
// database: none needs VIEW SERVER STATE or VIEW DATABASE STATE, which Azure SQL often
// withholds. Metadata visibility limits what sys.sql_modules, sys.security_policies and
// sys.security_predicates show to objects the login has some permission on, so those
// checks also read HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'VIEW DEFINITION') and answer
// "unknown" with the grant to add rather than a false failure. Errors: none expected
// beyond the transport's (mapped by MapError; a check whose query fails says so).

// maintenanceRole is the database role the maintenance bypass requires (migration 000013).
const maintenanceRole = "ledger_maintenance"

// sessionOption is one SET option as @@OPTIONS shows it (the bit values of the
// 'user options' server configuration option).
type sessionOption struct {
	name string
	bit  int
	on   bool // the value the service needs
}

// sessionOptions are the options MSSQLSessionInit sets, with the values it sets them to.
var sessionOptions = []sessionOption{
	{"IMPLICIT_TRANSACTIONS", 2, false},
	{"ANSI_WARNINGS", 8, true},
	{"ANSI_PADDING", 16, true},
	{"ANSI_NULLS", 32, true},
	{"ARITHABORT", 64, true},
	{"QUOTED_IDENTIFIER", 256, true},
	{"NOCOUNT", 512, false},
	{"ANSI_NULL_DFLT_ON", 1024, true},
	{"CONCAT_NULL_YIELDS_NULL", 4096, true},
	{"NUMERIC_ROUNDABORT", 8192, false},
	{"XACT_ABORT", 16384, false},
}

var mssqlChecks = []checker{
	check[versionRow]{
		name: "server-version", required: true,
		// SERVERPROPERTY: no table, no permission. EngineEdition 5 is Azure SQL Database and
		// 8 Azure SQL Managed Instance, whose ProductVersion (12.x on SQL Database) does
		// not follow the box product's numbering: both always run the current engine.
		query: `SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS ProductVersion,
    CAST(SERVERPROPERTY('EngineEdition') AS int) AS EngineEdition;`,
		eval: oneRow("SERVERPROPERTY", evalVersion),
	},
	check[databaseRow]{
		name: "compatibility-level", required: true,
		// sys.databases: the row of the database the session is in is always visible.
		query: databaseQuery,
		eval:  oneRow("sys.databases", evalCompatibility),
	},
	check[databaseRow]{
		name:  "read-committed-snapshot",
		query: databaseQuery,
		eval:  oneRow("sys.databases", evalRCSI),
	},
	check[optionsRow]{
		name: "session-options", required: true,
		// @@OPTIONS of this pooled connection: the same connector, hence the same
		// SessionInitSQL, opens every connection of the service.
		query: optionsQuery,
		eval:  oneRow("@@OPTIONS", func(r optionsRow) Result { return evalSessionOptions(r.Options) }),
	},
	check[optionsRow]{
		name: "xact-abort", required: true,
		query: optionsQuery,
		eval:  oneRow("@@OPTIONS", func(r optionsRow) Result { return evalXactAbort(r.Options) }),
	},
	check[moduleRow]{
		name: "module-options", required: true,
		// Every trigger, function, procedure and view in dbo with the SET options it was
		// created with (they keep them for life). The one-row derived table makes the
		// permission come back even when no module is visible.
		query: `SELECT v.CanViewDefinition, o.name AS Name, o.type_desc AS TypeDesc,
    CAST(m.uses_ansi_nulls AS int) AS AnsiNulls, CAST(m.uses_quoted_identifier AS int) AS QuotedIdentifier
FROM (SELECT CAST(HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'VIEW DEFINITION') AS int) AS CanViewDefinition) AS v
LEFT JOIN (sys.sql_modules AS m
    INNER JOIN sys.objects AS o ON o.object_id = m.object_id
        AND o.schema_id = SCHEMA_ID(N'dbo') AND o.type IN ('TR', 'FN', 'IF', 'TF', 'P', 'V'))
    ON 1 = 1
ORDER BY o.name;`,
		eval: evalModules,
	},
	check[tablePermRow]{
		name: "serve-permissions", required: true, purposes: []Purpose{ForServe},
		// HAS_PERMS_BY_NAME evaluates the effective permission (direct, through a role, or
		// implied by a schema or database grant); NULL means no such object.
		query: servePermissionsQuery(),
		eval:  func(rows []tablePermRow, _ Purpose) Result { return evalServePermissions(rows) },
	},
	check[roleRow]{
		name: "maintenance-role", required: true, purposes: []Purpose{ForServe},
		// The same condition as dbo.fn_TenantAccess's bypass (migration 000013): IS_MEMBER
		// reads the session's own token (no permission needed, unlike IS_ROLEMEMBER, which
		// wants VIEW DEFINITION on the role); dbo, which sysadmin logins map to, is in no
		// role, so it is named.
		query: roleQuery,
		eval:  oneRow("IS_MEMBER", evalMaintenanceRole),
	},
	check[roleRow]{
		// Migrations that move data across tenants set the bypass (000011 and 000012 did,
		// before 000013 required the role): from 000013 on such a migration needs the
		// migration login in the role. Not required: most migrations only change the schema.
		name: "maintenance-role", purposes: []Purpose{ForMigrate},
		query: roleQuery,
		eval:  oneRow("IS_MEMBER", evalMigrateMaintenanceRole),
	},
	migratePermCheck{},
	check[policyRow]{
		name: "security-policy", required: true, purposes: []Purpose{ForServe},
		// The policy, whether it is on, and every dbo table with a TenantId column with
		// whether the policy filters it (predicate_type 0 = FILTER) and blocks writes to it
		// (1 = BLOCK; a table whose rows every tenant must see, such as 000012's
		// ReleaseOwners, is blocked only).
		query: `SELECT v.CanViewDefinition,
    CASE WHEN p.object_id IS NULL THEN 0 ELSE 1 END AS PolicyExists,
    CAST(p.is_enabled AS int) AS Enabled,
    t.name AS TableName,
    CASE WHEN EXISTS (SELECT 1 FROM sys.security_predicates AS sp
        WHERE sp.object_id = p.object_id AND sp.target_object_id = t.object_id AND sp.predicate_type = 0)
        THEN 1 ELSE 0 END AS Filtered,
    CASE WHEN EXISTS (SELECT 1 FROM sys.security_predicates AS sp
        WHERE sp.object_id = p.object_id AND sp.target_object_id = t.object_id AND sp.predicate_type = 1)
        THEN 1 ELSE 0 END AS Blocked
FROM (SELECT CAST(HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'VIEW DEFINITION') AS int) AS CanViewDefinition) AS v
LEFT JOIN sys.security_policies AS p ON p.name = N'TenantPolicy' AND p.schema_id = SCHEMA_ID(N'dbo')
LEFT JOIN sys.tables AS t ON t.schema_id = SCHEMA_ID(N'dbo')
    AND EXISTS (SELECT 1 FROM sys.columns AS c WHERE c.object_id = t.object_id AND c.name = N'TenantId')
ORDER BY t.name;`,
		eval: evalPolicy,
	},
	schemaCheck,
}

const databaseQuery = `SELECT DB_NAME() AS DatabaseName, CAST(compatibility_level AS int) AS CompatibilityLevel,
    CAST(is_read_committed_snapshot_on AS int) AS ReadCommittedSnapshot
FROM sys.databases WHERE database_id = DB_ID();`

const optionsQuery = `SELECT @@OPTIONS AS Options;`

const roleQuery = `SELECT USER_NAME() AS UserName,
    CAST(IS_MEMBER(N'ledger_maintenance') AS int) AS InRole,
    CAST(IS_MEMBER(N'db_owner') AS int) AS DbOwner,
    DATABASE_PRINCIPAL_ID(N'ledger_maintenance') AS RoleID;`

type versionRow struct {
	ProductVersion sql.NullString `db:"ProductVersion"`
	EngineEdition  sql.NullInt64  `db:"EngineEdition"`
}

type databaseRow struct {
	DatabaseName          string `db:"DatabaseName"`
	CompatibilityLevel    int    `db:"CompatibilityLevel"`
	ReadCommittedSnapshot int    `db:"ReadCommittedSnapshot"`
}

type optionsRow struct {
	Options int `db:"Options"`
}

type moduleRow struct {
	CanViewDefinition sql.NullInt64  `db:"CanViewDefinition"`
	Name              sql.NullString `db:"Name"`
	TypeDesc          sql.NullString `db:"TypeDesc"`
	AnsiNulls         sql.NullInt64  `db:"AnsiNulls"`
	QuotedIdentifier  sql.NullInt64  `db:"QuotedIdentifier"`
}

type tablePermRow struct {
	TableName string        `db:"TableName"`
	NeedWrite int           `db:"NeedWrite"`
	CanSelect sql.NullInt64 `db:"CanSelect"`
	CanInsert sql.NullInt64 `db:"CanInsert"`
	CanUpdate sql.NullInt64 `db:"CanUpdate"`
	CanDelete sql.NullInt64 `db:"CanDelete"`
}

type roleRow struct {
	UserName string        `db:"UserName"`
	InRole   sql.NullInt64 `db:"InRole"`
	DBOwner  sql.NullInt64 `db:"DbOwner"`
	RoleID   sql.NullInt64 `db:"RoleID"`
}

type migratePermRow struct {
	UserName            string        `db:"UserName"`
	CreateTable         sql.NullInt64 `db:"CreateTable"`
	CreateFunction      sql.NullInt64 `db:"CreateFunction"`
	AlterSecurityPolicy sql.NullInt64 `db:"AlterSecurityPolicy"`
	CreateRole          sql.NullInt64 `db:"CreateRole"`
	AlterSchema         sql.NullInt64 `db:"AlterSchema"`
	ReferencesSchema    sql.NullInt64 `db:"ReferencesSchema"`
	SelectSchema        sql.NullInt64 `db:"SelectSchema"`
	InsertSchema        sql.NullInt64 `db:"InsertSchema"`
	UpdateSchema        sql.NullInt64 `db:"UpdateSchema"`
	DeleteSchema        sql.NullInt64 `db:"DeleteSchema"`
	RoleExists          int           `db:"RoleExists"`
	InRole              sql.NullInt64 `db:"InRole"`
	AlterAnyRole        sql.NullInt64 `db:"AlterAnyRole"`
}

type policyRow struct {
	CanViewDefinition sql.NullInt64  `db:"CanViewDefinition"`
	PolicyExists      int            `db:"PolicyExists"`
	Enabled           sql.NullInt64  `db:"Enabled"`
	TableName         sql.NullString `db:"TableName"`
	Filtered          int            `db:"Filtered"`
	Blocked           int            `db:"Blocked"`
}

// oneRow evaluates a query that answers exactly one row; no row (or several) is unknown.
func oneRow[T any](what string, eval func(T) Result) func([]T, Purpose) Result {
	return func(rows []T, _ Purpose) Result {
		if len(rows) != 1 {
			return noRow(what)
		}
		return eval(rows[0])
	}
}

func noRow(what string) Result {
	return Result{Status: StatusUnknown, Detail: what + " returned no row", Fix: "run `ledger check` again; report it if it persists"}
}

// minVersion is SQL Server 2016 SP1, the floor DESIGN.md sets.
var minVersion = [3]int{13, 0, 4001}

func evalVersion(r versionRow) Result {
	switch r.EngineEdition.Int64 {
	case 5:
		return Result{Status: StatusOK, Detail: "Azure SQL Database: always the current engine"}
	case 8:
		return Result{Status: StatusOK, Detail: "Azure SQL Managed Instance: always the current engine"}
	}
	v := r.ProductVersion.String
	var got [3]int
	parts := strings.Split(v, ".")
	for i := 0; i < 3; i++ {
		if i >= len(parts) {
			return Result{Status: StatusUnknown, Detail: fmt.Sprintf("cannot read the server version %q", v),
				Fix: "check by hand that the server is SQL Server 2016 SP1 (13.0.4001) or later"}
		}
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return Result{Status: StatusUnknown, Detail: fmt.Sprintf("cannot read the server version %q", v),
				Fix: "check by hand that the server is SQL Server 2016 SP1 (13.0.4001) or later"}
		}
		got[i] = n
	}
	for i := range got {
		if got[i] != minVersion[i] {
			if got[i] < minVersion[i] {
				return Result{Status: StatusFail,
					Detail: fmt.Sprintf("SQL Server %s is older than 2016 SP1 (13.0.4001), which SESSION_CONTEXT, row-level security and OPENJSON as used here need", v),
					Fix:    "upgrade the server to SQL Server 2016 SP1 or later (or use Azure SQL)"}
			}
			break
		}
	}
	return Result{Status: StatusOK, Detail: "SQL Server " + v}
}

// quoteName quotes a database name for the fix text as QUOTENAME does.
func quoteName(name string) string { return "[" + strings.ReplaceAll(name, "]", "]]") + "]" }

func evalCompatibility(r databaseRow) Result {
	if r.CompatibilityLevel >= 130 {
		return Result{Status: StatusOK, Detail: fmt.Sprintf("%d (OPENJSON needs 130)", r.CompatibilityLevel)}
	}
	return Result{Status: StatusFail,
		Detail: fmt.Sprintf("database %s is at compatibility level %d: OPENJSON needs 130, so every claim, timeline and purge fails with Msg 208 (a database restored from an older server keeps its old level)", r.DatabaseName, r.CompatibilityLevel),
		Fix:    fmt.Sprintf("ALTER DATABASE %s SET COMPATIBILITY_LEVEL = 130; (or the server's own level, e.g. 160 on SQL Server 2022)", quoteName(r.DatabaseName))}
}

func evalRCSI(r databaseRow) Result {
	if r.ReadCommittedSnapshot == 1 {
		return Result{Status: StatusOK, Detail: "on (recommended): reads see the last committed version and never wait for writers; the claim still locks what it takes (READCOMMITTEDLOCK)"}
	}
	return Result{Status: StatusWarn,
		Detail: "off (supported): reads take shared locks, so history reads and polls wait for writers and can deadlock with them (retried, but slower under load)",
		Fix:    fmt.Sprintf("ALTER DATABASE %s SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE; (in a quiet moment: it ends other sessions' transactions; Azure SQL has it on by default)", quoteName(r.DatabaseName))}
}

// wrongOptions lists the options of opts (from @@OPTIONS) that differ from what the
// service needs, among those for which include is true.
func wrongOptions(opts int, include func(sessionOption) bool) []string {
	var wrong []string
	for _, o := range sessionOptions {
		if !include(o) {
			continue
		}
		if on := opts&o.bit != 0; on != o.on {
			state := "OFF"
			if on {
				state = "ON"
			}
			wrong = append(wrong, o.name+" "+state)
		}
	}
	return wrong
}

func evalSessionOptions(opts int) Result {
	wrong := wrongOptions(opts, func(o sessionOption) bool { return o.name != "XACT_ABORT" })
	if len(wrong) == 0 {
		return Result{Status: StatusOK, Detail: fmt.Sprintf("@@OPTIONS %d: the seven options filtered indexes need, NOCOUNT OFF and IMPLICIT_TRANSACTIONS OFF", opts)}
	}
	return Result{Status: StatusFail,
		Detail: fmt.Sprintf("the service's sessions have %s (@@OPTIONS %d): filtered-index writes fail with Msg 1934, or row counts and autocommit break", strings.Join(wrong, ", "), opts),
		Fix:    "ledger sets these on every connection it opens, so something changes them afterwards (a logon trigger, a proxy or a pooler in between): remove it"}
}

func evalXactAbort(opts int) Result {
	if opts&16384 == 0 {
		return Result{Status: StatusOK, Detail: "OFF on the service's sessions (ledger sets it OFF on every connection, whatever 'user options' says)"}
	}
	return Result{Status: StatusFail,
		Detail: "XACT_ABORT is ON on the service's sessions: the first duplicate key would roll back the whole transaction instead of being recovered",
		Fix:    "ledger sets it OFF on every connection it opens, so something sets it ON afterwards (a logon trigger, a proxy or a pooler in between): remove it"}
}

func evalModules(rows []moduleRow, _ Purpose) Result {
	var names, bad []string
	canView := false
	for _, r := range rows {
		canView = canView || r.CanViewDefinition.Int64 == 1
		if !r.Name.Valid {
			continue
		}
		names = append(names, r.Name.String)
		var off []string
		if r.AnsiNulls.Int64 != 1 {
			off = append(off, "ANSI_NULLS")
		}
		if r.QuotedIdentifier.Int64 != 1 {
			off = append(off, "QUOTED_IDENTIFIER")
		}
		if len(off) > 0 {
			bad = append(bad, fmt.Sprintf("%s (%s OFF)", r.Name.String, strings.Join(off, " and ")))
		}
	}
	switch {
	case len(bad) > 0:
		return Result{Status: StatusFail,
			Detail: "created with the wrong SET options, which they keep for life: " + strings.Join(bad, ", "),
			Fix:    "recreate each through a connection with ANSI_NULLS and QUOTED_IDENTIFIER ON: `ledger migrate down N` and `ledger migrate up` over the migration that made it (ledger's connections set both)"}
	case !canView:
		return Result{Status: StatusUnknown,
			Detail: fmt.Sprintf("this login cannot see the definitions of dbo's triggers and functions (%d visible)", len(names)),
			Fix:    "GRANT VIEW DEFINITION ON SCHEMA::dbo TO <this user>; or run `ledger check` as the migration login"}
	case len(names) == 0:
		return Result{Status: StatusFail, Detail: "dbo has no triggers or functions: the schema is not migrated",
			Fix: "run `ledger migrate up`"}
	}
	return Result{Status: StatusOK, Detail: fmt.Sprintf("ANSI_NULLS and QUOTED_IDENTIFIER ON: %s", strings.Join(names, ", "))}
}

func allowed(v sql.NullInt64) bool { return v.Valid && v.Int64 == 1 }

// grantState is a permission and what HAS_PERMS_BY_NAME said of it.
type grantState struct {
	name string
	v    sql.NullInt64
}

func evalServePermissions(rows []tablePermRow) Result {
	var missing []string
	for _, r := range rows {
		if !r.CanSelect.Valid {
			missing = append(missing, r.TableName+" (missing)")
			continue
		}
		var lack []string
		perms := []grantState{{"SELECT", r.CanSelect}}
		if r.NeedWrite == 1 {
			perms = append(perms, grantState{"INSERT", r.CanInsert}, grantState{"UPDATE", r.CanUpdate}, grantState{"DELETE", r.CanDelete})
		}
		for _, p := range perms {
			if !allowed(p.v) {
				lack = append(lack, p.name)
			}
		}
		if len(lack) > 0 {
			missing = append(missing, fmt.Sprintf("%s (%s)", r.TableName, strings.Join(lack, ", ")))
		}
	}
	if len(rows) == 0 {
		return noRow("HAS_PERMS_BY_NAME")
	}
	if len(missing) == 0 {
		return Result{Status: StatusOK, Detail: fmt.Sprintf("SELECT, INSERT, UPDATE and DELETE on the %d ledger tables", len(rows)-1)}
	}
	return Result{Status: StatusFail,
		Detail: "the login lacks: " + strings.Join(missing, "; "),
		Fix:    "GRANT SELECT, INSERT, UPDATE, DELETE ON SCHEMA::dbo TO <service user>; (a table marked missing: run `ledger migrate up`)"}
}

func evalMaintenanceRole(r roleRow) Result {
	switch {
	case r.InRole.Int64 == 1:
		return Result{Status: StatusOK, Detail: fmt.Sprintf("%s is a member of %s", r.UserName, maintenanceRole)}
	case r.DBOwner.Int64 == 1 || r.UserName == "dbo":
		return Result{Status: StatusWarn,
			Detail: fmt.Sprintf("%s passes the maintenance bypass as a database owner: the service runs with more rights than it needs", r.UserName),
			Fix:    "serve with a login that has data rights and the ledger_maintenance role only (README: Deploying on SQL Server)"}
	case !r.RoleID.Valid:
		return Result{Status: StatusFail,
			Detail: "the ledger_maintenance role does not exist: the maintenance bypass (API key lookup, reaper, purge) sees no rows",
			Fix:    "run `ledger migrate up` (migration 13 creates the role), then ALTER ROLE [ledger_maintenance] ADD MEMBER <service user>;"}
	}
	return Result{Status: StatusFail,
		Detail: fmt.Sprintf("%s is not a member of ledger_maintenance: API keys cannot be looked up, and the reaper and purge see no rows", r.UserName),
		Fix:    fmt.Sprintf("ALTER ROLE [ledger_maintenance] ADD MEMBER %s; then restart the service (open sessions keep their old membership)", quoteName(r.UserName))}
}

// evalMigrateMaintenanceRole judges the role for a migration: its absence is a warning, and
// a deploy login may well be the database owner.
func evalMigrateMaintenanceRole(r roleRow) Result {
	if r.DBOwner.Int64 == 1 || r.UserName == "dbo" {
		return Result{Status: StatusOK, Detail: r.UserName + " passes the maintenance bypass as a database owner"}
	}
	res := evalMaintenanceRole(r)
	if res.Status == StatusFail {
		res.Status = StatusWarn
		res.Detail += " (a migration that moves data across tenants would see no rows)"
	}
	return res
}

// migratePermQuery reads the rights `migrate up` may need (HAS_PERMS_BY_NAME evaluates
// the effective permission: direct, through a role, or implied by a broader grant).
const migratePermQuery = `SELECT USER_NAME() AS UserName,
    CAST(HAS_PERMS_BY_NAME(NULL, N'DATABASE', N'CREATE TABLE') AS int) AS CreateTable,
    CAST(HAS_PERMS_BY_NAME(NULL, N'DATABASE', N'CREATE FUNCTION') AS int) AS CreateFunction,
    CAST(HAS_PERMS_BY_NAME(NULL, N'DATABASE', N'ALTER ANY SECURITY POLICY') AS int) AS AlterSecurityPolicy,
    CAST(HAS_PERMS_BY_NAME(NULL, N'DATABASE', N'CREATE ROLE') AS int) AS CreateRole,
    CAST(HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'ALTER') AS int) AS AlterSchema,
    CAST(HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'REFERENCES') AS int) AS ReferencesSchema,
    CAST(HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'SELECT') AS int) AS SelectSchema,
    CAST(HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'INSERT') AS int) AS InsertSchema,
    CAST(HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'UPDATE') AS int) AS UpdateSchema,
    CAST(HAS_PERMS_BY_NAME(N'dbo', N'SCHEMA', N'DELETE') AS int) AS DeleteSchema,
    CASE WHEN DATABASE_PRINCIPAL_ID(N'ledger_maintenance') IS NULL THEN 0 ELSE 1 END AS RoleExists,
    CAST(IS_MEMBER(N'ledger_maintenance') AS int) AS InRole,
    CAST(HAS_PERMS_BY_NAME(NULL, N'DATABASE', N'ALTER ANY ROLE') AS int) AS AlterAnyRole;`

// migratePermCheck is the migrate-permissions check: the rights the pending migrations
// need, judged against the schema version (issue 26 item 7: a least-privilege login was
// refused `migrate up` for rights only migrations it had already applied needed).
type migratePermCheck struct{}

func (migratePermCheck) run(ctx context.Context, db *sqldb.DB, p Purpose, memo map[string]any) (Result, bool) {
	if !runsFor([]Purpose{ForMigrate}, p) {
		return Result{}, false
	}
	var res Result
	rows, err := cachedRows[migratePermRow](ctx, db, migratePermQuery, false, memo)
	switch {
	case err != nil:
		res = cannotRead(db.Dialect.MapError(err))
	case len(rows) != 1:
		res = noRow("HAS_PERMS_BY_NAME")
	default:
		var version uint
		if st, err := migrate.ReadState(ctx, db); err == nil && !st.Dirty {
			version = st.Version // dirty or unreadable: judge every migration as pending
		}
		res = evalMigratePermissionsFor(rows[0], pendingNeeds(db.Migrations(), version))
	}
	res.Name, res.Required = "migrate-permissions", true
	return res, true
}

// migrationNeeds is what the pending migrations do that needs a right of its own.
type migrationNeeds struct {
	createFunction, securityPolicy, role bool
}

// pendingNeeds reads the migrations past version (comments dropped) for what they do.
func pendingNeeds(fsys fs.FS, version uint) migrationNeeds {
	var n migrationNeeds
	migs, err := migrate.ReadMigrations(fsys)
	if err != nil {
		return migrationNeeds{true, true, true}
	}
	for _, m := range migs {
		if m.Version <= version {
			continue
		}
		names, _ := fs.Glob(fsys, fmt.Sprintf("%06d_*.up.sql", m.Version))
		for _, name := range names {
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				return migrationNeeds{true, true, true}
			}
			text := strings.ToUpper(sqldb.StripComments(string(b)))
			// ALTER FUNCTION needs ALTER on the schema, which is always asked.
			n.createFunction = n.createFunction || strings.Contains(text, "CREATE FUNCTION") ||
				strings.Contains(text, "CREATE OR ALTER FUNCTION")
			n.securityPolicy = n.securityPolicy || strings.Contains(text, "SECURITY POLICY")
			n.role = n.role || strings.Contains(text, "ROLE") || strings.Contains(text, "DATABASE_PRINCIPAL_ID")
		}
	}
	return n
}

// evalMigratePermissions judges the rights for a database with every migration pending.
func evalMigratePermissions(r migratePermRow) Result {
	return evalMigratePermissionsFor(r, migrationNeeds{true, true, true})
}

// evalMigratePermissionsFor judges the rights the pending migrations need: the schema
// rights always (golang-migrate's version table, every migration's DDL), CREATE FUNCTION,
// ALTER ANY SECURITY POLICY and the role's rights only when a pending migration uses them.
func evalMigratePermissionsFor(r migratePermRow, n migrationNeeds) Result {
	need := []struct {
		grant string
		v     sql.NullInt64
		skip  bool
	}{
		{"CREATE TABLE", r.CreateTable, false},
		{"CREATE FUNCTION", r.CreateFunction, !n.createFunction},
		{"ALTER ANY SECURITY POLICY", r.AlterSecurityPolicy, !n.securityPolicy},
		{"CREATE ROLE", r.CreateRole, r.RoleExists == 1 || !n.role},
		{"ALTER ON SCHEMA::dbo", r.AlterSchema, false},
		{"REFERENCES ON SCHEMA::dbo", r.ReferencesSchema, false},
		{"SELECT ON SCHEMA::dbo", r.SelectSchema, false},
		{"INSERT ON SCHEMA::dbo", r.InsertSchema, false},
		{"UPDATE ON SCHEMA::dbo", r.UpdateSchema, false},
		{"DELETE ON SCHEMA::dbo", r.DeleteSchema, false},
	}
	var lack []string
	for _, n := range need {
		if !n.skip && !allowed(n.v) {
			lack = append(lack, n.grant)
		}
	}
	// DATABASE_PRINCIPAL_ID (RoleExists, and migration 13's IF) sees a role only for its
	// members and for holders of ALTER ANY ROLE (metadata visibility): for any other login a
	// role a DBA made first looks missing.
	if n.role && !allowed(r.InRole) && !allowed(r.AlterAnyRole) {
		return Result{Status: StatusFail,
			Detail: fmt.Sprintf("%s is not a member of %s and lacks ALTER ANY ROLE, so it cannot see whether the role exists", r.UserName, maintenanceRole),
			Fix: fmt.Sprintf("CREATE ROLE [%s]; ALTER ROLE [%s] ADD MEMBER %s; (docs/operators.md: Least-privilege setup)",
				maintenanceRole, maintenanceRole, quoteName(r.UserName))}
	}
	if len(lack) == 0 {
		return Result{Status: StatusOK, Detail: r.UserName + " has the rights the pending migrations need"}
	}
	return Result{Status: StatusFail,
		Detail: fmt.Sprintf("%s cannot migrate: it lacks %s", r.UserName, strings.Join(lack, ", ")),
		Fix:    fmt.Sprintf("GRANT %s TO %s; (README: Deploying on SQL Server has the whole script)", strings.Join(lack, ", "), quoteName(r.UserName))}
}

func evalPolicy(rows []policyRow, _ Purpose) Result {
	if len(rows) == 0 {
		return noRow("sys.security_policies")
	}
	head := rows[0]
	if head.PolicyExists == 0 {
		if head.CanViewDefinition.Int64 != 1 {
			return Result{Status: StatusUnknown,
				Detail: "this login cannot see security policies",
				Fix:    "GRANT VIEW DEFINITION ON SCHEMA::dbo TO <this user>; or run `ledger check` as the migration login"}
		}
		return Result{Status: StatusFail, Detail: "dbo.TenantPolicy does not exist: nothing backs up the TenantId filters",
			Fix: "run `ledger migrate up`"}
	}
	if head.Enabled.Int64 != 1 {
		return Result{Status: StatusFail, Detail: "dbo.TenantPolicy exists but is off",
			Fix: "ALTER SECURITY POLICY [dbo].[TenantPolicy] WITH (STATE = ON);"}
	}
	var outside, blockedOnly []string
	tables := 0
	for _, r := range rows {
		if !r.TableName.Valid {
			continue
		}
		tables++
		switch {
		case r.Filtered != 1 && r.Blocked != 1:
			outside = append(outside, r.TableName.String)
		case r.Filtered != 1:
			blockedOnly = append(blockedOnly, r.TableName.String)
		}
	}
	if len(outside) > 0 {
		return Result{Status: StatusFail,
			Detail: "dbo.TenantPolicy neither filters nor blocks these tables that have TenantId: " + strings.Join(outside, ", "),
			Fix:    "run `ledger migrate up`; if it is current, a migration forgot to add them to the policy: report it"}
	}
	detail := fmt.Sprintf("dbo.TenantPolicy is on and covers all %d tables that have TenantId", tables)
	if len(blockedOnly) > 0 {
		detail += " (writes only, by design: " + strings.Join(blockedOnly, ", ") + ")"
	}
	return Result{Status: StatusOK, Detail: detail}
}

// ledgerTables lists the tables the migrations create (and do not drop again), in order
// of creation: the tables the service reads and writes.
var ledgerTables = sync.OnceValue(func() []string {
	create := regexp.MustCompile(`(?i)CREATE\s+TABLE\s+\[dbo\]\.\[(\w+)\]`)
	drop := regexp.MustCompile(`(?i)DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?\[dbo\]\.\[(\w+)\]`)
	names, _ := fs.Glob(mssqlmigrations.FS, "*.up.sql")
	sort.Strings(names) // zero-padded numbers sort in order
	var tables []string
	for _, n := range names {
		b, err := fs.ReadFile(mssqlmigrations.FS, n)
		if err != nil {
			continue
		}
		text := sqldb.StripComments(string(b))
		for _, m := range drop.FindAllStringSubmatch(text, -1) {
			tables = removeString(tables, m[1])
		}
		for _, m := range create.FindAllStringSubmatch(text, -1) {
			tables = append(tables, m[1])
		}
	}
	return tables
})

func removeString(list []string, s string) []string {
	return slices.DeleteFunc(list, func(v string) bool { return v == s })
}

// servePermissionsQuery asks for the service's permissions on every ledger table, and
// SELECT on golang-migrate's schema_migrations (serve reads the version at start) and on
// SchemaMigrationKinds.
func servePermissionsQuery() string {
	var values []string
	for _, t := range ledgerTables() {
		// The service only reads the migration kinds (a binary older than the schema
		// judging it); the migration commands write them.
		need := 1
		if t == "SchemaMigrationKinds" {
			need = 0
		}
		values = append(values, fmt.Sprintf("(N'%s', %d)", t, need))
	}
	values = append(values, "(N'schema_migrations', 0)")
	return `SELECT t.TableName, t.NeedWrite,
    CAST(HAS_PERMS_BY_NAME(N'dbo.' + t.TableName, N'OBJECT', N'SELECT') AS int) AS CanSelect,
    CAST(HAS_PERMS_BY_NAME(N'dbo.' + t.TableName, N'OBJECT', N'INSERT') AS int) AS CanInsert,
    CAST(HAS_PERMS_BY_NAME(N'dbo.' + t.TableName, N'OBJECT', N'UPDATE') AS int) AS CanUpdate,
    CAST(HAS_PERMS_BY_NAME(N'dbo.' + t.TableName, N'OBJECT', N'DELETE') AS int) AS CanDelete
FROM (VALUES ` + strings.Join(values, ", ") + `) AS t(TableName, NeedWrite);`
}
