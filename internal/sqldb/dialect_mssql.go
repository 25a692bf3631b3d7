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
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/ledger-dev/ledger/internal/ids"
	mssqlmigrations "github.com/ledger-dev/ledger/migrations/mssql"
)

// SQL Server error numbers that MapError reads. Messages are quoted from sys.messages
// (us_english, which every connection selects: see MSSQLSessionInit).
const (
	mssqlDeadlock         = 1205 // "Transaction (Process ID %d) was deadlocked ... Rerun the transaction."
	mssqlLockTimeout      = 1222 // "Lock request time out period exceeded."
	mssqlSnapshotConflict = 3960 // snapshot isolation update conflict
	// 2601: "Cannot insert duplicate key row in object '%.*ls' with unique index '%.*ls'.
	// The duplicate key value is %ls."
	mssqlDuplicateIndex = 2601
	// 2627: "Violation of %ls constraint '%.*ls'. Cannot insert duplicate key in object
	// '%.*ls'. The duplicate key value is %ls."
	mssqlDuplicateKey = 2627
	// 547: "The %ls statement conflicted with the %ls constraint "%.*ls". The conflict
	// occurred in database "%.*ls", table "%.*ls"...". FOREIGN KEY, REFERENCE and CHECK
	// conflicts share the number; the constraint's name prefix tells them apart.
	mssqlConstraint   = 547
	mssqlRLSBlock     = 33504 // a BLOCK predicate of the security policy refused the write
	mssqlTriggerFirst = 50000 // THROW numbers of our triggers (TR_Runs_Guard: 50001, 50002)
	mssqlTriggerLast  = 59999
	// The database is not what this binary needs: a missing object (208 "Invalid object
	// name '%.*ls'.", e.g. OPENJSON below compatibility level 130, or a schema behind the
	// binary), a missing column (207), wrong SET options for a filtered index (1934), or a
	// missing permission (229 object, 230 column). `ledger check` says which.
	mssqlInvalidColumn    = 207
	mssqlInvalidObject    = 208
	mssqlPermissionDenied = 229
	mssqlColumnDenied     = 230
	mssqlWrongSetOptions  = 1934
	// Collation conflicts the server cannot resolve: 468 "Cannot resolve the collation
	// conflict between "%.*ls" and "%.*ls" in the %ls operation.", 446 "Cannot resolve
	// collation conflict for %ls operation.", 451 "Cannot resolve collation conflict between
	// "%.*ls" and "%.*ls" in %ls operator occurring in %ls statement column %d.", 457
	// "Implicit conversion of %ls value to %ls cannot be performed because the collation of
	// the value is unresolved due to a collation conflict ...".
	mssqlCollationConflict    = 468
	mssqlCollationConflictOp  = 446
	mssqlCollationConflictCol = 451
	mssqlCollationUnresolved  = 457
	mssqlAzureNotAvailable    = 40613 // "Database '%.*ls' on server '%.*ls' is not currently available."
	mssqlAzureBusy            = 40501 // "The service is currently busy. Retry the request after 10 seconds."
	mssqlAzureServiceError    = 40197 // "The service has encountered an error processing your request."
	mssqlAzureNoResources     = 49918 // "Cannot process request. Not enough resources to process request."
	mssqlAzureTooManyCU       = 49919 // "Too many create or update operations in progress"
	mssqlAzureTooManyOps      = 49920 // "Too many operations in progress for subscription"
	mssqlAzureLimitReached    = 10928 // "Resource ID : %d. The %s limit for the database is %d and has been reached."
	mssqlAzureMinGuarantee    = 10929 // "Resource ID : %d. ... the server is currently too busy"
)

// ErrMisconfigured says the database is not set up as this service needs (an object, column,
// permission or SET option is missing). Retrying cannot help: the operator runs
// `ledger check`, which names the cause and its fix. The HTTP layer answers it as any
// unexpected error (a logged 500), so the log line carries the hint.
var ErrMisconfigured = errors.New("the database is not set up as this service needs (run `ledger check`)")

// MSSQLSessionInit runs on every connection when it opens and again after every reset of
// a pooled session (go-mssqldb's Connector.SessionInitSQL: Connect calls ResetSession, and
// database/sql calls ResetSession before it reuses a connection; the text is sent as a
// plain batch, not through sp_executesql, so the SETs stay). The server's defaults are
// not ours to trust: `sp_configure 'user options'` can turn any of these on for every
// login (TSQL.md).
//   - XACT_ABORT OFF: the 2601/2627 recovery paths keep using the transaction after a
//     duplicate; with XACT_ABORT ON the first duplicate rolls the whole transaction back.
//   - The seven options filtered indexes and XML/JSON methods need on every write (else
//     Msg 1934): ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT,
//     CONCAT_NULL_YIELDS_NULL, QUOTED_IDENTIFIER ON, NUMERIC_ROUNDABORT OFF. Modules created
//     through these connections (migrations) also record ANSI_NULLS and QUOTED_IDENTIFIER ON.
//   - NOCOUNT OFF: RowsAffected reads the DONE tokens' counts, which NOCOUNT ON suppresses
//     (every conditional update would look like 0 rows).
//   - IMPLICIT_TRANSACTIONS OFF: autocommit statements (retention batches) must commit.
//   - ANSI_NULL_DFLT_ON ON: a column declared without NULL/NOT NULL is nullable, as the
//     migrations assume (they spell it out anyway).
//   - LANGUAGE us_english: server messages, which MapError reads names out of, are the
//     English ones whatever the login's default language.
//
// `ledger check` reads @@OPTIONS on a pooled connection to prove these took effect.
const MSSQLSessionInit = `SET XACT_ABORT OFF;
SET IMPLICIT_TRANSACTIONS OFF;
SET NOCOUNT OFF;
SET ANSI_NULLS ON;
SET ANSI_PADDING ON;
SET ANSI_WARNINGS ON;
SET ARITHABORT ON;
SET CONCAT_NULL_YIELDS_NULL ON;
SET QUOTED_IDENTIFIER ON;
SET NUMERIC_ROUNDABORT OFF;
SET ANSI_NULL_DFLT_ON ON;
SET LANGUAGE us_english;`

// mssqlAppName names the service's sessions (sys.dm_exec_sessions.program_name) unless
// the DSN names them itself.
const mssqlAppName = "ledger"

type mssqlDialect struct {
	// connector opens connections with MSSQLSessionInit; migrations open their own pool
	// from it (see newMigrationPool). Nil only in tests that need no connection.
	connector *mssql.Connector
}

// mssqlConfig parses a sqlserver:// DSN with the driver's own parser and applies the
// options this service depends on. Exactly one GUID fix for the whole project (TSQL.md):
// ids are read into uuid.UUID, so the driver must convert the wire's little-endian first
// three groups (`guid conversion=true`). A DSN that turns it off would byte-swap every id
// silently, so it is refused rather than overridden.
func mssqlConfig(dsn string) (msdsn.Config, error) {
	if _, err := url.Parse(dsn); err != nil {
		return msdsn.Config{}, errors.New("open sqlserver: malformed LEDGER_DB URL")
	}
	cfg, err := msdsn.Parse(dsn)
	if err != nil {
		// msdsn's errors leave credentials out.
		return msdsn.Config{}, fmt.Errorf("open sqlserver: %w", err)
	}
	if v, given := cfg.Parameters[msdsn.GuidConversion]; given && !cfg.Encoding.GuidConversion {
		return msdsn.Config{}, fmt.Errorf("open sqlserver: LEDGER_DB sets \"guid conversion=%s\": ledger reads every uniqueidentifier as a UUID and needs the driver's conversion on; remove the option (ledger turns it on itself)", v)
	}
	cfg.Encoding.GuidConversion = true
	if _, given := cfg.Parameters[msdsn.AppName]; !given {
		cfg.AppName = mssqlAppName
	}
	return cfg, nil
}

func newMSSQLConnector(dsn string) (*mssql.Connector, msdsn.Config, error) {
	cfg, err := mssqlConfig(dsn)
	if err != nil {
		return nil, cfg, err
	}
	c := mssql.NewConnectorConfig(cfg)
	c.SessionInitSQL = MSSQLSessionInit
	return c, cfg, nil
}

func openMSSQL(ctx context.Context, dsn string) (*DB, error) {
	connector, cfg, err := newMSSQLConnector(dsn)
	if err != nil {
		return nil, err
	}
	counted := &countingConnector{Connector: connector}
	// sqlx binds "sqlserver" as @p1..@pN, as sqlx.Open("sqlserver", …) did.
	db := sqlx.NewDb(sql.OpenDB(counted), "sqlserver")
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(16)
	db.SetConnMaxLifetime(30 * time.Minute)
	d := mssqlDialect{connector: connector}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlserver %s: %w", cfg.Host, d.MapError(err))
	}
	out := &DB{Dialect: d, w: db, r: db}
	counted.opened = out.observeConnection
	return out, nil
}

// countingConnector tells the DB's observer of every connection the pool opens.
type countingConnector struct {
	*mssql.Connector
	opened func() // nil until Open has built the DB: the first login is not counted
}

func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err == nil && c.opened != nil {
		c.opened()
	}
	return conn, err
}

// newMigrationPool opens a pool of its own for golang-migrate, from the same connector
// (so the same session options). golang-migrate pins one connection (sql.DB.Conn) for its
// lifetime and runs the files' SET XACT_ABORT ON on it; closing this pool when the
// migrator closes ends that session instead of leaving it pinned in the service's pool.
func (d mssqlDialect) newMigrationPool() (*sql.DB, error) {
	if d.connector == nil {
		return nil, errors.New("prepare migrations: no SQL Server connection")
	}
	pool := sql.OpenDB(d.connector)
	pool.SetMaxOpenConns(2)
	return pool, nil
}

// SQLServerName is SQL Server's Dialect.Name, under which the stores register its
// statement sets.
const SQLServerName = "sqlserver"

func (mssqlDialect) Name() string { return SQLServerName }

func (mssqlDialect) Embedded() bool { return false }

// EmulatesRowVersion: the engine keeps rowversion; a restore continues from the backup's.
func (mssqlDialect) EmulatesRowVersion() bool { return false }

// QualifyTable: dbo, since a login created WITH DEFAULT_SCHEMA (or an Entra group's user)
// would otherwise get its own copy of golang-migrate's table.
func (mssqlDialect) QualifyTable(name string) string { return "dbo." + name }

func (mssqlDialect) Migrations() fs.FS { return mssqlmigrations.FS }

func (mssqlDialect) Time(t time.Time) any { return Truncate(t) }

func (d mssqlDialect) NullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return d.Time(*t)
}

// Version is sent as binary(8) so comparisons with the rowversion column need no conversion.
func (mssqlDialect) Version(v RowVersion) any {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func (mssqlDialect) NowQuery() string {
	return `SELECT CAST(SYSUTCDATETIME() AS datetimeoffset(3))`
}

func (mssqlDialect) Isolation() sql.IsolationLevel { return sql.LevelReadCommitted }

// JSON is sent as nvarchar(max) (go-mssqldb's NVarCharMax), OPENJSON's own argument type:
// one declaration, so one cached plan, for every length of the list.
func (mssqlDialect) JSON(s string) any { return mssql.NVarCharMax(s) }

// Text is sent as nvarchar(max) (go-mssqldb has no fixed-length nvarchar(n): a plain
// string is declared nvarchar(its length), NVarCharMax nvarchar(max)).
func (mssqlDialect) Text(s string) any { return mssql.NVarCharMax(s) }

func (d mssqlDialect) NullText(s *string) any {
	if s == nil {
		return nil
	}
	return d.Text(*s)
}

// NewID: SQL Server orders uniqueidentifier by its last six bytes first (ids.New).
func (mssqlDialect) NewID() uuid.UUID { return ids.New() }

// mssqlSetScope sets both session keys at the start of every transaction, on the
// transaction's own connection, without @read_only (TSQL.md). The key names are constants
// of this statement and the values are parameters, so no tenant id can name another key.
//
// Reading check: no table is read; sp_set_session_context takes no locks and raises only
// on a bad key or a second write of a @read_only key (15664: never, since @read_only is
// never used). The bypass also needs the ledger_maintenance role (migration 000013).
const mssqlSetScope = `EXEC sys.sp_set_session_context @key = N'TenantId', @value = @p1;
EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = @p2;`

// scopeArgs returns the values SetScope sends: the tenant (NULL in maintenance scope, so
// no tenant's rows match by tenant) and the bypass flag, which is 1 only in the scope that
// MaintenanceScope made. A tenant transaction always writes 0, so a connection that
// maintenance code used can never carry the bypass into a tenant's transaction.
func scopeArgs(s Scope) (tenant any, maintenance int) {
	if s.maintenance {
		return nil, 1
	}
	return s.tenant, 0
}

// scopePrefix is mssqlSetScope, with the parameters renumbered after a statement's nargs
// own, to be sent in front of that statement (TenantScopeInFirstRoundTrip).
func (mssqlDialect) scopePrefix(s Scope, nargs int) (string, []any) {
	tenant, maint := scopeArgs(s)
	text := strings.NewReplacer("@p1", fmt.Sprintf("@p%d", nargs+1), "@p2", fmt.Sprintf("@p%d", nargs+2)).Replace(mssqlSetScope)
	return text, []any{tenant, maint}
}

// mssqlSetScopeAndClock is mssqlSetScope followed by the database clock, so a transaction
// that needs the time (most writes) sends no clock statement of its own: the scope's round
// trip carries it, as a claim's first statement carries its clock.
const mssqlSetScopeAndClock = mssqlSetScope + `
SELECT CAST(SYSUTCDATETIME() AS datetimeoffset(3)) AS Now;`

// SetScope sets SESSION_CONTEXT on the transaction's own connection (see mssqlSetScope)
// and gives the transaction the database clock read in the same round trip.
func (mssqlDialect) SetScope(ctx context.Context, tx *Tx, s Scope) error {
	tenant, maint := scopeArgs(s)
	var now Time
	if err := tx.GetContext(ctx, &now, mssqlSetScopeAndClock, tenant, maint); err != nil {
		return err
	}
	tx.SeedNow(now.Time)
	return nil
}

// MapError maps a driver error to the package's sentinels. It looks through every server
// message of the batch (mssql.Error.All, first to last), since the interesting one is not
// always the last ("The statement has been terminated." often follows it).
func (d mssqlDialect) MapError(err error) error {
	if err == nil || mapped(err) || errors.Is(err, ErrMisconfigured) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var me mssql.Error
	if errors.As(err, &me) {
		all := me.All
		if len(all) == 0 {
			all = []mssql.Error{me}
		}
		for _, e := range all {
			if m := mapMSSQLError(e, err); m != nil {
				return m
			}
		}
		// A fatal error (severity 20 and up) severed the connection: the server is in
		// trouble, not the request.
		var fatal mssql.ServerError
		if errors.As(err, &fatal) {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	// The connection broke: the server went away, a failover, a network fault, or a read
	// that hit EOF. database/sql already retried bad connections that had sent nothing.
	var ne net.Error
	var se mssql.StreamError
	if errors.Is(err, driver.ErrBadConn) || errors.As(err, &ne) || errors.As(err, &se) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// mapMSSQLError maps one server message, or returns nil for a message with no meaning
// here (the caller then looks at the next one).
func mapMSSQLError(e mssql.Error, err error) error {
	switch n := e.Number; {
	case n == mssqlDuplicateIndex:
		// The index name is the second quoted name (the first is the table).
		return &ConflictError{Constraint: quotedName(e.Message, '\'', 2), cause: err}
	case n == mssqlDuplicateKey:
		// PRIMARY KEY or UNIQUE KEY constraint: the first quoted name.
		return &ConflictError{Constraint: quotedName(e.Message, '\'', 1), cause: err}
	case n == mssqlDeadlock || n == mssqlLockTimeout || n == mssqlSnapshotConflict:
		// The whole transaction may run again (db.retry, with backoff).
		return fmt.Errorf("%w: %w", ErrRetryable, err)
	case n == mssqlConstraint:
		// FOREIGN KEY and REFERENCE conflicts name an FK_ constraint, CHECK conflicts a CK_
		// one: every constraint in migrations/mssql is named so (lint test), and SQL Server's
		// generated names (FK__…, CK__…) keep the prefixes. The message text is not read.
		if strings.HasPrefix(quotedName(e.Message, '"', 1), "FK_") {
			return fmt.Errorf("%w: %w", ErrBadReference, err)
		}
		return fmt.Errorf("%w: %w", ErrRefused, err)
	case n == mssqlRLSBlock || (n >= mssqlTriggerFirst && n <= mssqlTriggerLast):
		return fmt.Errorf("%w: %w", ErrRefused, err)
	case n == mssqlAzureNotAvailable || n == mssqlAzureBusy || n == mssqlAzureServiceError ||
		n == mssqlAzureNoResources || n == mssqlAzureTooManyCU || n == mssqlAzureTooManyOps ||
		n == mssqlAzureLimitReached || n == mssqlAzureMinGuarantee:
		// Azure SQL reconfiguring (failover, upgrade, scaling: usually seconds, up to a
		// minute) or throttling by resource governance. Microsoft asks for at least 5 s
		// before a retry (40501 says 10 s); the in-process retry backs off for well under a
		// second in all and would only add load to a throttled database. So: 503 with
		// Retry-After, and the client comes back later.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case n == mssqlCollationConflict || n == mssqlCollationConflictOp || n == mssqlCollationConflictCol ||
		n == mssqlCollationUnresolved:
		return fmt.Errorf("%w: %w", ErrCollationConflict, err)
	case n == mssqlInvalidObject || n == mssqlInvalidColumn || n == mssqlWrongSetOptions ||
		n == mssqlPermissionDenied || n == mssqlColumnDenied:
		return fmt.Errorf("%w: %w", ErrMisconfigured, err)
	}
	return nil
}

// quotedName returns the n-th name (from 1) that msg quotes with q, or, when msg has fewer,
// msg cut before its first '(' (the duplicate key value, which holds user data, never
// takes part in a match).
func quotedName(msg string, q byte, n int) string {
	rest := msg
	for i := 1; ; i++ {
		start := strings.IndexByte(rest, q)
		if start < 0 {
			break
		}
		end := strings.IndexByte(rest[start+1:], q)
		if end < 0 {
			break
		}
		if i == n {
			return rest[start+1 : start+1+end]
		}
		rest = rest[start+1+end+1:]
	}
	if before, _, found := strings.Cut(msg, "("); found {
		return before
	}
	return msg
}

// StripComments drops -- comments from T-SQL text (a migration's, a check's), which quote statements in prose.
func StripComments(sql string) string {
	var b strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}
