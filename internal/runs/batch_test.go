package runs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func batchSpec(i int) runs.Spec {
	key := fmt.Sprintf("batch-%d", i)
	return runs.Spec{ProjectID: "p1", Subject: fmt.Sprintf("batch:%d", i), Kind: "k", AgentID: "a", StepID: uuid.New(),
		SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3, IdempotencyKey: &key}
}

func (e *env) runCount() int {
	e.t.Helper()
	n, err := e.svc.List(e.ctx, e.tenant, runs.ListFilter{Limit: 500})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(n)
}

// TestBatchIsOneTransaction: a batch of 500 runs in one transaction, so a fault at its 400th
// insert leaves no run at all, and the same batch then enqueues all 500; a repeat of it is
// answered by the existing runs, marked, and creates nothing.
func TestBatchIsOneTransaction(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		specs := make([]runs.Spec, 500)
		for i := range specs {
			specs[i] = batchSpec(i)
		}
		var inserts atomic.Int32
		fault := errors.New("injected fault at item 400")
		e.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
			if strings.Contains(st.Query, "INSERT INTO Runs") || strings.Contains(st.Query, "INSERT INTO dbo.Runs") {
				if inserts.Add(1) == 400 {
					return fault
				}
			}
			return nil
		})
		if _, err := e.svc.EnqueueBatch(e.ctx, e.caller, specs); !errors.Is(err, fault) {
			t.Fatalf("batch with a fault: %v", err)
		}
		e.db.SetStatementHook(nil)
		if inserts.Load() != 400 {
			t.Fatalf("the fault met %d inserts, want 400", inserts.Load())
		}
		if n := e.runCount(); n != 0 {
			t.Fatalf("a failed batch left %d runs", n)
		}
		items, err := e.svc.EnqueueBatch(e.ctx, e.caller, specs)
		if err != nil || len(items) != 500 {
			t.Fatalf("batch: %d items, %v", len(items), err)
		}
		for i, it := range items {
			if it.Existing || *it.Run.IdempotencyKey != *specs[i].IdempotencyKey {
				t.Fatalf("item %d: %+v", i, it)
			}
		}
		again, err := e.svc.EnqueueBatch(e.ctx, e.caller, specs[:3])
		if err != nil || len(again) != 3 {
			t.Fatal(err)
		}
		for i, it := range again {
			if !it.Existing || it.Run.RunID != items[i].Run.RunID {
				t.Fatalf("repeat item %d: %+v, want the existing run %s", i, it, items[i].Run.RunID)
			}
		}
		if n := e.runCount(); n != 500 {
			t.Fatalf("%d runs, want 500", n)
		}
	})
}

// TestBatchRefusalNamesTheItem: one bad item refuses the whole batch, stores nothing, and is
// named: items[i].field, with the refusal's own code.
func TestBatchRefusalNamesTheItem(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		reused := batchSpec(7)
		if _, _, err := e.svc.Enqueue(e.ctx, e.caller, reused); err != nil {
			t.Fatal(err)
		}
		other := batchSpec(7)
		other.Subject = "another"
		badProject := batchSpec(2)
		badProject.ProjectID = "nope"
		for _, c := range []struct {
			name  string
			bad   runs.Spec
			code  api.ProblemCode
			field string
		}{
			{"UnknownProject", badProject, api.CodeUnknownProject, "items[1].projectId"},
			{"KeyReused", other, api.CodeIdempotencyKeyReused, "items[1].idempotencyKey"},
		} {
			_, err := e.svc.EnqueueBatch(e.ctx, e.caller, []runs.Spec{batchSpec(100), c.bad, batchSpec(101)})
			ae, ok := apperr.As(err)
			if !ok || ae.Code != c.code || len(ae.Fields) != 1 || ae.Fields[0].Field != c.field {
				t.Fatalf("%s: %v (%+v)", c.name, err, ae)
			}
			if n := e.runCount(); n != 1 {
				t.Fatalf("%s: a refused batch stored runs: %d, want the 1 from before", c.name, n)
			}
		}
	})
}

// TestHTTPBatch: the route answers the items in order, marks an exact repeat existing, and
// refuses a batch with one invalid item naming items[i].field, storing nothing.
func TestHTTPBatch(t *testing.T) {
	t.Parallel()
	e := newHTTPEnv(t)
	a := enqueueBody("b:1", `,"idempotencyKey":"b-1"`)
	b := enqueueBody("b:2", "")
	var out api.BatchEnqueueResponse
	if code, _ := e.do("POST", "/v1/runs/batch", e.runtime, `{"items":[`+a+`,`+b+`]}`, &out); code != 200 || len(out.Items) != 2 ||
		out.Items[0].Existing || out.Items[1].Run.Subject != "b:2" {
		t.Fatalf("batch: %d %+v", code, out)
	}
	first := out.Items[0].Run.RunID
	if code, _ := e.do("POST", "/v1/runs/batch", e.runtime, `{"items":[`+a+`]}`, &out); code != 200 || !out.Items[0].Existing ||
		out.Items[0].Run.RunID != first {
		t.Fatalf("repeat: %d %+v", code, out)
	}
	var p problem
	bad := strings.Replace(enqueueBody("b:3", ""), `"kind":"review"`, `"kind":""`, 1)
	if code, _ := e.do("POST", "/v1/runs/batch", e.runtime, `{"items":[`+enqueueBody("b:4", "")+`,`+bad+`]}`, &p); code != 400 ||
		len(p.Errors) != 1 || p.Errors[0].Field != "items[1].kind" {
		t.Fatalf("bad item: %d %+v", code, p)
	}
	var list struct{ Items []api.Run }
	e.do("GET", "/v1/runs?subject=b:4", e.runtime, "", &list)
	if len(list.Items) != 0 {
		t.Fatalf("a refused batch stored %d runs", len(list.Items))
	}
	if code, _ := e.do("POST", "/v1/runs/batch", e.runtime, `{"items":[]}`, &p); code != 400 || len(p.Errors) != 1 || p.Errors[0].Field != "items" {
		t.Fatalf("empty batch: %d %+v", code, p)
	}
}

// BenchmarkEnqueue500 compares enqueueing 500 runs as one batch (one transaction) with 500
// single enqueues (500 transactions), on the embedded database.
func BenchmarkEnqueue500(b *testing.B) {
	svc, c := benchEnv(b, 0)
	ctx := context.Background()
	specs := func() []runs.Spec {
		out := make([]runs.Spec, 500)
		for i := range out {
			n := benchSubject.Add(1)
			out[i] = spec(fmt.Sprintf("subject:%d", n), func(s *runs.Spec) { s.ProjectID = fmt.Sprintf("p%d", n%10) })
		}
		return out
	}
	b.Run("Batch", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s := specs()
			b.StartTimer()
			if _, err := svc.EnqueueBatch(ctx, c, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Singles", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s := specs()
			b.StartTimer()
			for _, sp := range s {
				if _, _, err := svc.Enqueue(ctx, c, sp); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
