package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// reruns is an observer that counts the groups run again.
type reruns struct{ n atomic.Int32 }

func (*reruns) WriteDone(time.Duration) {}
func (*reruns) ConnectionOpened()       {}
func (*reruns) GroupCommitted(int)      {}
func (r *reruns) GroupRerun()           { r.n.Add(1) }

// inOneGroup runs fns as one group: a first write holds the writer until every fn is
// queued behind it, in order. Each result is the fn's error, or its panic as an error.
func inOneGroup(t *testing.T, db *DB, fns ...func(*Tx) error) []error {
	t.Helper()
	ctx := context.Background()
	c := db.group
	queued := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.queues[""])
	}
	hold, held, holderDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		holderDone <- db.Write(ctx, MaintenanceScope(), func(*Tx) error {
			close(held)
			<-hold
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-holderDone:
		t.Fatalf("the write holding the writer never ran: %v", err)
	}
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("panic: %v", r)
				}
			}()
			errs[i] = db.Write(ctx, MaintenanceScope(), fn)
		}()
		for deadline := time.Now().Add(10 * time.Second); queued() != i+1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("write %d never queued", i)
			}
		}
	}
	close(hold)
	wg.Wait()
	return errs
}

// insert is a write's function that inserts x into t.
func insert(x int) func(*Tx) error {
	return func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), "INSERT INTO t (x) VALUES (?)", x)
		return err
	}
}

// openObserved opens a database with a table t (x INTEGER UNIQUE) and an observer counting
// its groups' reruns.
func openObserved(t *testing.T) (*DB, *reruns) {
	t.Helper()
	db := openQuiet(t)
	if _, err := db.Raw().Exec("CREATE TABLE t (x INTEGER UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	obs := &reruns{}
	db.SetObserver(obs)
	return db, obs
}

// wantValues fails t unless t's values are want, in order.
func wantValues(t *testing.T, db *DB, want ...int) {
	t.Helper()
	var got []int
	if err := db.Raw().SelectContext(context.Background(), &got, "SELECT x FROM t ORDER BY x"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("t holds %v, want %v", got, want)
	}
}

// TestGroupRunsTogetherUntilAFailureWithRowsToUndo: a group runs its writes with nothing
// between them; a write that fails having changed no row gets its error and the group goes
// on; one that fails after changing rows sends the group round again, each write in a
// savepoint, where it alone is undone; then the next carefulGroups groups start in
// savepoints; and a test's statement hook makes every group start there.
func TestGroupRunsTogetherUntilAFailureWithRowsToUndo(t *testing.T) {
	t.Parallel()
	refused := errors.New("refused")
	then := func(first func(*Tx) error, err error) func(*Tx) error {
		return func(tx *Tx) error {
			if e := first(tx); e != nil {
				return e
			}
			return err
		}
	}
	// reads fails after a read: no row changed.
	reads := func(tx *Tx) error {
		var n int
		if err := tx.GetContext(context.Background(), &n, "SELECT COUNT(*) FROM t"); err != nil {
			return err
		}
		return refused
	}
	// unique fails on its one statement, which its own journal rolls back.
	unique := insert(7)
	type want struct {
		err    error // nil: succeeds; refused; errAny: some error
		panics bool
	}
	errAny := errors.New("any error")
	cases := []struct {
		name string
		// fns builds the group's writes; runs counts each write's runs.
		fns    func(runs []atomic.Int32) []func(*Tx) error
		want   []want
		rows   []int // t's rows after the group, beside the row 7 every case starts with
		reruns int32
	}{
		{
			name: "EveryWriteSucceeds",
			fns: func([]atomic.Int32) []func(*Tx) error {
				return []func(*Tx) error{insert(1), insert(2), insert(3)}
			},
			want: []want{{}, {}, {}},
			rows: []int{1, 2, 3},
		},
		{
			name: "FailuresWithNothingChanged",
			fns: func([]atomic.Int32) []func(*Tx) error {
				return []func(*Tx) error{insert(1), reads, insert(2), unique, insert(3)}
			},
			want: []want{{}, {err: refused}, {}, {err: errAny}, {}},
			rows: []int{1, 2, 3},
		},
		{
			name: "AFailureAfterItsInsert",
			fns: func([]atomic.Int32) []func(*Tx) error {
				return []func(*Tx) error{insert(1), then(insert(2), refused), insert(3)}
			},
			want:   []want{{}, {err: refused}, {}},
			rows:   []int{1, 3},
			reruns: 1,
		},
		{
			name: "AStatementFailingAfterAnother",
			fns: func([]atomic.Int32) []func(*Tx) error {
				return []func(*Tx) error{insert(1), then(insert(2), nil), then(insert(4), nil), func(tx *Tx) error {
					if err := insert(5)(tx); err != nil {
						return err
					}
					return unique(tx)
				}}
			},
			want:   []want{{}, {}, {}, {err: errAny}},
			rows:   []int{1, 2, 4},
			reruns: 1,
		},
		{
			name: "AFailureOnlyTheFirstTime",
			fns: func(runs []atomic.Int32) []func(*Tx) error {
				return []func(*Tx) error{insert(1), func(tx *Tx) error {
					if err := insert(2)(tx); err != nil {
						return err
					}
					if runs[1].Add(1) == 1 {
						return refused
					}
					return nil
				}}
			},
			want:   []want{{}, {}},
			rows:   []int{1, 2},
			reruns: 1,
		},
		{
			name: "APanicAfterItsInsert",
			fns: func([]atomic.Int32) []func(*Tx) error {
				return []func(*Tx) error{insert(1), func(tx *Tx) error {
					if err := insert(2)(tx); err != nil {
						return err
					}
					panic("injected")
				}, insert(3)}
			},
			want:   []want{{}, {panics: true}, {}},
			rows:   []int{1, 3},
			reruns: 1,
		},
		{
			// A corrupt index, say: the statement may have removed an entry and counted no row.
			name: "AFailureThatBreaksTheConnection",
			fns: func([]atomic.Int32) []func(*Tx) error {
				return []func(*Tx) error{insert(1), func(tx *Tx) error {
					tx.wc.bad = true
					return refused
				}, insert(3)}
			},
			want:   []want{{}, {err: refused}, {}},
			rows:   []int{1, 3},
			reruns: 1,
		},
		{
			name: "APanicWithNothingChanged",
			fns: func([]atomic.Int32) []func(*Tx) error {
				return []func(*Tx) error{insert(1), func(*Tx) error { panic("injected") }, insert(3)}
			},
			want: []want{{}, {panics: true}, {}},
			rows: []int{1, 3},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, obs := openObserved(t)
			if err := insertRow(db, 7); err != nil {
				t.Fatal(err)
			}
			runs := make([]atomic.Int32, len(tc.want))
			errs := inOneGroup(t, db, tc.fns(runs)...)
			for i, w := range tc.want {
				err := errs[i]
				switch {
				case w.panics:
					if err == nil || err.Error() != "panic: injected" {
						t.Errorf("write %d: %v, want its panic", i, err)
					}
				case w.err == errAny:
					if err == nil {
						t.Errorf("write %d succeeded, want an error", i)
					}
				case !errors.Is(err, w.err) || (w.err == nil && err != nil):
					t.Errorf("write %d: %v, want %v", i, err, w.err)
				}
			}
			wantValues(t, db, append(tc.rows, 7)...)
			if got := obs.n.Load(); got != tc.reruns {
				t.Errorf("%d reruns, want %d", got, tc.reruns)
			}
			wantCareful := 0
			if tc.reruns > 0 {
				wantCareful = carefulGroups
			}
			if got := db.group.careful; got != wantCareful {
				t.Errorf("%d careful groups to come, want %d", got, wantCareful)
			}
		})
	}

	t.Run("CarefulGroupsCountDown", func(t *testing.T) {
		t.Parallel()
		db, obs := openObserved(t)
		fail := then(insert(-1), refused)
		inOneGroup(t, db, insert(1), fail)
		if obs.n.Load() != 1 || db.group.careful != carefulGroups {
			t.Fatalf("%d reruns, %d careful groups after the first failure", obs.n.Load(), db.group.careful)
		}
		// Each two-write group counts one down (the holder's, a group of one, has no
		// savepoints to choose); a failure in a careful group starts the count again
		// without a rerun.
		for i := range carefulGroups - 1 {
			inOneGroup(t, db, insert(10+2*i), insert(11+2*i))
		}
		if db.group.careful != 1 {
			t.Fatalf("%d careful groups to come, want 1", db.group.careful)
		}
		errs := inOneGroup(t, db, insert(1000), fail)
		if errs[0] != nil || !errors.Is(errs[1], refused) || obs.n.Load() != 1 || db.group.careful != carefulGroups {
			t.Fatalf("a failure in a careful group: %v, %d reruns, %d careful groups to come", errs, obs.n.Load(), db.group.careful)
		}
		db.group.careful = 0
		inOneGroup(t, db, insert(2000), fail)
		if obs.n.Load() != 2 {
			t.Fatalf("%d reruns once the count ran out, want 2", obs.n.Load())
		}
		wantRows(t, db, 1+2*(carefulGroups-1)+1+1)
	})

	t.Run("AfterCommitRunsOnceThroughARerun", func(t *testing.T) {
		t.Parallel()
		db, obs := openObserved(t)
		var ran, after atomic.Int32
		counted := func(tx *Tx) error {
			ran.Add(1)
			tx.AfterCommit(func() { after.Add(1) })
			return insert(1)(tx)
		}
		errs := inOneGroup(t, db, counted, then(insert(2), refused))
		if errs[0] != nil || !errors.Is(errs[1], refused) || obs.n.Load() != 1 {
			t.Fatalf("%v, %d reruns", errs, obs.n.Load())
		}
		if ran.Load() != 2 || after.Load() != 1 {
			t.Fatalf("the first write ran %d times and its AfterCommit %d, want 2 and 1", ran.Load(), after.Load())
		}
	})

	t.Run("AHookStartsInSavepoints", func(t *testing.T) {
		t.Parallel()
		db, obs := openObserved(t)
		db.SetStatementHook(func(context.Context, *Tx, Statement) error { return nil })
		errs := inOneGroup(t, db, insert(1), then(insert(2), refused), insert(3))
		if errs[0] != nil || !errors.Is(errs[1], refused) || errs[2] != nil {
			t.Fatalf("%v", errs)
		}
		wantValues(t, db, 1, 3)
		if obs.n.Load() != 0 || db.group.careful != carefulGroups {
			t.Fatalf("%d reruns and %d careful groups with a hook, want 0 and %d", obs.n.Load(), db.group.careful, carefulGroups)
		}
	})
}

// TestASwallowedTriggerRefusalFailsItsWrite: a trigger refusing with RAISE(FAIL) keeps the
// row it refused; a write whose function swallows that error and returns nil still fails
// with the refusal (ErrRefused), and nothing it wrote stays: alone, in a group run together
// (which then runs again) and in a group run in savepoints.
func TestASwallowedTriggerRefusalFailsItsWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	open := func(t *testing.T) *DB {
		db, _ := openObserved(t)
		if _, err := db.Raw().Exec(`CREATE TRIGGER t_refuse AFTER INSERT ON t WHEN NEW.x < 0 BEGIN SELECT RAISE(FAIL, 'negative'); END;`); err != nil {
			t.Fatal(err)
		}
		return db
	}
	swallows := func(tx *Tx) error {
		if err := insert(1)(tx); err != nil {
			return err
		}
		if err := insert(-1)(tx); !errors.Is(err, ErrRefused) {
			return fmt.Errorf("the trigger did not refuse: %v", err)
		}
		return nil // goes on as if nothing happened
	}
	for _, mode := range []string{"Alone", "Together", "InSavepoints"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			var err error
			switch mode {
			case "Alone":
				err = db.Write(ctx, MaintenanceScope(), swallows)
				wantValues(t, db)
			default:
				if mode == "InSavepoints" {
					db.SetStatementHook(func(context.Context, *Tx, Statement) error { return nil })
				}
				errs := inOneGroup(t, db, insert(2), swallows, insert(3))
				if errs[0] != nil || errs[2] != nil {
					t.Fatalf("the others: %v", errs)
				}
				err = errs[1]
				wantValues(t, db, 2, 3)
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("the write that swallowed a refusal: %v, want ErrRefused", err)
			}
		})
	}
}
