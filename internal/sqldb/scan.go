package sqldb

import (
	"database/sql"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jmoiron/sqlx/reflectx"
)

// scanPlans remembers, per statement text and destination type, which struct field each
// result column goes to. sqlx's Get works that out again for every row (TraversalsByName
// and fieldsByTraversal were 3.4 % of the server's CPU in a profile of the cycle workload);
// a statement's columns are fixed by its text, so the first scan decides.
// A plan that no longer fits (another column count) fails the scan loudly, never silently.
type scanPlans struct {
	m sync.Map // planKey -> []planField
	// driverTimes counts the time fields the driver handed over as time values: on SQLite,
	// columns a statement answered with their DATETIME declared type, which the driver
	// parsed the slow way (timetext.go). Tests hold the cycle's statements to none.
	driverTimes atomic.Uint64
}

type planKey struct {
	query string
	t     reflect.Type
}

// planField is where one column goes: the field's index path and, for a time.Time or
// *time.Time field, which scanner takes the column in its place (timetext.go). A field
// reached from the row without passing through a pointer (any field but one of an embedded
// *T, which the scan must allocate first) has ptrType set: its target is made from its
// offset in the row and that type word of a pointer to it. reflect's Field, Addr and Interface cost
// about 200 instructions a column, 22k of the in-process cycle (docs/perf/issue-35.md,
// "The scan's targets without reflection"); this costs a few.
type planField struct {
	idx     []int
	kind    fieldKind
	off     uintptr
	ptrType unsafe.Pointer // nil: the field is reached through a pointer
}

// eface is the layout of a value of type any: its type word, then its data word (for a
// pointer type, the pointer itself). TestPointerAtIsReflects holds pointerAt to reflect.
type eface struct {
	typ, data unsafe.Pointer
}

// pointerAt is the value of type *T, ptrType being that type's word, pointing at p.
func pointerAt(ptrType, p unsafe.Pointer) any {
	var a any
	e := (*eface)(unsafe.Pointer(&a))
	e.typ, e.data = ptrType, p
	return a
}

// pointerType is the type word of *t.
func pointerType(t reflect.Type) unsafe.Pointer {
	proto := reflect.New(t).Interface()
	return (*eface)(unsafe.Pointer(&proto)).typ
}

// directField is the offset in a row of type t of the field at idx, and the field's type;
// not ok when the path passes through a pointer (an embedded *T).
func directField(t reflect.Type, idx []int) (off uintptr, ft reflect.Type, ok bool) {
	ft = t
	for _, k := range idx {
		if ft.Kind() != reflect.Struct {
			return 0, nil, false
		}
		sf := ft.Field(k)
		off += sf.Offset
		ft = sf.Type
	}
	return off, ft, true
}

type fieldKind uint8

const (
	plainField fieldKind = iota
	timeField
	timePtrField
	nullTimeField
)

// sqldb.Time and NullTime fields take the same scanners (their own Scan would parse alike,
// but uncounted).
var (
	timeType     = reflect.TypeFor[time.Time]()
	timePtrType  = reflect.TypeFor[*time.Time]()
	ourTimeType  = reflect.TypeFor[Time]()
	nullTimeType = reflect.TypeFor[NullTime]()
)

// counter is where the plans count driver-converted times (nil p: nowhere).
func (p *scanPlans) counter() *atomic.Uint64 {
	if p == nil {
		return nil
	}
	return &p.driverTimes
}

// getRow scans the first row of rows into dest as sqlx's Get does: a scannable dest (a
// sql.Scanner, a non-struct, or a struct without mapped fields such as time.Time) takes
// the one column; a struct takes each column in the field its db tag names, and a column
// no field names is an error. No row: sql.ErrNoRows. p may be nil (nothing remembered).
func (p *scanPlans) getRow(rows rowSource, err error, query string, dest any, m *reflectx.Mapper) error {
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
		targets = []any{p.scalarTarget(v)}
	} else {
		plan, err := p.plan(rows, query, v.Type(), m)
		if err != nil {
			return fmt.Errorf("%w in %T", err, dest)
		}
		sc := scratchOf(rows)
		targets = p.targets(plan, v.Elem(), sc.targetsFor(len(plan)), sc)
		defer sc.release()
	}
	if err := rows.Scan(targets...); err != nil {
		return err
	}
	return rows.Close()
}

// selectRows scans every row of rows into dest, a pointer to a slice of structs, of
// pointers to structs, or of scannable values, as sqlx's Select does, with getRow's plans.
func (p *scanPlans) selectRows(rows rowSource, err error, query string, dest any, m *reflectx.Mapper) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	v := reflect.ValueOf(dest)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("select into %T: want a pointer to a slice", dest)
	}
	slice := v.Elem()
	elem := slice.Type().Elem()
	byPtr := elem.Kind() == reflect.Pointer
	base := elem
	if byPtr {
		base = elem.Elem()
	}
	whole := scannable(base, m)
	var plan []planField
	if !whole {
		if plan, err = p.plan(rows, query, reflect.PointerTo(base), m); err != nil {
			return fmt.Errorf("%w in %T", err, dest)
		}
	}
	sc := scratchOf(rows)
	defer sc.release()
	targets := sc.targetsFor(max(len(plan), 1))
	for rows.Next() {
		row := reflect.New(base)
		if whole {
			targets[0] = p.scalarTarget(row)
		} else {
			p.targets(plan, row.Elem(), targets, sc)
		}
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		if byPtr {
			slice = reflect.Append(slice, row)
		} else {
			slice = reflect.Append(slice, row.Elem())
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	v.Elem().Set(slice)
	return rows.Close()
}

// scalarTarget is what takes a scannable destination's one column: ptr itself, or a time
// scanner when it points to a time.Time or a *time.Time.
func (p *scanPlans) scalarTarget(ptr reflect.Value) any {
	switch ptr.Type().Elem() {
	case timeType:
		return timeDest{ptr.Interface().(*time.Time), p.counter()}
	case ourTimeType:
		return timeDest{&ptr.Interface().(*Time).Time, p.counter()}
	case nullTimeType:
		return nullTimeDest{ptr.Interface().(*NullTime), p.counter()}
	case timePtrType:
		return timePtrDest{ptr.Interface().(**time.Time), p.counter()}
	}
	return ptr.Interface()
}

// targets fills out with the scan target of each column of plan in the struct s. The time
// scanners are taken from sc (nil: each its own allocation).
func (p *scanPlans) targets(plan []planField, s reflect.Value, out []any, sc *scanScratch) []any {
	sc.reserve(plan)
	base := unsafe.Pointer(s.UnsafeAddr()) // s is the row a pointer points at: addressable
	for i, f := range plan {
		var addr any
		if f.ptrType != nil {
			addr = pointerAt(f.ptrType, unsafe.Add(base, f.off))
		} else {
			// FieldByIndexes allocates an embedded *T left nil, as sqlx's scan does.
			addr = reflectx.FieldByIndexes(s, f.idx).Addr().Interface()
		}
		switch f.kind {
		case timeField:
			d := timeDest{driver: p.counter()}
			if t, ok := addr.(*Time); ok {
				d.p = &t.Time
			} else {
				d.p = addr.(*time.Time)
			}
			out[i] = sc.time(d)
		case nullTimeField:
			out[i] = sc.nullTime(nullTimeDest{addr.(*NullTime), p.counter()})
		case timePtrField:
			out[i] = sc.timePtr(timePtrDest{addr.(**time.Time), p.counter()})
		default:
			out[i] = addr
		}
	}
	return out
}

// scanScratch is an own connection's reusable scan memory: the targets slice and the time
// scanners a row's targets point to, so that a statement's scan allocates neither (the
// connection reads one statement's rows at a time; SQL Server's rows pass nil and allocate).
type scanScratch struct {
	busy      bool
	targets   []any
	times     []timeDest
	nullTimes []nullTimeDest
	timePtrs  []timePtrDest
}

// scratchOf is the scratch of an own connection's rows, or nil (rows of SQL Server, or a
// second statement read while another's rows are open).
func scratchOf(rows rowSource) *scanScratch {
	dr, ok := rows.(*ownRows)
	if !ok || dr.owner == nil || dr.owner.scratch.busy {
		return nil
	}
	dr.owner.scratch.busy = true
	return &dr.owner.scratch
}

func (sc *scanScratch) release() {
	if sc != nil {
		clear(sc.targets)
		clear(sc.times)
		clear(sc.nullTimes)
		clear(sc.timePtrs)
		sc.busy = false
	}
}

func (sc *scanScratch) targetsFor(n int) []any {
	if sc == nil {
		return make([]any, n)
	}
	if cap(sc.targets) < n {
		sc.targets = make([]any, n)
	}
	return sc.targets[:n]
}

// reserve sizes the scanner slices for plan's time fields, before any pointer into them
// is taken.
func (sc *scanScratch) reserve(plan []planField) {
	if sc == nil {
		return
	}
	var times, nulls, ptrs int
	for _, f := range plan {
		switch f.kind {
		case timeField:
			times++
		case nullTimeField:
			nulls++
		case timePtrField:
			ptrs++
		}
	}
	sc.times = grown(sc.times, times)
	sc.nullTimes = grown(sc.nullTimes, nulls)
	sc.timePtrs = grown(sc.timePtrs, ptrs)
}

func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

func (sc *scanScratch) time(d timeDest) any {
	if sc == nil {
		return d
	}
	sc.times = append(sc.times, d)
	return &sc.times[len(sc.times)-1]
}

func (sc *scanScratch) nullTime(d nullTimeDest) any {
	if sc == nil {
		return d
	}
	sc.nullTimes = append(sc.nullTimes, d)
	return &sc.nullTimes[len(sc.nullTimes)-1]
}

func (sc *scanScratch) timePtr(d timePtrDest) any {
	if sc == nil {
		return d
	}
	sc.timePtrs = append(sc.timePtrs, d)
	return &sc.timePtrs[len(sc.timePtrs)-1]
}

// plan is the field of each column of rows in the struct t points to.
func (p *scanPlans) plan(rows rowSource, query string, t reflect.Type, m *reflectx.Mapper) ([]planField, error) {
	// A statement kept on an own connection keeps its plans itself: no lookup by its text.
	var ws *ownStmt
	if dr, ok := rows.(*ownRows); ok && dr.ws != nil {
		ws = dr.ws
		for _, tp := range ws.plans {
			if tp.t == t {
				return tp.plan, nil
			}
		}
	}
	plan, err := p.planByText(rows, query, t, m)
	if err == nil && ws != nil {
		ws.plans = append(ws.plans, typePlan{t, plan})
	}
	return plan, err
}

func (p *scanPlans) planByText(rows rowSource, query string, t reflect.Type, m *reflectx.Mapper) ([]planField, error) {
	key := planKey{query, t}
	if p != nil {
		if plan, ok := p.m.Load(key); ok {
			return plan.([]planField), nil
		}
	}
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	tm := m.TypeMap(t)
	plan := make([]planField, len(cols))
	for i, idx := range m.TraversalsByName(t, cols) {
		if len(idx) == 0 {
			return nil, fmt.Errorf("missing destination name %s", cols[i])
		}
		plan[i].idx = idx
		if off, ft, ok := directField(reflectx.Deref(t), idx); ok {
			plan[i].off, plan[i].ptrType = off, pointerType(ft)
		}
		switch tm.GetByTraversal(idx).Field.Type {
		case timeType, ourTimeType:
			plan[i].kind = timeField
		case timePtrType:
			plan[i].kind = timePtrField
		case nullTimeType:
			plan[i].kind = nullTimeField
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
