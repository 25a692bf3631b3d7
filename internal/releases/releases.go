// Package releases keeps LoadedReleases (DESIGN.md section 5): the agent releases and
// adapter versions a tenant's runtimes have verified, their state (verified, active,
// draining, retired), and the in-flight policy a drain or retirement applies to the
// attempts still running on them. A claim may name only an active release of the caller's
// tenant (Hooks). A release's content is immutable and its manifest hash is the SHA-256 of
// the RFC 8785 canonical form of its contentRefs (manifest.go).
package releases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/jcs"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/validate"
)

// transitions lists the states each state may move to (DESIGN.md section 5). Retired is
// final.
var transitions = map[api.ReleaseState][]api.ReleaseState{
	api.ReleaseVerified: {api.ReleaseActive, api.ReleaseRetired},
	api.ReleaseActive:   {api.ReleaseDraining, api.ReleaseRetired},
	api.ReleaseDraining: {api.ReleaseActive, api.ReleaseRetired},
}

// CanMove reports whether a release may move from one state to another (a state to itself
// is no move and is not listed).
func CanMove(from, to api.ReleaseState) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Release is one (release, adapter version) a tenant registered.
type Release struct {
	ReleaseID      string `db:"ReleaseId"`
	AdapterVersion string `db:"AdapterVersion"`
	TenantID       string `db:"TenantId"`
	ManifestHash   string `db:"ManifestHash"`
	// ContentRefs is the stored content: the canonical form of the contentRefs registered.
	ContentRefs json.RawMessage  `db:"-"`
	State       api.ReleaseState `db:"State"`
	// InFlightPolicy is the policy in force: the stored one, or drain when none is stored.
	InFlightPolicy api.InFlightPolicy `db:"-"`
	VerifiedAt     time.Time          `db:"VerifiedAt"`
	Version        sqldb.RowVersion   `db:"Version"`

	ContentRefsJSON string              `db:"ContentRefsJson"`
	StoredPolicy    *api.InFlightPolicy `db:"InFlightPolicy"`
}

// Item is the release adapter as a listing shows it: its wire form and its ETag.
func (r Release) Item() api.ReleaseItem {
	return api.ReleaseItem{Release: r.Wire(), ETag: r.Version.ETag()}
}

// Wire returns the release as the API sends it.
func (r Release) Wire() api.Release {
	w := api.Release{ReleaseID: r.ReleaseID, AdapterVersion: r.AdapterVersion, ManifestHash: r.ManifestHash,
		State: r.State, InFlightPolicy: r.InFlightPolicy, VerifiedAt: api.NewTime(r.VerifiedAt)}
	// The stored content is the canonical form of a JSON array (checked when it was put).
	_ = json.Unmarshal(r.ContentRefs, &w.ContentRefs)
	if w.ContentRefs == nil {
		w.ContentRefs = []json.RawMessage{}
	}
	return w
}

func (r *Release) fill() {
	r.ContentRefs = json.RawMessage(r.ContentRefsJSON)
	r.InFlightPolicy = effectivePolicy(r.StoredPolicy)
}

// nullPolicy is a stored policy as a statement argument: NULL when none is stored.
func nullPolicy(p *api.InFlightPolicy) any {
	if p == nil {
		return nil
	}
	return string(*p)
}

// effectivePolicy is the policy in force: a NULL policy is drain.
func effectivePolicy(p *api.InFlightPolicy) api.InFlightPolicy {
	if p == nil || *p == "" {
		return api.PolicyDrain
	}
	return *p
}

// Canceller asks the holder of a leased run to stop, inside the caller's transaction: if
// the run is leased and has no cancel pending, it records one (the holder sees
// cancelRequested on its next heartbeat); otherwise it does nothing. *runs.Service
// implements it (RequestCancelTx).
type Canceller interface {
	RequestCancelTx(ctx context.Context, tx *sqldb.Tx, tenantID string, runID uuid.UUID) error
}

var _ Canceller = (*runs.Service)(nil)

// Put is a registration or a change of one release and adapter version.
type Put struct {
	// ManifestHash must be the lowercase hex SHA-256 of the canonical form of ContentRefs.
	ManifestHash string
	// ContentRefs is the JSON array of the release's content, in any formatting.
	ContentRefs []byte
	State       api.ReleaseState
	// InFlightPolicy is what draining or retiring the release does to the attempts still running
	// on it, drain or cancel; nil keeps the stored one (on create: none, which means drain).
	InFlightPolicy *api.InFlightPolicy
	// IfMatch, when set, is the condition (If-Match) the current version must meet.
	IfMatch sqldb.VersionMatcher
}

// Store keeps releases.
type Store struct {
	db *sqldb.DB
	q  *queries
}

// NewStore returns the release store of db.
func NewStore(db *sqldb.DB) *Store { return &Store{db: db, q: queriesFor(db.Dialect)} }

// PutIfMatch is when Put needs an If-Match condition: to change an existing row's state or
// policy, not to register it nor to repeat it unchanged. The route's Op declares it and
// Put applies it (ifmatch.Update), so the two cannot disagree.
const PutIfMatch = ifmatch.ToUpdate

// Put registers the release and adapter version for the tenant, or changes its state or
// in-flight policy, and reports whether it created the row. Draining or retiring a release
// (or setting the cancel policy on one that is) under the cancel policy asks c, in the
// same transaction, to cancel the run of every attempt still running on it; under drain
// those attempts run on.
//
// Errors, in the order they are checked:
//   - Invalid: ContentRefs is not a JSON array with a canonical form (RFC 8785, I-JSON);
//   - ManifestMismatch: ManifestHash is not the hash of ContentRefs' canonical form;
//   - PreconditionFailed: IfMatch is set and is not the row's version (or there is no row
//     of the tenant: another tenant's row answers as a missing one);
//   - create: IllegalTransition unless State is verified or active; ReleaseConflict when
//     another tenant owns the release id (release ids are one global namespace, owned by
//     the tenant that registered the first version under one), or holds the pair (a
//     generic detail either way: it says nothing of the other tenant's rows);
//   - ReleaseImmutable: the row holds a different manifest hash or content;
//   - nothing to change (same state, same policy in force): the row as it is, no write;
//   - PreconditionRequired: a change without IfMatch (PutIfMatch);
//   - IllegalTransition: the state may not move so (retired is final).
func (s *Store) Put(ctx context.Context, c Canceller, tenantID, releaseID, adapterVersion string, p Put) (Release, bool, error) {
	canonical, err := Canonicalize(p.ContentRefs)
	if err != nil || len(canonical) == 0 || canonical[0] != '[' {
		reason := "must be a JSON array"
		var ce *jcs.CanonicalError
		if errors.As(err, &ce) {
			reason = "must be a JSON array of I-JSON (RFC 7493) content: " + ce.Reason
		}
		return Release{}, false, apperr.FieldsInvalid(api.FieldError{Field: "contentRefs", Reason: reason})
	}
	if ManifestHash(canonical) != p.ManifestHash {
		return Release{}, false, apperr.New(api.CodeManifestMismatch,
			"manifestHash is not the lowercase hex SHA-256 of the RFC 8785 canonical form of contentRefs")
	}
	if p.InFlightPolicy != nil && !p.InFlightPolicy.Valid() {
		return Release{}, false, apperr.FieldsInvalid(validate.NotOneOf("inFlightPolicy", *p.InFlightPolicy))
	}
	if !p.State.Valid() {
		return Release{}, false, apperr.FieldsInvalid(validate.NotOneOf("state", p.State))
	}
	var (
		out     Release
		created bool
	)
	err = s.db.Write(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		created = false
		cur, err := s.get(ctx, tx, s.q.lock, tenantID, releaseID, adapterVersion)
		if apperr.Is(err, api.CodeNotFound) {
			cur, created, err = s.create(ctx, tx, tenantID, releaseID, adapterVersion, p, string(canonical))
		}
		if err != nil || created {
			out = cur
			return err
		}
		out, err = s.change(ctx, tx, c, cur, p, string(canonical))
		return err
	})
	if err != nil {
		return Release{}, false, fmt.Errorf("put release: %w", err)
	}
	return out, created, nil
}

// errReleaseConflict is the answer to a tenant that registers under another tenant's
// release id: the same generic detail in every case, saying nothing of the other tenant's
// rows.
func errReleaseConflict() error {
	return apperr.New(api.CodeReleaseConflict, "this release id cannot be registered by this tenant: "+
		"release ids are one global namespace, choose another (a tenant prefix or a content hash in the id avoids this)")
}

// create inserts the row, once the tenant owns the release id. When the pair exists
// already it returns the row of the tenant that a concurrent create just committed
// (created false), or ReleaseConflict when the row is another tenant's.
func (s *Store) create(ctx context.Context, tx *sqldb.Tx, tenantID, releaseID, adapterVersion string, p Put, canonical string) (Release, bool, error) {
	if err := ifmatch.Create(p.IfMatch, releaseName(releaseID, adapterVersion)); err != nil {
		return Release{}, false, err
	}
	if p.State != api.ReleaseVerified && p.State != api.ReleaseActive {
		return Release{}, false, apperr.New(api.CodeIllegalTransition,
			"a release is registered verified or active, not %s", p.State)
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return Release{}, false, err
	}
	if err := s.own(ctx, tx, tenantID, releaseID, now); err != nil {
		return Release{}, false, err
	}
	_, err = tx.ExecContext(ctx, s.q.insert, releaseID, adapterVersion, tenantID, p.ManifestHash, tx.Dialect.JSON(canonical),
		int(p.State), tx.Dialect.Time(now), nullPolicy(p.InFlightPolicy))
	if sqldb.IsConflict(err, conflictMarkers...) {
		// This tenant's concurrent create committed the pair first (visible now: the insert
		// waited for that commit), or, from before release ids had owners, another tenant
		// holds it (invisible here).
		cur, gerr := s.get(ctx, tx, s.q.lock, tenantID, releaseID, adapterVersion)
		if apperr.Is(gerr, api.CodeNotFound) {
			return Release{}, false, errReleaseConflict()
		}
		return cur, false, gerr
	}
	if err != nil {
		return Release{}, false, fmt.Errorf("insert release: %w", err)
	}
	r, err := s.get(ctx, tx, s.q.get, tenantID, releaseID, adapterVersion)
	return r, err == nil, err
}

// own makes the tenant the owner of releaseID, or finds it is already: ReleaseConflict
// when another tenant owns it. The ownership row stays locked until the transaction ends
// (on SQL Server a key-range lock even while it is missing), so two creates under one new
// id serialise: the second sees the first's row once it commits, and answers
// ReleaseConflict when that is another tenant's. The check reads only whether the caller
// is the owner, never who is.
func (s *Store) own(ctx context.Context, tx *sqldb.Tx, tenantID, releaseID string, now time.Time) error {
	mine, err := s.ownerIs(ctx, tx, tenantID, releaseID)
	if !errors.Is(err, sqldb.ErrNotFound) {
		if err == nil && !mine {
			return errReleaseConflict()
		}
		return err
	}
	_, err = tx.ExecContext(ctx, s.q.claimOwner, releaseID, tenantID, tx.Dialect.Time(now))
	if sqldb.IsConflict(err, ownerMarkers...) {
		// A concurrent create claimed the id between the read and the insert (the lock
		// rules this out on SQL Server; fault injection makes SQLite take it): answer as
		// for that owner.
		if mine, err = s.ownerIs(ctx, tx, tenantID, releaseID); err == nil && !mine {
			return errReleaseConflict()
		}
	}
	if err != nil {
		return fmt.Errorf("claim release id: %w", err)
	}
	return nil
}

// ownerIs reports whether tenantID owns releaseID; sqldb.ErrNotFound when no tenant does.
func (s *Store) ownerIs(ctx context.Context, tx *sqldb.Tx, tenantID, releaseID string) (bool, error) {
	var mine bool
	err := tx.GetContext(ctx, &mine, s.q.ownerIs, releaseID, tenantID)
	if err != nil && !errors.Is(err, sqldb.ErrNotFound) {
		return false, fmt.Errorf("read release id owner: %w", err)
	}
	return mine, err
}

// change applies p to the tenant's existing row cur.
func (s *Store) change(ctx context.Context, tx *sqldb.Tx, c Canceller, cur Release, p Put, canonical string) (Release, error) {
	what := releaseName(cur.ReleaseID, cur.AdapterVersion)
	if err := ifmatch.Check(p.IfMatch, cur.Version, what); err != nil {
		return Release{}, err
	}
	if cur.ManifestHash != p.ManifestHash || cur.ContentRefsJSON != canonical {
		return Release{}, apperr.New(api.CodeReleaseImmutable,
			"release %q adapter %q is registered with other content: a release's content never changes", cur.ReleaseID, cur.AdapterVersion)
	}
	policy := cur.StoredPolicy
	if p.InFlightPolicy != nil {
		policy = p.InFlightPolicy
	}
	stateChanged := p.State != cur.State
	policyChanged := effectivePolicy(policy) != effectivePolicy(cur.StoredPolicy)
	if !stateChanged && !policyChanged {
		return cur, nil
	}
	if err := ifmatch.Update(PutIfMatch, p.IfMatch, cur.Version, what); err != nil {
		return Release{}, err
	}
	if stateChanged && !CanMove(cur.State, p.State) {
		return Release{}, apperr.New(api.CodeIllegalTransition, "a %s release cannot become %s", cur.State, p.State)
	}
	res, err := tx.ExecContext(ctx, s.q.update, cur.TenantID, cur.ReleaseID, cur.AdapterVersion, int(p.State),
		nullPolicy(policy), tx.Dialect.Version(cur.Version))
	if err != nil {
		return Release{}, fmt.Errorf("update release: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return Release{}, ifmatch.Stale(what)
	}
	if (p.State == api.ReleaseDraining || p.State == api.ReleaseRetired) && effectivePolicy(policy) == api.PolicyCancel {
		if err := s.cancelRunning(ctx, tx, c, cur); err != nil {
			return Release{}, err
		}
	}
	return s.get(ctx, tx, s.q.get, cur.TenantID, cur.ReleaseID, cur.AdapterVersion)
}

// releaseName names a release adapter in a problem's detail.
func releaseName(releaseID, adapterVersion string) string {
	return fmt.Sprintf("release %q adapter %q", releaseID, adapterVersion)
}

// cancelRunning asks for the cancellation of the run of every attempt of the tenant still
// running on the release. Each attempt is locked before its run (DESIGN.md section 4) and
// skipped if it ended meanwhile, so a run that has moved on to another attempt is left
// alone.
func (s *Store) cancelRunning(ctx context.Context, tx *sqldb.Tx, c Canceller, r Release) error {
	var ids []uuid.UUID
	if err := tx.SelectContext(ctx, &ids, s.q.runningAttempts, r.TenantID, r.ReleaseID, r.AdapterVersion); err != nil {
		return fmt.Errorf("find running attempts: %w", err)
	}
	if len(ids) > 0 && c == nil {
		return errors.New("cancel running attempts: no canceller configured")
	}
	for _, id := range ids {
		a, err := attempts.Lock(ctx, tx, r.TenantID, id)
		if apperr.Is(err, api.CodeNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if a.State != api.AttemptRunning {
			continue
		}
		if err := c.RequestCancelTx(ctx, tx, r.TenantID, a.RunID); err != nil && !apperr.Is(err, api.CodeNotFound) {
			return fmt.Errorf("cancel run %s: %w", a.RunID, err)
		}
	}
	return nil
}

// Get reads a release of the tenant (NotFound if missing or another tenant's).
func (s *Store) Get(ctx context.Context, tenantID, releaseID, adapterVersion string) (Release, error) {
	var r Release
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var err error
		r, err = s.get(ctx, tx, s.q.get, tenantID, releaseID, adapterVersion)
		return err
	})
	return r, err
}

func (s *Store) get(ctx context.Context, tx *sqldb.Tx, query, tenantID, releaseID, adapterVersion string) (Release, error) {
	var r Release
	err := tx.GetContext(ctx, &r, query, tenantID, releaseID, adapterVersion)
	if errors.Is(err, sqldb.ErrNotFound) {
		return Release{}, apperr.New(api.CodeNotFound, "no release %q with adapter version %q", releaseID, adapterVersion)
	}
	if err != nil {
		return Release{}, fmt.Errorf("read release: %w", err)
	}
	r.fill()
	return r, nil
}

// ListFilter narrows a release listing and says where the page starts.
type ListFilter struct {
	State *api.ReleaseState
	// AfterReleaseID and AfterAdapterVersion are the keyset position: the page holds the
	// releases after that pair in (ReleaseId, AdapterVersion) order ("" for the start).
	AfterReleaseID      string
	AfterAdapterVersion string
	Limit               int
}

// List returns the tenant's releases in (ReleaseId, AdapterVersion) order.
func (s *Store) List(ctx context.Context, tenantID string, f ListFilter) ([]Release, error) {
	var rs []Release
	err := s.db.Read(ctx, sqldb.TenantScope(tenantID), func(tx *sqldb.Tx) error {
		var state any
		if f.State != nil {
			state = int(*f.State)
		}
		return tx.SelectContext(ctx, &rs, s.q.list, tenantID, state, f.AfterReleaseID, f.AfterAdapterVersion, f.Limit)
	})
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	for i := range rs {
		rs[i].fill()
	}
	return rs, nil
}

// CheckClaimTx refuses (ReleaseNotActive) a claim naming a release and adapter version
// that is not an active release of the tenant: missing, another tenant's, verified,
// draining or retired all answer the same. It locks the release row until the claim
// commits, so a concurrent drain or retirement either waits for the claim (and then sees
// its attempt) or is seen by it.
func (s *Store) CheckClaimTx(ctx context.Context, tx *sqldb.Tx, tenantID, releaseID, adapterVersion string) error {
	r, err := s.get(ctx, tx, s.q.lock, tenantID, releaseID, adapterVersion)
	if apperr.Is(err, api.CodeNotFound) || (err == nil && r.State != api.ReleaseActive) {
		return apperr.New(api.CodeReleaseNotActive, "release %q adapter %q is not an active release of this tenant", releaseID, adapterVersion)
	}
	return err
}

// Hooks returns the run-lease hooks of releases: a claim must name an active release of
// the caller's tenant. Add them with (*runs.Service).AddHooks.
func (s *Store) Hooks() runs.Hooks {
	return runs.Hooks{CheckClaim: func(ctx context.Context, tx *sqldb.Tx, tenantID string, req runs.ClaimRequest) error {
		return s.CheckClaimTx(ctx, tx, tenantID, req.ReleaseID, req.AdapterVersion)
	}}
}
