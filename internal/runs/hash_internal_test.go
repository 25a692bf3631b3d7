package runs

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The request hash is computed from Spec itself: every field changes it when set (each in
// turn, by reflection, so a field added to Spec or to api.RunExtras is tried without a line
// here), except those listed in unhashed with a reason, which change it never.
func TestRequestHashCoversEverySpecField(t *testing.T) {
	t.Parallel()
	base := goldenSpecs()[0]
	baseHash := base.requestHash()
	seen := map[string]bool{}
	for f := range structFields(reflect.TypeFor[Spec]()) {
		seen[f.Name] = true
		spec := base
		v := reflect.ValueOf(&spec).Elem().FieldByName(f.Name)
		perturb(t, f.Name, v)
		reason, out := unhashed[f.Name]
		switch changed := spec.requestHash() != baseHash; {
		case out && changed:
			t.Errorf("Spec.%s is listed as unhashed (%s) but changes the hash", f.Name, reason)
		case !out && !changed:
			t.Errorf("Spec.%s set to %v leaves the request hash as it was: hash it, or list it in unhashed with the reason",
				f.Name, v.Interface())
		}
	}
	for name := range unhashed {
		if !seen[name] {
			t.Errorf("unhashed lists %s, which is no field of Spec", name)
		}
	}
}

// A hash stored with a run before the hash was computed from Spec (these values were
// computed by the hand-written hash it replaced) still matches its request: a repeat of an
// older enqueue answers 200, not idempotency_key_reused.
func TestRequestHashKeepsStoredHashes(t *testing.T) {
	t.Parallel()
	want := []string{
		"a547f6c641dd0ac61be2334b95be7650b8e2883afac0198f783f44a4b1f1492f",
		"cabd648238ca3bd9a91155bd405c0906218b0608275726cee27c3762fb8f08bc",
		"85887da6228e4f430ca57486d12b519bdaeff45f60987ba9cc078961b8b218a5",
	}
	for i, spec := range goldenSpecs() {
		if got := spec.requestHash(); got != want[i] {
			t.Errorf("spec %d: hash %s, want %s", i, got, want[i])
		}
	}
}

// perturb sets v to a value other than the one it has (a new non-zero one for a zero value).
func perturb(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Interface().(type) {
	case uuid.UUID:
		v.Set(reflect.ValueOf(uuid.New()))
		return
	case *time.Time:
		at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		v.Set(reflect.ValueOf(&at))
		return
	case JSONText:
		v.Set(reflect.ValueOf(JSONText(`{"perturbed":true}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-other")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(v.Int() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		perturb(t, name, p.Elem())
		v.Set(p)
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		perturb(t, name, e)
		v.Set(reflect.Append(v, e))
	default:
		t.Fatalf("Spec.%s: no way to set a %s in this test: teach perturb", name, v.Type())
	}
}

func goldenSpecs() []Spec {
	env, key := "env-1", "key-1"
	due := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("x", 3600))
	deadline := due.Add(time.Hour)
	parent := uuid.MustParse("6f1d2a9e-0c1b-4f7a-9a55-0b8f2f1e6c11")
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	base := Spec{ProjectID: "p1", Subject: "s1", Kind: "k", AgentID: "a1",
		StepID: uuid.MustParse("11111111-2222-4333-8444-555555555555"), SnapshotID: uuid.MustParse("21111111-2222-4333-8444-555555555555"),
		Band: 1, MaxAttempts: 3, MaxCorrections: 3}
	full := base
	full.EnvironmentID, full.Input, full.Band, full.DueAt, full.DeadlineAt = &env, JSONText(`{ "a" : [1, 2] }`), 2, &due, &deadline
	full.IdempotencyKey, full.ParentRunID, full.Tags, full.Metadata, full.TraceParent = &key, &parent, []string{"x", "y"}, JSONText(`{"m":1}`), &tp
	bad := base
	bad.Input = JSONText(`{not json`)
	return []Spec{base, full, bad}
}

// structFields yields the fields of struct type t, those of embedded structs in their place.
func structFields(t reflect.Type) func(func(reflect.StructField) bool) {
	return func(yield func(reflect.StructField) bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				for g := range structFields(f.Type) {
					if !yield(g) {
						return
					}
				}
				continue
			}
			if !yield(f) {
				return
			}
		}
	}
}

// TestOnlyKeyedRunsKeepARequestHash: the hash is compared only under an idempotency key,
// so an enqueue without one computes none and stores NULL; one with a key stores it, and
// a repeat with the same request answers the run while another request is refused.
func TestOnlyKeyedRunsKeepARequestHash(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newFaultEnv(t, tgt)
		stored := func(id uuid.UUID) *string {
			t.Helper()
			var h *string
			err := e.db.Read(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
				return tx.GetContext(e.ctx, &h, tx.Rebind(`SELECT RequestHash FROM Runs WHERE RunId = ?`), id)
			})
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		keyless := e.enqueue(e.spec("s"))
		if h := stored(keyless.RunID); h != nil {
			t.Fatalf("a run without an idempotency key keeps request hash %q", *h)
		}
		key := "k-1"
		s := e.spec("s")
		s.IdempotencyKey = &key
		keyed := e.enqueue(s)
		if h := stored(keyed.RunID); h == nil || *h != s.requestHash() {
			t.Fatalf("a keyed run keeps request hash %v, want %s", h, s.requestHash())
		}
		again, created, err := e.svc.Enqueue(e.ctx, e.caller, s)
		if err != nil || created || again.RunID != keyed.RunID {
			t.Fatalf("repeat: created=%v err=%v run %v, want %v", created, err, again.RunID, keyed.RunID)
		}
		other := s
		other.Kind = "other"
		if _, _, err := e.svc.Enqueue(e.ctx, e.caller, other); apperr.CodeOf(err) != api.CodeIdempotencyKeyReused {
			t.Fatalf("another request under the key: %v, want %s", err, api.CodeIdempotencyKeyReused)
		}
	})
}
