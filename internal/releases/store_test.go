package releases_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// rid makes a release id of the tenant's own: release ids are global, and the cases share
// one database.
func rid(tenant, name string) string { return tenant + "-" + name }

// world is one dialect's database with the run-lease core and the release store wired as
// the app wires them: the store's claim check is a hook of the core, and the core cancels
// runs for the store.
type world struct {
	db    *sqldb.DB
	clock *dbtest.Clock
	svc   *runs.Service
	store *releases.Store
	ctx   context.Context
}

func newWorld(t *testing.T, tgt dbtest.Target) *world {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	svc := runs.NewService(db, runs.DefaultConfig(), nil)
	store := releases.NewStore(db)
	svc.AddHooks(store.Hooks())
	return &world{db: db, clock: clock, svc: svc, store: store, ctx: context.Background()}
}

// tenant makes a fresh tenant with an active project p1.
func (w *world) tenant(t *testing.T) string {
	t.Helper()
	tenant := dbtest.NewTenant(t, w.db)
	if _, _, err := projects.NewStore(w.db).Put(w.ctx, tenant, "p1", projects.Change{}); err != nil {
		t.Fatalf("create project: %v", err)
	}
	return tenant
}

// body is a put of refs (any JSON text) with its correct manifest hash.
func body(t testing.TB, refs string, state api.ReleaseState) releases.Put {
	t.Helper()
	c, err := releases.Canonicalize([]byte(refs))
	if err != nil {
		t.Fatalf("canonicalize %s: %v", refs, err)
	}
	return releases.Put{ManifestHash: releases.ManifestHash(c), ContentRefs: []byte(refs), State: state}
}

const refsA = `[{"uri": "oci://agents/reviewer@sha256:aa", "size": 1200}, {"uri": "s3://prompts/v3.json"}]`

func (w *world) put(t *testing.T, tenant, rid, av string, p releases.Put) (releases.Release, bool, error) {
	t.Helper()
	return w.store.Put(w.ctx, w.svc, tenant, rid, av, p)
}

// create registers rid/av for tenant and fails the test otherwise.
func (w *world) create(t *testing.T, tenant, rid, av string, state api.ReleaseState, policy *api.InFlightPolicy) releases.Release {
	t.Helper()
	p := body(t, refsA, state)
	p.InFlightPolicy = policy
	r, created, err := w.put(t, tenant, rid, av, p)
	if err != nil || !created {
		t.Fatalf("create %s/%s: created=%v err=%v", rid, av, created, err)
	}
	return r
}

// move changes the state of r with its ETag and fails the test otherwise.
func (w *world) move(t *testing.T, tenant string, r releases.Release, to api.ReleaseState, policy *api.InFlightPolicy) releases.Release {
	t.Helper()
	p := body(t, refsA, to)
	p.InFlightPolicy, p.IfMatch = policy, &r.Version
	out, created, err := w.put(t, tenant, r.ReleaseID, r.AdapterVersion, p)
	if err != nil || created {
		t.Fatalf("move %s/%s %s -> %s: created=%v err=%v", r.ReleaseID, r.AdapterVersion, r.State, to, created, err)
	}
	return out
}

// running enqueues a run and claims it with rid/av, returning the claim.
func (w *world) running(t *testing.T, tenant, subject, rid, av string) runs.Claimed {
	t.Helper()
	c := runs.Caller{TenantID: tenant, KeyID: "k"}
	if _, _, err := w.svc.Enqueue(w.ctx, c, runs.Spec{ProjectID: "p1", Subject: subject, Kind: "review", AgentID: "a",
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3}); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	cl, err := w.svc.Claim(w.ctx, c, runs.ClaimRequest{HolderID: "h", ReleaseID: rid, AdapterVersion: av, ModelProfileID: "m"})
	if err != nil {
		t.Fatalf("claim with %s/%s: %v", rid, av, err)
	}
	return cl
}

func (w *world) cancelRequested(t *testing.T, tenant string, cl runs.Claimed) bool {
	t.Helper()
	hb, err := w.svc.Heartbeat(w.ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, 0)
	if err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	return hb.CancelRequested
}

func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		w := newWorld(t, tgt)
		ctx := w.ctx

		t.Run("CreateStoresCanonicalContentAndVerifiedAt", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			p := body(t, `[ {"z": 1.50, "a": "\u00e9"} ]`, api.ReleaseVerified)
			r, created, err := w.put(t, tenant, rid(tenant, "rel-1"), "1.0", p)
			if err != nil || !created {
				t.Fatalf("create: created=%v err=%v", created, err)
			}
			if string(r.ContentRefs) != `[{"a":"é","z":1.5}]` || r.ManifestHash != p.ManifestHash {
				t.Fatalf("content not stored canonical: %s %s", r.ContentRefs, r.ManifestHash)
			}
			if r.State != api.ReleaseVerified || r.InFlightPolicy != api.PolicyDrain || r.StoredPolicy != nil {
				t.Fatalf("state or default policy wrong: %+v", r)
			}
			if !r.VerifiedAt.Equal(epoch) || r.Version == 0 {
				t.Fatalf("VerifiedAt %v (want %v) or version %d wrong", r.VerifiedAt, epoch, r.Version)
			}
			got, err := w.store.Get(ctx, tenant, rid(tenant, "rel-1"), "1.0")
			if err != nil || got.Version != r.Version || string(got.ContentRefs) != string(r.ContentRefs) {
				t.Fatalf("read back: %+v %v", got, err)
			}
			a := w.create(t, tenant, rid(tenant, "rel-1"), "2.0", api.ReleaseActive, ptr(api.PolicyCancel))
			if a.State != api.ReleaseActive || a.InFlightPolicy != api.PolicyCancel {
				t.Fatalf("active create with cancel policy: %+v", a)
			}
		})

		t.Run("CreateOnlyVerifiedOrActive", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			for _, st := range []api.ReleaseState{api.ReleaseDraining, api.ReleaseRetired} {
				_, _, err := w.put(t, tenant, rel, "1", body(t, refsA, st))
				if !apperr.Is(err, api.CodeIllegalTransition) {
					t.Fatalf("create %s: got %v, want illegal_transition", st, err)
				}
			}
			if _, err := w.store.Get(ctx, tenant, rel, "1"); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("a refused create wrote a row: %v", err)
			}
		})

		t.Run("ManifestMustMatchCanonicalContent", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			p := body(t, refsA, api.ReleaseActive)
			// The hash of the text as sent, not of its canonical form.
			p.ManifestHash = releases.ManifestHash([]byte(refsA))
			if _, _, err := w.put(t, tenant, rel, "1", p); !apperr.Is(err, api.CodeManifestMismatch) {
				t.Fatalf("hash of the raw text: got %v, want manifest_mismatch", err)
			}
			p = body(t, refsA, api.ReleaseActive)
			p.ManifestHash = strings.ToUpper(p.ManifestHash)
			if _, _, err := w.put(t, tenant, rel, "1", p); !apperr.Is(err, api.CodeManifestMismatch) {
				t.Fatalf("uppercase hash: got %v, want manifest_mismatch", err)
			}
			if _, err := w.store.Get(ctx, tenant, rel, "1"); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("a mismatched manifest wrote a row: %v", err)
			}
		})

		t.Run("ContentRefsMustBeAnIJSONArray", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			for _, refs := range []string{`{"a":1}`, `null`, `"x"`, `[1,`, `[{"a":1,"a":2}]`, `["\ud800"]`, `[1e999]`, ``} {
				p := releases.Put{ManifestHash: releases.ManifestHash([]byte(refs)), ContentRefs: []byte(refs), State: api.ReleaseActive}
				_, _, err := w.put(t, tenant, rel, "1", p)
				e, ok := apperr.As(err)
				if !ok || e.Code != api.CodeInvalidRequest || len(e.Fields) != 1 || e.Fields[0].Field != "contentRefs" {
					t.Fatalf("contentRefs %q: got %v, want invalid_request on contentRefs", refs, err)
				}
			}
		})

		t.Run("UnchangedRepeatIsIdempotent", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			r := w.create(t, tenant, rel, "1", api.ReleaseActive, nil)
			// Same content in another formatting, and drain spelled out where none is stored.
			p := body(t, `[{"size":1.2e3,"uri":"oci://agents/reviewer@sha256:aa"},{"uri":"s3://prompts/v3.json"}]`, api.ReleaseActive)
			p.InFlightPolicy = ptr(api.PolicyDrain)
			again, created, err := w.put(t, tenant, rel, "1", p)
			if err != nil || created {
				t.Fatalf("repeat: created=%v err=%v", created, err)
			}
			if again.Version != r.Version || again.StoredPolicy != nil {
				t.Fatalf("an unchanged repeat wrote: before %+v after %+v", r, again)
			}
			// A current If-Match on an unchanged repeat is fine too; a stale one is not.
			p.IfMatch = &r.Version
			if _, _, err := w.put(t, tenant, rel, "1", p); err != nil {
				t.Fatalf("repeat with current If-Match: %v", err)
			}
			stale := r.Version - 1
			p.IfMatch = &stale
			if _, _, err := w.put(t, tenant, rel, "1", p); !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("repeat with stale If-Match: got %v, want precondition_failed", err)
			}
		})

		t.Run("ContentIsImmutable", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			r := w.create(t, tenant, rel, "1", api.ReleaseVerified, nil)
			for _, st := range []api.ReleaseState{api.ReleaseVerified, api.ReleaseActive} {
				p := body(t, `[{"uri":"oci://agents/reviewer@sha256:bb"}]`, st)
				p.IfMatch = &r.Version
				if _, _, err := w.put(t, tenant, rel, "1", p); !apperr.Is(err, api.CodeReleaseImmutable) {
					t.Fatalf("other content (state %s): got %v, want release_immutable", st, err)
				}
			}
			got, err := w.store.Get(ctx, tenant, rel, "1")
			if err != nil || got.Version != r.Version || got.ManifestHash != r.ManifestHash || got.State != api.ReleaseVerified {
				t.Fatalf("refused change wrote: %+v %v", got, err)
			}
		})

		t.Run("ChangeNeedsCurrentIfMatch", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			r := w.create(t, tenant, rel, "1", api.ReleaseVerified, nil)
			p := body(t, refsA, api.ReleaseActive)
			if _, _, err := w.put(t, tenant, rel, "1", p); !apperr.Is(err, api.CodePreconditionRequired) {
				t.Fatalf("state change without If-Match: got %v, want precondition_required", err)
			}
			pp := body(t, refsA, api.ReleaseVerified)
			pp.InFlightPolicy = ptr(api.PolicyCancel)
			if _, _, err := w.put(t, tenant, rel, "1", pp); !apperr.Is(err, api.CodePreconditionRequired) {
				t.Fatalf("policy change without If-Match: got %v, want precondition_required", err)
			}
			stale := r.Version - 1
			p.IfMatch = &stale
			if _, _, err := w.put(t, tenant, rel, "1", p); !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("stale If-Match: got %v, want precondition_failed", err)
			}
			up := w.move(t, tenant, r, api.ReleaseActive, ptr(api.PolicyCancel))
			if up.State != api.ReleaseActive || up.InFlightPolicy != api.PolicyCancel || up.Version <= r.Version {
				t.Fatalf("change not applied or version not grown: before %+v after %+v", r, up)
			}
			if !up.VerifiedAt.Equal(r.VerifiedAt) {
				t.Fatalf("a state change moved VerifiedAt: %v -> %v", r.VerifiedAt, up.VerifiedAt)
			}
			p = body(t, refsA, api.ReleaseDraining)
			p.IfMatch = &r.Version // the old ETag
			if _, _, err := w.put(t, tenant, rel, "1", p); !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("reused ETag: got %v, want precondition_failed", err)
			}
		})

		t.Run("TransitionsFollowTheTable", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			// How to reach each state from a fresh registration.
			paths := map[api.ReleaseState][]api.ReleaseState{
				api.ReleaseVerified: {api.ReleaseVerified},
				api.ReleaseActive:   {api.ReleaseActive},
				api.ReleaseDraining: {api.ReleaseActive, api.ReleaseDraining},
				api.ReleaseRetired:  {api.ReleaseVerified, api.ReleaseRetired},
			}
			legal := map[[2]api.ReleaseState]bool{
				{api.ReleaseVerified, api.ReleaseActive}: true, {api.ReleaseVerified, api.ReleaseRetired}: true,
				{api.ReleaseActive, api.ReleaseDraining}: true, {api.ReleaseActive, api.ReleaseRetired}: true,
				{api.ReleaseDraining, api.ReleaseActive}: true, {api.ReleaseDraining, api.ReleaseRetired}: true,
			}
			all := []api.ReleaseState{api.ReleaseVerified, api.ReleaseActive, api.ReleaseDraining, api.ReleaseRetired}
			for _, from := range all {
				for _, to := range all {
					if from == to {
						continue
					}
					id := rid(tenant, fmt.Sprintf("rel-%s-%s", from, to))
					path := paths[from]
					r := w.create(t, tenant, id, "1", path[0], nil)
					for _, st := range path[1:] {
						r = w.move(t, tenant, r, st, nil)
					}
					p := body(t, refsA, to)
					p.IfMatch = &r.Version
					got, _, err := w.put(t, tenant, id, "1", p)
					if legal[[2]api.ReleaseState{from, to}] != releases.CanMove(from, to) {
						t.Fatalf("CanMove(%s, %s) disagrees with DESIGN.md", from, to)
					}
					if legal[[2]api.ReleaseState{from, to}] {
						if err != nil || got.State != to {
							t.Fatalf("%s -> %s: got %+v %v, want the move", from, to, got, err)
						}
						continue
					}
					if !apperr.Is(err, api.CodeIllegalTransition) {
						t.Fatalf("%s -> %s: got %v, want illegal_transition", from, to, err)
					}
					if cur, _ := w.store.Get(ctx, tenant, id, "1"); cur.State != from || cur.Version != r.Version {
						t.Fatalf("%s -> %s refused but the row changed: %+v", from, to, cur)
					}
				}
			}
		})

		t.Run("OtherTenantsPairConflictsWithoutLeaking", func(t *testing.T) {
			t.Parallel()
			a, b := w.tenant(t), w.tenant(t)
			grel := rid(a, "global-rel")
			ra := w.create(t, a, grel, "1", api.ReleaseActive, ptr(api.PolicyCancel))
			w.create(t, a, grel, "2", api.ReleaseVerified, nil)
			var details []string
			for _, av := range []string{"1", "2"} {
				_, _, err := w.put(t, b, grel, av, body(t, `[{"uri":"other"}]`, api.ReleaseActive))
				e, ok := apperr.As(err)
				if !ok || e.Code != api.CodeReleaseConflict {
					t.Fatalf("other tenant's pair %s: got %v, want release_conflict", av, err)
				}
				for _, leak := range []string{a, ra.ManifestHash, "active", "verified", "cancel", grel} {
					if strings.Contains(e.Detail, leak) {
						t.Fatalf("release_conflict detail %q leaks %q", e.Detail, leak)
					}
				}
				details = append(details, e.Detail)
			}
			if details[0] != details[1] {
				t.Fatalf("the detail differs with the other tenant's row: %q vs %q", details[0], details[1])
			}
			// Reads and updates from b answer as for a missing release.
			if _, err := w.store.Get(ctx, b, grel, "1"); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("other tenant read: got %v, want not_found", err)
			}
			p := body(t, refsA, api.ReleaseRetired)
			p.IfMatch = &ra.Version
			if _, _, err := w.put(t, b, grel, "1", p); !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("other tenant update with the owner's ETag: got %v, want precondition_failed (as missing)", err)
			}
			list, err := w.store.List(ctx, b, releases.ListFilter{Limit: 10})
			if err != nil || len(list) != 0 {
				t.Fatalf("other tenant list: %+v %v", list, err)
			}
			got, err := w.store.Get(ctx, a, grel, "1")
			if err != nil || got.Version != ra.Version || got.State != api.ReleaseActive {
				t.Fatalf("owner's release changed: %+v %v", got, err)
			}
		})

		t.Run("IdsAreCaseSensitive", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			for _, id := range []string{"rel", "REL", "Rel"} {
				w.create(t, tenant, rid(tenant, id), "v1", api.ReleaseActive, nil)
			}
			w.create(t, tenant, rel, "V1", api.ReleaseActive, nil)
			list, err := w.store.List(ctx, tenant, releases.ListFilter{Limit: 10})
			if err != nil || len(list) != 4 {
				t.Fatalf("want 4 distinct releases, got %d (%v)", len(list), err)
			}
		})

		t.Run("ListPagesInKeyOrderAndFilters", func(t *testing.T) {
			t.Parallel()
			tenant, other := w.tenant(t), w.tenant(t)
			w.create(t, other, rid(other, "b-other"), "1", api.ReleaseActive, nil)
			for _, k := range [][2]string{{"b", "2"}, {"a", "1"}, {"b", "10"}, {"c", "1"}, {"b", "1"}} {
				w.create(t, tenant, rid(tenant, k[0]), k[1], api.ReleaseVerified, nil)
			}
			c1, _ := w.store.Get(ctx, tenant, rid(tenant, "c"), "1")
			w.move(t, tenant, c1, api.ReleaseActive, nil)
			var keys []string
			f := releases.ListFilter{Limit: 2}
			for page := 0; page < 5; page++ {
				rs, err := w.store.List(ctx, tenant, f)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					keys = append(keys, strings.TrimPrefix(r.ReleaseID, tenant+"-")+"/"+r.AdapterVersion)
				}
				if len(rs) < 2 {
					break
				}
				f.AfterReleaseID, f.AfterAdapterVersion = rs[len(rs)-1].ReleaseID, rs[len(rs)-1].AdapterVersion
			}
			if got := strings.Join(keys, " "); got != "a/1 b/1 b/10 b/2 c/1" {
				t.Fatalf("pages: got %s", got)
			}
			active := api.ReleaseActive
			rs, err := w.store.List(ctx, tenant, releases.ListFilter{State: &active, Limit: 10})
			if err != nil || len(rs) != 1 || rs[0].ReleaseID != rid(tenant, "c") {
				t.Fatalf("state filter: %+v %v", rs, err)
			}
		})

		t.Run("ClaimNeedsAnActiveReleaseOfTheTenant", func(t *testing.T) {
			t.Parallel()
			tenant, other := w.tenant(t), w.tenant(t)
			rel := rid(tenant, "rel")
			w.create(t, other, rid(other, "others"), "1", api.ReleaseActive, nil)
			ver := w.create(t, tenant, rel, "1", api.ReleaseVerified, nil)
			c := runs.Caller{TenantID: tenant, KeyID: "k"}
			run, _, err := w.svc.Enqueue(ctx, c, runs.Spec{ProjectID: "p1", Subject: "s", Kind: "k", AgentID: "a",
				StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3})
			if err != nil {
				t.Fatal(err)
			}
			claim := func(rid, av string) error {
				_, err := w.svc.Claim(ctx, c, runs.ClaimRequest{HolderID: "h", ReleaseID: rid, AdapterVersion: av, ModelProfileID: "m"})
				return err
			}
			refused := func(rid, av, why string) {
				t.Helper()
				if err := claim(rid, av); !apperr.Is(err, api.CodeReleaseNotActive) {
					t.Fatalf("claim with %s release: got %v, want release_not_active", why, err)
				}
				if r, _ := w.svc.Get(ctx, tenant, run.RunID); r.State != api.RunQueued || r.Epoch != 0 {
					t.Fatalf("a refused claim leased the run: %+v", r)
				}
			}
			refused("missing", "1", "a missing")
			refused(rid(other, "others"), "1", "another tenant's active")
			refused(rel, "2", "an unknown adapter version of a known")
			refused(rel, "1", "a verified")
			act := w.move(t, tenant, ver, api.ReleaseActive, nil)
			dr := w.move(t, tenant, act, api.ReleaseDraining, nil)
			refused(rel, "1", "a draining")
			act = w.move(t, tenant, dr, api.ReleaseActive, nil)
			if err := claim(rel, "1"); err != nil {
				t.Fatalf("claim with an active release: %v", err)
			}
			w.move(t, tenant, act, api.ReleaseRetired, nil)
			if _, _, err := w.svc.Enqueue(ctx, c, runs.Spec{ProjectID: "p1", Subject: "s2", Kind: "k", AgentID: "a",
				StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 3, MaxCorrections: 3}); err != nil {
				t.Fatal(err)
			}
			if err := claim(rel, "1"); !apperr.Is(err, api.CodeReleaseNotActive) {
				t.Fatalf("claim with a retired release: got %v, want release_not_active", err)
			}
		})

		t.Run("DrainLetsRunningAttemptsFinish", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			r := w.create(t, tenant, rel, "1", api.ReleaseActive, nil)
			cl := w.running(t, tenant, "s1", rel, "1")
			r = w.move(t, tenant, r, api.ReleaseDraining, ptr(api.PolicyDrain))
			if w.cancelRequested(t, tenant, cl) {
				t.Fatal("drain asked a running attempt's run to cancel")
			}
			w.move(t, tenant, r, api.ReleaseRetired, nil)
			if w.cancelRequested(t, tenant, cl) {
				t.Fatal("retiring under drain asked a running attempt's run to cancel")
			}
			if _, err := w.svc.Complete(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
				runs.Completion{State: api.AttemptSucceeded}); err != nil {
				t.Fatalf("the drained attempt could not finish: %v", err)
			}
		})

		t.Run("CancelPolicyCancelsRunningAttemptsRuns", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			r := w.create(t, tenant, rel, "1", api.ReleaseActive, ptr(api.PolicyCancel))
			other := w.create(t, tenant, rel, "2", api.ReleaseActive, ptr(api.PolicyCancel))
			cl1 := w.running(t, tenant, "s1", rel, "1")
			cl2 := w.running(t, tenant, "s2", rel, "1")
			keep := w.running(t, tenant, "s3", rel, "2")
			if w.cancelRequested(t, tenant, cl1) {
				t.Fatal("cancel requested before the release moved")
			}
			w.move(t, tenant, r, api.ReleaseDraining, nil)
			if !w.cancelRequested(t, tenant, cl1) || !w.cancelRequested(t, tenant, cl2) {
				t.Fatal("draining under cancel did not request cancellation of the running attempts' runs")
			}
			if w.cancelRequested(t, tenant, keep) {
				t.Fatal("draining one adapter version cancelled a run of another")
			}
			w.move(t, tenant, other, api.ReleaseRetired, nil)
			if !w.cancelRequested(t, tenant, keep) {
				t.Fatal("retiring under cancel did not request cancellation")
			}
		})

		t.Run("PolicyChangeWhileDrainingApplies", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			r := w.create(t, tenant, rel, "1", api.ReleaseActive, nil)
			cl := w.running(t, tenant, "s1", rel, "1")
			r = w.move(t, tenant, r, api.ReleaseDraining, nil)
			if w.cancelRequested(t, tenant, cl) {
				t.Fatal("drain (the default) cancelled")
			}
			w.move(t, tenant, r, api.ReleaseDraining, ptr(api.PolicyCancel))
			if !w.cancelRequested(t, tenant, cl) {
				t.Fatal("switching a draining release to cancel did not cancel its running attempts' runs")
			}
		})

		t.Run("RetiredIsFinalButItsPolicyMayTurnToCancel", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			r := w.create(t, tenant, rel, "1", api.ReleaseActive, nil)
			cl := w.running(t, tenant, "s1", rel, "1")
			r = w.move(t, tenant, r, api.ReleaseRetired, nil)
			for _, st := range []api.ReleaseState{api.ReleaseVerified, api.ReleaseActive, api.ReleaseDraining} {
				p := body(t, refsA, st)
				p.IfMatch = &r.Version
				if _, _, err := w.put(t, tenant, rel, "1", p); !apperr.Is(err, api.CodeIllegalTransition) {
					t.Fatalf("retired -> %s: got %v, want illegal_transition", st, err)
				}
			}
			if w.cancelRequested(t, tenant, cl) {
				t.Fatal("retiring under drain cancelled")
			}
			w.move(t, tenant, r, api.ReleaseRetired, ptr(api.PolicyCancel))
			if !w.cancelRequested(t, tenant, cl) {
				t.Fatal("turning a retired release's policy to cancel did not cancel its running attempts' runs")
			}
		})

		t.Run("CancelSkipsRunsThatMovedOn", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			oldID, newID := rid(tenant, "old"), rid(tenant, "new")
			old := w.create(t, tenant, oldID, "1", api.ReleaseActive, ptr(api.PolicyCancel))
			w.create(t, tenant, newID, "1", api.ReleaseActive, nil)
			c := runs.Caller{TenantID: tenant, KeyID: "k"}
			cl := w.running(t, tenant, "s1", oldID, "1")
			// The holder gives the run back; the next claim runs it on the new release.
			if _, err := w.svc.Release(ctx, tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
				runs.Release{RetryAfter: ptr(time.Duration(0))}); err != nil {
				t.Fatal(err)
			}
			cl2, err := w.svc.Claim(ctx, c, runs.ClaimRequest{HolderID: "h", ReleaseID: newID, AdapterVersion: "1", ModelProfileID: "m"})
			if err != nil || cl2.Run.RunID != cl.Run.RunID {
				t.Fatalf("re-claim: %+v %v", cl2, err)
			}
			// A finished attempt on the old release too.
			done := w.running(t, tenant, "s2", oldID, "1")
			if _, err := w.svc.Complete(ctx, tenant, done.Attempt.AttemptID, done.Lease.FencingToken,
				runs.Completion{State: api.AttemptSucceeded}); err != nil {
				t.Fatal(err)
			}
			w.move(t, tenant, old, api.ReleaseRetired, nil)
			if w.cancelRequested(t, tenant, cl2) {
				t.Fatal("retiring the old release cancelled a run now running on the new one")
			}
			if r, _ := w.svc.Get(ctx, tenant, done.Run.RunID); r.CancelRequestedAt != nil || r.State != api.RunEnded {
				t.Fatalf("an ended run was touched: %+v", r)
			}
		})

		t.Run("ClaimsRacingACancelDrainAllEndCancelledOrRefused", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			rel := rid(tenant, "rel")
			r := w.create(t, tenant, rel, "1", api.ReleaseActive, ptr(api.PolicyCancel))
			w.running(t, tenant, "first", rel, "1")
			c := runs.Caller{TenantID: tenant, KeyID: "k"}
			const claimers = 4
			done := make(chan error, claimers)
			for i := 0; i < claimers; i++ {
				go func(i int) {
					for j := 0; j < 5; j++ {
						if _, _, err := w.svc.Enqueue(ctx, c, runs.Spec{ProjectID: "p1", Subject: fmt.Sprintf("s-%d-%d", i, j),
							Kind: "k", AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch,
							MaxAttempts: 3, MaxCorrections: 3}); err != nil {
							done <- err
							return
						}
						_, err := w.svc.Claim(ctx, c, runs.ClaimRequest{HolderID: "h", ReleaseID: rel, AdapterVersion: "1", ModelProfileID: "m"})
						if err != nil && !apperr.Is(err, api.CodeReleaseNotActive) {
							done <- err
							return
						}
					}
					done <- nil
				}(i)
			}
			w.move(t, tenant, r, api.ReleaseDraining, nil)
			for i := 0; i < claimers; i++ {
				if err := <-done; err != nil {
					t.Fatalf("claimer: %v", err)
				}
			}
			// Every attempt still running on the release has a cancel pending on its run: a
			// claim either committed before the drain (and was cancelled by it) or was refused.
			var running, uncancelled int
			q := fmt.Sprintf(`SELECT COUNT(*) AS Running, COALESCE(SUM(CASE WHEN r.CancelRequestedAt IS NULL THEN 1 ELSE 0 END), 0) AS Uncancelled
FROM ExecutionAttempts a JOIN Runs r ON r.RunId = a.RunId
WHERE a.TenantId = '%s' AND a.ReleaseId = '%s' AND a.State = 0`, tenant, rel)
			if err := w.db.Read(ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
				var row struct {
					Running     int `db:"Running"`
					Uncancelled int `db:"Uncancelled"`
				}
				err := tx.GetContext(ctx, &row, q)
				running, uncancelled = row.Running, row.Uncancelled
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if running == 0 || uncancelled != 0 {
				t.Fatalf("%d attempts running on the drained release, %d of them without a cancel request", running, uncancelled)
			}
		})

		t.Run("ConcurrentCreatesOfOnePairMakeOneRow", func(t *testing.T) {
			t.Parallel()
			tenant := w.tenant(t)
			const n = 8
			errs := make(chan error, n)
			createdCount := make(chan bool, n)
			for i := 0; i < n; i++ {
				go func() {
					_, created, err := w.store.Put(ctx, w.svc, tenant, rid(tenant, "race"), "1", body(t, refsA, api.ReleaseActive))
					errs <- err
					createdCount <- created
				}()
			}
			made := 0
			for i := 0; i < n; i++ {
				if err := <-errs; err != nil {
					t.Errorf("concurrent create: %v", err)
				}
				if <-createdCount {
					made++
				}
			}
			if made != 1 {
				t.Fatalf("%d creates reported created, want 1", made)
			}
		})
	})
}
