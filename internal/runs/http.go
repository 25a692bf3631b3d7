package runs

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// EnqueueRequest is the body of POST /v1/runs (DESIGN.md section 7a).
type EnqueueRequest struct {
	Subject        string          `json:"subject" validate:"required,ident=256"`
	Kind           string          `json:"kind" validate:"required,ident=64"`
	ProjectID      string          `json:"projectId" validate:"required,ident=64"`
	AgentID        string          `json:"agentId" validate:"required,ident=128"`
	StepID         string          `json:"stepId" validate:"required,uuid"`
	SnapshotID     string          `json:"snapshotId" validate:"required,uuid"`
	EnvironmentID  *string         `json:"environmentId" validate:"omitempty,ident=64"`
	Band           string          `json:"band" validate:"omitempty,oneof=interactive batch background" enum:"interactive,batch,background"`
	Input          json.RawMessage `json:"input"`
	MaxAttempts    *int            `json:"maxAttempts" validate:"omitempty,min=1,max=1000"`
	MaxCorrections *int            `json:"maxCorrections" validate:"omitempty,min=0,max=1000"`
	DueAt          *time.Time      `json:"dueAt"`
	DeadlineAt     *time.Time      `json:"deadlineAt"`
	IdempotencyKey *string         `json:"idempotencyKey" validate:"omitempty,ident=256"`
	ParentRunID    *string         `json:"parentRunId" validate:"omitempty,uuid"`
}

// Spec converts a validated request into the service's spec.
func (r EnqueueRequest) Spec() Spec {
	band := Batch
	if r.Band != "" {
		b, _ := BandNames.Parse(r.Band)
		band = Band(b)
	}
	spec := Spec{
		ProjectID: r.ProjectID, EnvironmentID: r.EnvironmentID, Subject: r.Subject, Kind: r.Kind, AgentID: r.AgentID,
		StepID: uuid.MustParse(r.StepID), SnapshotID: uuid.MustParse(r.SnapshotID), Band: band,
		MaxAttempts: 3, MaxCorrections: 3, DueAt: r.DueAt, DeadlineAt: r.DeadlineAt, IdempotencyKey: r.IdempotencyKey,
	}
	if len(r.Input) > 0 && string(r.Input) != "null" {
		spec.Input = JSONText(r.Input)
	}
	if r.MaxAttempts != nil {
		spec.MaxAttempts = *r.MaxAttempts
	}
	if r.MaxCorrections != nil {
		spec.MaxCorrections = *r.MaxCorrections
	}
	if r.ParentRunID != nil {
		p := uuid.MustParse(*r.ParentRunID)
		spec.ParentRunID = &p
	}
	return spec
}

// ClaimRequest is the body of POST /v1/runs/claim.
type ClaimBody struct {
	HolderID       string   `json:"holderId" validate:"required,ident=128"`
	ReleaseID      string   `json:"releaseId" validate:"required,ident=256"`
	AdapterVersion string   `json:"adapterVersion" validate:"required,ident=32"`
	ModelProfileID string   `json:"modelProfileId" validate:"required,ident=128"`
	LeaseSeconds   *int     `json:"leaseSeconds" validate:"omitempty,min=1,max=3600"`
	WaitSeconds    *int     `json:"waitSeconds" validate:"omitempty,min=0,max=30"`
	Kinds          []string `json:"kinds" validate:"omitempty,max=100,dive,ident=64"`
	AgentIDs       []string `json:"agentIds" validate:"omitempty,max=100,dive,ident=128"`
	ProjectIDs     []string `json:"projectIds" validate:"omitempty,max=100,dive,ident=64"`
}

// FenceBody is the fencing token every holder write carries.
type FenceBody struct {
	FencingToken *int64 `json:"fencingToken" validate:"required,min=1"`
}

// HeartbeatBody is the body of POST /v1/attempts/{id}/heartbeat.
type HeartbeatBody struct {
	FencingToken *int64 `json:"fencingToken" validate:"required,min=1"`
	LeaseSeconds *int   `json:"leaseSeconds" validate:"omitempty,min=1,max=3600"`
}

// ReleaseBody is the body of POST /v1/attempts/{id}/release.
type ReleaseBody struct {
	FencingToken      *int64 `json:"fencingToken" validate:"required,min=1"`
	Charge            bool   `json:"charge"`
	RetryAfterSeconds *int   `json:"retryAfterSeconds" validate:"omitempty,min=0,max=86400"`
}

// CompleteBody is the body of POST /v1/attempts/{id}/complete.
type CompleteBody struct {
	FencingToken *int64  `json:"fencingToken" validate:"required,min=1"`
	State        string  `json:"state" validate:"required,oneof=succeeded failed cancelled" enum:"succeeded,failed,cancelled"`
	OutcomeHash  *string `json:"outcomeHash" validate:"omitempty,ident=128"`
}

// PatchBody is the body of PATCH /v1/attempts/{id}.
type PatchBody struct {
	FencingToken       *int64  `json:"fencingToken" validate:"required,min=1"`
	Phase              *string `json:"phase" validate:"omitempty,oneof=starting planning acting observing correcting awaiting_decision finalizing" enum:"starting,planning,acting,observing,correcting,awaiting_decision,finalizing"`
	Correction         bool    `json:"correction"`
	ContextSnapshotRef *string `json:"contextSnapshotRef" validate:"omitempty,ident=512"`
}

// ContinueBody is the optional body of POST /v1/runs/{id}/continue.
type ContinueBody struct {
	DueAt      *time.Time `json:"dueAt"`
	SnapshotID *string    `json:"snapshotId" validate:"omitempty,uuid"`
}

// LockBody is the body of PUT /v1/locks/agents/{agentId}/tasks/{taskId}.
type LockBody struct {
	HolderID   string `json:"holderId" validate:"required,ident=128"`
	TTLSeconds int    `json:"ttlSeconds" validate:"required,min=1,max=86400"`
}

// Routes registers the run-lease routes.
func Routes(s *web.Server, svc *Service) {
	h := handlers{svc: svc}
	rt, ad := tenancy.RoleRuntime, tenancy.RoleAdmin
	s.Route(http.MethodPost, "/v1/runs", web.Op{
		Summary: "Enqueue a run (a repeat of an idempotencyKey answers 200 with the existing run)",
		Roles:   []string{rt}, Body: EnqueueRequest{}, Status: http.StatusCreated, AlsoStatus: []int{http.StatusOK},
		Response: Run{}, ETag: true, Problems: []apperr.Code{apperr.UnknownProject, apperr.LoopDepth, apperr.IdempotencyKeyReused},
	}, h.enqueue)
	s.Route(http.MethodPost, "/v1/runs/claim", web.Op{
		Summary: "Lease one due run and start its attempt; 204 when nothing is due or the budget holds (Retry-After)",
		Roles:   []string{rt}, Body: ClaimBody{}, Status: http.StatusOK, AlsoStatus: []int{http.StatusNoContent}, Response: Claimed{},
	}, h.claim)
	s.Route(http.MethodGet, "/v1/runs", web.Op{
		Summary: "List runs, newest first", Status: http.StatusOK, Response: web.Page[Run]{},
		Query: []web.Param{{Name: "state", Type: "string"}, {Name: "subject", Type: "string"}, {Name: "projectId", Type: "string"},
			{Name: "kind", Type: "string"}, {Name: "limit", Type: "integer"}, {Name: "cursor", Type: "string"}},
	}, h.list)
	s.Route(http.MethodGet, "/v1/runs/:runId", web.Op{
		Summary: "Read a run", Status: http.StatusOK, Response: Run{}, ETag: true, Problems: []apperr.Code{apperr.NotFound},
	}, h.get)
	s.Route(http.MethodPost, "/v1/runs/:runId/cancel", web.Op{
		Summary: "Cancel a run: a queued run ends at once, a leased one is asked to stop (idempotent)",
		Roles:   []string{ad}, Status: http.StatusOK, Response: Run{}, ETag: true, Problems: []apperr.Code{apperr.NotFound},
	}, h.cancel)
	s.Route(http.MethodPost, "/v1/runs/:runId/continue", web.Op{
		Summary: "Continue an ended run on a new run that spends one more attempt (a repeat answers 200)",
		Roles:   []string{rt, ad}, Body: ContinueBody{}, BodyOptional: true, Status: http.StatusCreated,
		AlsoStatus: []int{http.StatusOK}, Response: Run{}, ETag: true,
		Problems: []apperr.Code{apperr.NotFound, apperr.IllegalTransition, apperr.AttemptsExhausted},
	}, h.continueRun)
	fenced := []apperr.Code{apperr.NotFound, apperr.StaleLease, apperr.LeaseExpired, apperr.AttemptEnded}
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/heartbeat", web.Op{
		Summary: "Renew the lease; answers whether a cancel is pending",
		Roles:   []string{rt}, Body: HeartbeatBody{}, Status: http.StatusOK, Response: Heartbeat{}, Problems: fenced,
	}, h.heartbeat)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/release", web.Op{
		Summary: "Give the run back: queued after a delay, or ended at its limit, deadline or a pending cancel",
		Roles:   []string{rt}, Body: ReleaseBody{}, Status: http.StatusOK, Response: attempts.Attempt{}, ETag: true, Problems: fenced,
	}, h.release)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/complete", web.Op{
		Summary: "End the attempt and its run together (an exact repeat answers as the first did)",
		Roles:   []string{rt}, Body: CompleteBody{}, Status: http.StatusOK, Response: attempts.Attempt{}, ETag: true, Problems: fenced,
	}, h.complete)
	s.Route(http.MethodPatch, "/v1/attempts/:attemptId", web.Op{
		Summary: "Change the attempt's phase, count a correction, or record its context snapshot",
		Roles:   []string{rt}, Body: PatchBody{}, Status: http.StatusOK, Response: attempts.Attempt{}, ETag: true,
		Problems: append([]apperr.Code{apperr.CorrectionLimit}, fenced...),
	}, h.patchAttempt)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/cancellation", web.Op{
		Summary: "Record that the holder saw the cancel request (once)",
		Roles:   []string{rt}, Body: FenceBody{}, Status: http.StatusOK, Response: attempts.Attempt{}, ETag: true,
		Problems: append([]apperr.Code{apperr.NoCancelRequested}, fenced...),
	}, h.observeCancellation)
	s.Route(http.MethodPut, "/v1/locks/agents/:agentId/tasks/:taskId", web.Op{
		Summary: "Take or renew a task run lock", Roles: []string{rt}, Body: LockBody{},
		Status: http.StatusOK, Response: TaskLock{}, Problems: []apperr.Code{apperr.LockHeld},
	}, h.acquireLock)
	s.Route(http.MethodDelete, "/v1/locks/agents/:agentId/tasks/:taskId", web.Op{
		Summary: "Release a task run lock", Roles: []string{rt}, Status: http.StatusNoContent,
		Query: []web.Param{{Name: "holderId", Type: "string", Description: "the holder releasing"}}, Problems: []apperr.Code{apperr.LockHeld},
	}, h.releaseLock)
}

type handlers struct{ svc *Service }

func caller(c echo.Context) Caller {
	p := tenancy.MustPrincipal(c)
	return Caller{TenantID: p.TenantID, KeyID: p.KeyID}
}

func (h handlers) enqueue(c echo.Context) error {
	var req EnqueueRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	run, created, err := h.svc.Enqueue(c.Request().Context(), caller(c), req.Spec())
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, "/v1/runs/"+run.RunID.String(), run.Version, run)
	}
	return web.JSONWithETag(c, http.StatusOK, run.Version, run)
}

func (h handlers) claim(c echo.Context) error {
	var req ClaimBody
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	cr := ClaimRequest{
		HolderID: req.HolderID, ReleaseID: req.ReleaseID, AdapterVersion: req.AdapterVersion, ModelProfileID: req.ModelProfileID,
		Kinds: req.Kinds, AgentIDs: req.AgentIDs, ProjectIDs: req.ProjectIDs,
	}
	if req.LeaseSeconds != nil {
		cr.LeaseSeconds = *req.LeaseSeconds
	}
	if req.WaitSeconds != nil {
		cr.Wait = time.Duration(*req.WaitSeconds) * time.Second
	}
	cl, err := h.svc.Claim(c.Request().Context(), caller(c), cr)
	var held *BudgetHeldError
	switch {
	case errors.Is(err, ErrNothingToClaim):
		return c.NoContent(http.StatusNoContent)
	case errors.As(err, &held):
		c.Response().Header().Set("Retry-After", strconv.Itoa(max(1, int(held.RetryAfter/time.Second))))
		return c.NoContent(http.StatusNoContent)
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, cl)
}

type runCursor struct {
	QueuedAt time.Time `json:"q"`
	RunID    uuid.UUID `json:"r"`
}

func optQuery(c echo.Context, name string, max int) (*string, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	if !web.ValidIdent(v, max) {
		return nil, apperr.FieldsInvalid(apperr.FieldError{Field: name, Reason: "is not a valid identifier"})
	}
	return &v, nil
}

func (h handlers) list(c echo.Context) error {
	limit, err := web.Limit(c)
	if err != nil {
		return err
	}
	f := ListFilter{Limit: limit + 1}
	if s := c.QueryParam("state"); s != "" {
		v, ok := StateNames.Parse(s)
		if !ok {
			return apperr.FieldsInvalid(apperr.FieldError{Field: "state", Reason: "must be one of: queued, leased, ended"})
		}
		st := State(v)
		f.State = &st
	}
	if f.Subject, err = optQuery(c, "subject", 256); err != nil {
		return err
	}
	if f.ProjectID, err = optQuery(c, "projectId", 64); err != nil {
		return err
	}
	if f.Kind, err = optQuery(c, "kind", 64); err != nil {
		return err
	}
	var cur runCursor
	if ok, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	} else if ok {
		f.AfterQueuedAt, f.AfterRunID = &cur.QueuedAt, cur.RunID
	}
	rs, err := h.svc.List(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, web.NewPage(rs, limit, func(last Run) any {
		return runCursor{QueuedAt: last.QueuedAt, RunID: last.RunID}
	}))
}

func (h handlers) get(c echo.Context) error {
	id, err := web.PathUUID(c, "runId")
	if err != nil {
		return err
	}
	run, err := h.svc.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, run.Version, run)
}

func (h handlers) cancel(c echo.Context) error {
	id, err := web.PathUUID(c, "runId")
	if err != nil {
		return err
	}
	run, err := h.svc.Cancel(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, run.Version, run)
}

func (h handlers) continueRun(c echo.Context) error {
	id, err := web.PathUUID(c, "runId")
	if err != nil {
		return err
	}
	var req ContinueBody
	if err := web.Bind(c, &req, true); err != nil {
		return err
	}
	cont := Continuation{DueAt: req.DueAt}
	if req.SnapshotID != nil {
		s := uuid.MustParse(*req.SnapshotID)
		cont.SnapshotID = &s
	}
	run, created, err := h.svc.Continue(c.Request().Context(), caller(c), id, cont)
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, "/v1/runs/"+run.RunID.String(), run.Version, run)
	}
	return web.JSONWithETag(c, http.StatusOK, run.Version, run)
}

func (h handlers) heartbeat(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req HeartbeatBody
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	secs := 0
	if req.LeaseSeconds != nil {
		secs = *req.LeaseSeconds
	}
	hb, err := h.svc.Heartbeat(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, *req.FencingToken, secs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, hb)
}

func (h handlers) release(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req ReleaseBody
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	r := Release{Charge: req.Charge}
	if req.RetryAfterSeconds != nil {
		d := time.Duration(*req.RetryAfterSeconds) * time.Second
		r.RetryAfter = &d
	}
	a, err := h.svc.Release(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, *req.FencingToken, r)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a)
}

func (h handlers) complete(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req CompleteBody
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	st, _ := attempts.StateNames.Parse(req.State)
	a, err := h.svc.Complete(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, *req.FencingToken,
		Completion{State: attempts.State(st), OutcomeHash: req.OutcomeHash})
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a)
}

func lockPath(c echo.Context) (agentID, taskID string, err error) {
	if agentID, err = web.PathIdent(c, "agentId", 128); err != nil {
		return "", "", err
	}
	taskID, err = web.PathIdent(c, "taskId", 64)
	return agentID, taskID, err
}

func (h handlers) acquireLock(c echo.Context) error {
	agentID, taskID, err := lockPath(c)
	if err != nil {
		return err
	}
	var req LockBody
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	l, _, err := h.svc.AcquireLock(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, agentID, taskID,
		req.HolderID, time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, l)
}

func (h handlers) releaseLock(c echo.Context) error {
	agentID, taskID, err := lockPath(c)
	if err != nil {
		return err
	}
	holder := c.QueryParam("holderId")
	if !web.ValidIdent(holder, 128) {
		return apperr.FieldsInvalid(apperr.FieldError{Field: "holderId", Reason: "is required: the holder releasing the lock"})
	}
	if err := h.svc.ReleaseLock(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, agentID, taskID, holder); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h handlers) patchAttempt(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req PatchBody
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	p := AttemptPatch{Correction: req.Correction, ContextSnapshotRef: req.ContextSnapshotRef}
	if req.Phase != nil {
		v, _ := attempts.PhaseNames.Parse(*req.Phase)
		ph := attempts.Phase(v)
		p.Phase = &ph
	}
	a, err := h.svc.PatchAttempt(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, *req.FencingToken, p)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a)
}

func (h handlers) observeCancellation(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req FenceBody
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	a, err := h.svc.ObserveCancellation(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, *req.FencingToken)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a)
}
