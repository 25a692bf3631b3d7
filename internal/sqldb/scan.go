package sqldb

import (
	"database/sql"
	"fmt"
	"reflect"
	"sync"

	"github.com/jmoiron/sqlx/reflectx"
)

// scanPlans remembers, per statement text and destination type, which struct field each
// result column goes to. sqlx's Get works that out again for every row (TraversalsByName
// and fieldsByTraversal were 3.4 % of the server's CPU in a profile of the cycle workload);
// a statement's columns are fixed by its text, so the first scan decides.
// A plan that no longer fits (another column count) fails the scan loudly, never silently.
type scanPlans struct{ m sync.Map } // planKey -> [][]int

type planKey struct {
	query string
	t     reflect.Type
}

// getRow scans the first row of rows into dest as sqlx's Get does: a scannable dest (a
// sql.Scanner, a non-struct, or a struct without mapped fields such as time.Time) takes
// the one column; a struct takes each column in the field its db tag names, and a column
// no field names is an error. No row: sql.ErrNoRows. p may be nil (nothing remembered).
func (p *scanPlans) getRow(rows *sql.Rows, err error, query string, dest any, m *reflectx.Mapper) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	v := reflect.ValueOf(dest)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("scan into %T: want a non-nil pointer", dest)
	}
	var targets []any
	if scannable(v.Type().Elem(), m) {
		targets = []any{dest}
	} else {
		plan, err := p.plan(rows, query, v.Type(), m)
		if err != nil {
			return fmt.Errorf("%w in %T", err, dest)
		}
		s := v.Elem()
		targets = make([]any, len(plan))
		for i, idx := range plan {
			targets[i] = reflectx.FieldByIndexes(s, idx).Addr().Interface()
		}
	}
	if err := rows.Scan(targets...); err != nil {
		return err
	}
	return rows.Close()
}

// plan is the field path of each column of rows in the struct t points to.
func (p *scanPlans) plan(rows *sql.Rows, query string, t reflect.Type, m *reflectx.Mapper) ([][]int, error) {
	key := planKey{query, t}
	if p != nil {
		if plan, ok := p.m.Load(key); ok {
			return plan.([][]int), nil
		}
	}
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	plan := m.TraversalsByName(t, cols)
	for i, idx := range plan {
		if len(idx) == 0 {
			return nil, fmt.Errorf("missing destination name %s", cols[i])
		}
	}
	if p != nil {
		p.m.Store(key, plan)
	}
	return plan, nil
}

var scannerType = reflect.TypeFor[sql.Scanner]()

// scannable is sqlx's rule for a destination that takes a whole column.
func scannable(t reflect.Type, m *reflectx.Mapper) bool {
	if reflect.PointerTo(t).Implements(scannerType) || t.Kind() != reflect.Struct {
		return true
	}
	return len(m.TypeMap(t).Index) == 0
}
