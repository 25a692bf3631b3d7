package migrate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Rolling deploys (DESIGN.md section 8): every migration declares on its first line whether
// a binary that predates it still works against the schema it leaves (additive: new
// tables, nullable columns, indexes) or not (breaking). The database records the kind of
// each applied migration in SchemaMigrationKinds (migration 20), so a binary older than
// the schema can tell, without the newer files, whether it may serve it.

// MigrationKind is what a migration's first line declares.
type MigrationKind string

const (
	// Additive: a binary that predates the migration still works against its schema.
	Additive MigrationKind = "additive"
	// Breaking: a binary that predates it does not; the line after the kind says why.
	Breaking MigrationKind = "breaking"
)

// kindLines are the only first lines a migration may have.
var kindLines = map[string]MigrationKind{
	"-- migration: additive": Additive,
	"-- migration: breaking": Breaking,
}

// Migration is one embedded up migration and its declared kind.
type Migration struct {
	Version uint
	Title   string
	Kind    MigrationKind
	// Reason is a breaking migration's second line, without its "-- ".
	Reason string
}

var upFileName = regexp.MustCompile(`^(\d+)_(.+)\.up\.sql$`)

// ReadMigrations reads the kind of every up migration of fsys, in version order. A file
// whose first line is not exactly `-- migration: additive` or `-- migration: breaking`,
// or a breaking one without a second comment line saying why, is an error.
func ReadMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.up.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, name := range names {
		m := upFileName.FindStringSubmatch(name)
		if m == nil {
			return nil, fmt.Errorf("migration %s: the name is not NNNNNN_title.up.sql", name)
		}
		v, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", name, err)
		}
		f, err := fsys.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		var first, second string
		if sc.Scan() {
			first = strings.TrimSuffix(sc.Text(), "\r")
		}
		if sc.Scan() {
			second = strings.TrimSuffix(sc.Text(), "\r")
		}
		f.Close()
		kind, ok := kindLines[first]
		if !ok {
			return nil, fmt.Errorf("migration %s: the first line is %q; it must be exactly `-- migration: additive` or `-- migration: breaking`", name, first)
		}
		mig := Migration{Version: uint(v), Title: m[2], Kind: kind}
		if kind == Breaking {
			reason, isComment := strings.CutPrefix(second, "--")
			mig.Reason = strings.TrimSpace(reason)
			if !isComment || mig.Reason == "" {
				return nil, fmt.Errorf("migration %s: breaking, and the second line does not say why (a -- comment)", name)
			}
		}
		out = append(out, mig)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// kindsSince is the first migration version that records kinds (it creates the table).
const kindsSince = 20

// kindsTable is where the kinds are kept, in the dialect's spelling.
func kindsTable(db *sqldb.DB) string {
	return db.Dialect.QualifyTable("SchemaMigrationKinds")
}

// RecordKinds makes SchemaMigrationKinds hold the kind of every applied migration this
// binary embeds, and nothing past the applied version (a `migrate down` took those back).
// The migration commands call it after they change the version; it is idempotent, so a
// run killed before it is mended by the next `migrate up`. Rows past this binary's own
// migrations, which a newer binary wrote, are kept while they are applied.
func RecordKinds(ctx context.Context, db *sqldb.DB) error {
	st, err := ReadState(ctx, db)
	if err != nil || st.Dirty || st.Version < kindsSince {
		return err
	}
	migs, err := ReadMigrations(db.Migrations())
	if err != nil {
		return err
	}
	table := kindsTable(db)
	if err := dropKindsPast(ctx, db, int(st.Version)); err != nil {
		return err
	}
	var have []int64
	if err := db.Raw().SelectContext(ctx, &have, `SELECT Version FROM `+table); err != nil {
		return fmt.Errorf("record migration kinds: %w", db.Dialect.MapError(err))
	}
	recorded := map[int64]bool{}
	for _, v := range have {
		recorded[v] = true
	}
	now := db.Dialect.Time(time.Now())
	for _, m := range migs {
		if m.Version > st.Version || recorded[int64(m.Version)] {
			continue
		}
		var reason any
		if m.Reason != "" {
			reason = m.Reason
		}
		// Each row alone: a second migrate runner writing the same row at once gets a
		// duplicate key, which is the row this one wanted.
		_, err := db.Raw().ExecContext(ctx, db.Raw().Rebind(`INSERT INTO `+table+` (Version, Kind, Title, Reason, RecordedAt) VALUES (?, ?, ?, ?, ?)`),
			int64(m.Version), string(m.Kind), m.Title, reason, now)
		if err = db.Dialect.MapError(err); err != nil && !sqldb.IsConflict(err) {
			return fmt.Errorf("record migration kinds: %w", err)
		}
	}
	return nil
}

// dropKindsPast deletes the kinds recorded for versions past v.
func dropKindsPast(ctx context.Context, db *sqldb.DB, v int) error {
	_, err := db.Raw().ExecContext(ctx, db.Raw().Rebind(`DELETE FROM `+kindsTable(db)+` WHERE Version > ?`), int64(v))
	if err != nil && !isNoSuchTable(err) {
		return fmt.Errorf("record migration kinds: %w", db.Dialect.MapError(err))
	}
	return nil
}

// NewerMigration is a migration applied to the database that this binary does not embed.
type NewerMigration struct {
	Version uint
	Title   string
	// Kind is "" when the database has no record of it (a binary before kinds migrated it,
	// or the recording was cut short): it is treated as breaking.
	Kind   MigrationKind
	Reason string
}

// SchemaError is a schema this binary cannot serve, with what to do about it.
type SchemaError struct {
	State SchemaState
	// Breaking is the first newer migration that is not known to be additive (nil when
	// the schema is behind or dirty).
	Breaking *NewerMigration
	msg      string
}

func (e *SchemaError) Error() string { return e.msg }

// Servable says whether this binary may serve the database's schema. It may when the
// schema is exactly its own, or newer by migrations that are all recorded additive: then
// newer lists them (for the log line that says so). Otherwise the error is a *SchemaError
// that says what to run or deploy.
func Servable(ctx context.Context, db *sqldb.DB) (st SchemaState, newer []NewerMigration, err error) {
	st, err = ReadState(ctx, db)
	if err != nil {
		return st, nil, err
	}
	switch {
	case st.Dirty:
		return st, nil, &SchemaError{State: st, msg: st.dirtyError().Error()}
	case st.Version < st.Latest:
		return st, nil, &SchemaError{State: st, msg: fmt.Sprintf("schema is at version %d, this binary needs %d: run `ledger migrate up`", st.Version, st.Latest)}
	case st.Version == st.Latest:
		return st, nil, nil
	}
	newer, err = newerMigrations(ctx, db, st)
	if err != nil {
		return st, nil, err
	}
	for i := range newer {
		if newer[i].Kind != Additive {
			return st, newer, &SchemaError{State: st, Breaking: &newer[i], msg: newerSchemaMessage(st, newer[i])}
		}
	}
	return st, newer, nil
}

// newerSchemaMessage says why a binary refuses a newer schema and what to deploy.
func newerSchemaMessage(st SchemaState, m NewerMigration) string {
	why := "it is not recorded as additive"
	if m.Reason != "" && m.Kind == "" {
		why += " (" + m.Reason + ")"
	}
	switch {
	case m.Kind == Breaking && m.Reason != "":
		why = "it is breaking: " + m.Reason
	case m.Kind == Breaking:
		why = "it is breaking"
	}
	return fmt.Sprintf("schema is at version %d, newer than this binary's %d, and migration %d (%s) needs a newer binary: %s; "+
		"deploy a binary whose schema version (`ledger --version`) is at least %d", st.Version, st.Latest, m.Version, m.Title, why, st.Version)
}

// newerMigrations reads the recorded kinds of the applied migrations past this binary's.
func newerMigrations(ctx context.Context, db *sqldb.DB, st SchemaState) ([]NewerMigration, error) {
	var rows []struct {
		Version int64   `db:"Version"`
		Kind    string  `db:"Kind"`
		Title   string  `db:"Title"`
		Reason  *string `db:"Reason"`
	}
	err := db.RawReader().SelectContext(ctx, &rows, db.RawReader().Rebind(`SELECT Version, Kind, Title, Reason FROM `+kindsTable(db)+
		` WHERE Version > ? AND Version <= ? ORDER BY Version`), int64(st.Latest), int64(st.Version))
	if err != nil && !isNoSuchTable(err) {
		return nil, fmt.Errorf("read migration kinds: %w", db.Dialect.MapError(err))
	}
	// Versions need not be consecutive, so the rows are the newer migrations. Every binary
	// that applies a migration records it (RecordKinds, after each migrate); one killed in
	// between left the applied version without a row, and so unknown: not additive.
	out := make([]NewerMigration, 0, len(rows)+1)
	for _, r := range rows {
		m := NewerMigration{Version: uint(r.Version), Kind: MigrationKind(r.Kind), Title: r.Title}
		if r.Reason != nil {
			m.Reason = *r.Reason
		}
		out = append(out, m)
	}
	if len(out) == 0 || out[len(out)-1].Version != st.Version {
		out = append(out, NewerMigration{Version: st.Version, Title: "unrecorded",
			Reason: "the database has no record of its kind: run `ledger migrate up` with the binary that applied it"})
	}
	return out, nil
}

func isNoSuchTable(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "Invalid object name"))
}

// IsSchemaError reports whether err says the schema cannot be served.
func IsSchemaError(err error) bool {
	var se *SchemaError
	return errors.As(err, &se)
}
