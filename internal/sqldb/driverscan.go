package sqldb

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// SQLite's statements run on the process's own connections (ownconn.go, libconn.go),
// not through database/sql: its argument conversion (driverArgsConnLocked), its Rows and
// its convertAssign were about 60k instructions of a cycle, with their allocations
// (docs/perf/issue-35.md). This file is what those connections keep of them: the arguments
// converted as database/sql converts them (then bound as the driver binds them), and the
// row values (the driver's, libRows) assigned as its Scan assigns them. SQL Server stays
// on database/sql.

// rowSource is what the scan plans read rows from: *sql.Rows, or an own connection's ownRows.
type rowSource interface {
	Next() bool
	Scan(dest ...any) error
	Columns() ([]string, error)
	Err() error
	Close() error
}

// namedArgs converts a statement's arguments into buf (reused by the caller) as database/sql
// does for a driver with neither a NamedValueChecker nor a ColumnConverter (modernc has
// neither): a driver.Value as it is, anything else through driver.DefaultParameterConverter
// (Valuers, pointers, named kinds), a sql.NamedArg by its name. A uuid.UUID is kept as it
// is: libStmt.bind binds the text its Value would give, without the string.
func namedArgs(buf []driver.NamedValue, args []any) ([]driver.NamedValue, error) {
	buf = buf[:0]
	for i, a := range args {
		nv := driver.NamedValue{Ordinal: i + 1}
		if na, ok := a.(sql.NamedArg); ok {
			nv.Name, a = na.Name, na.Value
		}
		switch v := a.(type) {
		case nil, int64, float64, bool, []byte, string, time.Time, uuid.UUID:
			nv.Value = v
		case int:
			nv.Value = int64(v)
		default:
			cv, err := driver.DefaultParameterConverter.ConvertValue(a)
			if err != nil {
				return buf, fmt.Errorf("sql: converting argument %s type: %w", describeArg(nv), err)
			}
			nv.Value = cv
		}
		buf = append(buf, nv)
	}
	return buf, nil
}

func describeArg(nv driver.NamedValue) string {
	if nv.Name != "" {
		return "with name " + strconv.Quote(nv.Name)
	}
	return "$" + strconv.Itoa(nv.Ordinal)
}

// ownRows is the rows of a statement run on an own connection (libRows) read as
// rowSource: Next only steps, and Scan reads each column straight into its destination
// (libRows.scanCol, which assigns as database/sql's Scan does).
type ownRows struct {
	lr     *libRows
	err    error
	closed bool
	// ws, when set, is the kept statement the rows are of (its scan plans).
	ws *ownStmt
	// owner, when set, is the connection whose reused rows these are: closing them frees
	// them for its next statement.
	owner *ownConn
}

func newOwnRows(lr *libRows, ws *ownStmt, owner *ownConn) *ownRows {
	return &ownRows{lr: lr, ws: ws, owner: owner}
}

// reset makes r the rows of another statement.
func (r *ownRows) reset(lr *libRows, ws *ownStmt, owner *ownConn) {
	*r = ownRows{lr: lr, ws: ws, owner: owner}
}

func (r *ownRows) Next() bool {
	if r.closed || r.err != nil {
		return false
	}
	if err := r.lr.advance(); err != nil {
		if !errors.Is(err, io.EOF) {
			r.err = err
			if r.owner != nil {
				r.owner.noteBad(err)
			}
		}
		return false
	}
	return true
}

func (r *ownRows) Scan(dest ...any) error {
	cols := r.lr.Columns()
	if len(dest) != len(cols) {
		return fmt.Errorf("sql: expected %d destination arguments in Scan, not %d", len(cols), len(dest))
	}
	for i, d := range dest {
		if err := r.lr.scanCol(i, d); err != nil {
			return fmt.Errorf("sql: Scan error on column index %d, name %q: %w", i, cols[i], err)
		}
	}
	return nil
}

func (r *ownRows) Columns() ([]string, error) { return r.lr.Columns(), nil }

func (r *ownRows) Err() error { return r.err }

func (r *ownRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.lr.Close()
	r.lr = nil
	if r.owner != nil {
		r.owner.rowsBusy = false
	}
	return err
}

// assign stores the driver's value src in dest as database/sql's Rows.Scan does, for the
// values modernc hands over (int64, float64, string, []byte, time.Time, nil): the common
// destinations without reflection, the rest (named kinds, pointers to pointers) by
// database/sql's reflective rules.
func assign(dest any, src driver.Value) error {
	switch d := dest.(type) {
	case *string:
		switch s := src.(type) {
		case string:
			*d = s
			return nil
		case []byte:
			*d = string(s)
			return nil
		case int64:
			*d = strconv.FormatInt(s, 10)
			return nil
		case float64:
			*d = strconv.FormatFloat(s, 'g', -1, 64)
			return nil
		case bool:
			*d = strconv.FormatBool(s)
			return nil
		case time.Time:
			*d = s.Format(time.RFC3339Nano)
			return nil
		}
	case *int64:
		if v, ok := src.(int64); ok {
			*d = v
			return nil
		}
	case *int:
		if v, ok := src.(int64); ok && int64(int(v)) == v {
			*d = int(v)
			return nil
		}
	case *bool:
		bv, err := driver.Bool.ConvertValue(src)
		if err == nil {
			*d = bv.(bool)
		}
		return err
	case *[]byte:
		switch s := src.(type) {
		case []byte:
			*d = s // the driver's own copy of the blob, not a buffer it reuses
			return nil
		case string:
			*d = []byte(s)
			return nil
		case nil:
			*d = nil
			return nil
		case int64, float64, bool:
			*d = []byte(asString(s))
			return nil
		}
	case *any:
		*d = src
		return nil
	case **string:
		return assignPtr(d, src)
	case **int:
		return assignPtr(d, src)
	case **int64:
		return assignPtr(d, src)
	case sql.Scanner:
		return d.Scan(src)
	}
	return assignReflect(dest, src)
}

// assignPtr is a nullable column's assignment: NULL is a nil pointer, anything else a new
// value assigned as its type's.
func assignPtr[T any](d **T, src driver.Value) error {
	if src == nil {
		*d = nil
		return nil
	}
	v := new(T)
	if err := assign(v, src); err != nil {
		return err
	}
	*d = v
	return nil
}

var errNilPtr = errors.New("destination pointer is nil")

// assignReflect is database/sql's convertAssign past its common cases.
func assignReflect(dest any, src driver.Value) error {
	dpv := reflect.ValueOf(dest)
	if dpv.Kind() != reflect.Pointer {
		return errors.New("destination not a pointer")
	}
	if dpv.IsNil() {
		return errNilPtr
	}
	sv := reflect.ValueOf(src)
	dv := dpv.Elem()
	if sv.IsValid() && sv.Type().AssignableTo(dv.Type()) {
		dv.Set(sv)
		return nil
	}
	if dv.Kind() == sv.Kind() && sv.Type().ConvertibleTo(dv.Type()) {
		dv.Set(sv.Convert(dv.Type()))
		return nil
	}
	switch dv.Kind() {
	case reflect.Pointer:
		if src == nil {
			dv.SetZero()
			return nil
		}
		dv.Set(reflect.New(dv.Type().Elem()))
		return assign(dv.Interface(), src)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if src == nil {
			return fmt.Errorf("converting NULL to %s is unsupported", dv.Kind())
		}
		// A named integer kind (an enum) from an integer: what database/sql's detour
		// through text gives, without the text.
		if i, ok := src.(int64); ok && !dv.OverflowInt(i) {
			dv.SetInt(i)
			return nil
		}
		s := asString(src)
		i, err := strconv.ParseInt(s, 10, dv.Type().Bits())
		if err != nil {
			return fmt.Errorf("converting driver.Value type %T (%q) to a %s: %w", src, s, dv.Kind(), err)
		}
		dv.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if src == nil {
			return fmt.Errorf("converting NULL to %s is unsupported", dv.Kind())
		}
		s := asString(src)
		u, err := strconv.ParseUint(s, 10, dv.Type().Bits())
		if err != nil {
			return fmt.Errorf("converting driver.Value type %T (%q) to a %s: %w", src, s, dv.Kind(), err)
		}
		dv.SetUint(u)
		return nil
	case reflect.Float32, reflect.Float64:
		if src == nil {
			return fmt.Errorf("converting NULL to %s is unsupported", dv.Kind())
		}
		s := asString(src)
		f, err := strconv.ParseFloat(s, dv.Type().Bits())
		if err != nil {
			return fmt.Errorf("converting driver.Value type %T (%q) to a %s: %w", src, s, dv.Kind(), err)
		}
		dv.SetFloat(f)
		return nil
	case reflect.String:
		if src == nil {
			return fmt.Errorf("converting NULL to %s is unsupported", dv.Kind())
		}
		switch v := src.(type) {
		case string:
			dv.SetString(v)
			return nil
		case []byte:
			dv.SetString(string(v))
			return nil
		}
	}
	return fmt.Errorf("unsupported Scan, storing driver.Value type %T into type %T", src, dest)
}

func asString(src any) string {
	switch v := src.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprintf("%v", src)
}
