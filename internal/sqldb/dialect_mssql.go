package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	mssql "github.com/microsoft/go-mssqldb"
)

// SQL Server error numbers that MapError reads.
const (
	mssqlDeadlock         = 1205
	mssqlLockTimeout      = 1222
	mssqlDuplicateIndex   = 2601
	mssqlDuplicateKey     = 2627
	mssqlConstraint       = 547 // FOREIGN KEY, CHECK or REFERENCE constraint conflict
	mssqlRLSBlock         = 33504
	mssqlTriggerFirst     = 50000
	mssqlTriggerLast      = 59999
	mssqlSnapshotConflict = 3960
)

type mssqlDialect struct{}

func openMSSQL(ctx context.Context, dsn string) (*DB, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlserver: malformed LEDGER_DB URL")
	}
	q := u.Query()
	// The project reads uniqueidentifier into uuid.UUID; the driver must then convert the
	// wire's little-endian groups (TSQL.md: exactly one GUID fix for the whole project).
	if q.Get("guid conversion") == "" {
		q.Set("guid conversion", "true")
	}
	u.RawQuery = q.Encode()
	db, err := sqlx.Open("sqlserver", u.String())
	if err != nil {
		return nil, fmt.Errorf("open sqlserver: %w", err)
	}
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(16)
	db.SetConnMaxLifetime(30 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlserver %s: %w", u.Host, mssqlDialect{}.MapError(err))
	}
	return &DB{Dialect: mssqlDialect{}, w: db, r: db}, nil
}

func (mssqlDialect) Name() string { return "sqlserver" }

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

// SetScope sets SESSION_CONTEXT on the transaction's own connection, at the start of every
// transaction and without @read_only (TSQL.md): a tenant transaction also clears the
// maintenance bypass, so a connection that maintenance code used can never leak it.
func (mssqlDialect) SetScope(ctx context.Context, tx *Tx, s Scope) error {
	var tenant any
	maint := 0
	if s.maintenance {
		maint = 1
	} else {
		tenant = s.tenant
	}
	_, err := tx.ExecContext(ctx, `EXEC sys.sp_set_session_context @key = N'TenantId', @value = @p1;
EXEC sys.sp_set_session_context @key = N'LedgerMaintenance', @value = @p2;`, tenant, maint)
	return err
}

func (mssqlDialect) MapError(err error) error {
	if err == nil || mapped(err) {
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
		// The last error is not always the interesting one: look through all of them.
		for _, e := range all {
			switch n := e.Number; {
			case n == mssqlDuplicateIndex || n == mssqlDuplicateKey:
				return &ConflictError{Constraint: e.Message, cause: err}
			case n == mssqlDeadlock || n == mssqlLockTimeout || n == mssqlSnapshotConflict:
				return fmt.Errorf("%w: %w", ErrRetryable, err)
			case n == mssqlConstraint:
				if strings.Contains(e.Message, "FOREIGN KEY") || strings.Contains(e.Message, "REFERENCE") {
					return fmt.Errorf("%w: %w", ErrBadReference, err)
				}
				return fmt.Errorf("%w: %w", ErrRefused, err)
			case n == mssqlRLSBlock || (n >= mssqlTriggerFirst && n <= mssqlTriggerLast):
				return fmt.Errorf("%w: %w", ErrRefused, err)
			}
		}
		return err
	}
	var ne net.Error
	if errors.Is(err, driver.ErrBadConn) || errors.As(err, &ne) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}
