package runs

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Spec converts a validated enqueue request into the service's spec.
func specOfEnqueue(r api.EnqueueRequest) Spec {
	spec := SpecOf(r.RunSpec)
	spec.ParentRunID = r.ParentRunID
	return spec
}

// Routes registers the run-lease routes.
func Routes(s *web.Server, svc *Service) {
	h := handlers{svc: svc}
	rt, ad := tenancy.RoleRuntime, tenancy.RoleAdmin
	s.Route(http.MethodPost, "/v1/runs", web.Op{
		Summary: "Enqueue a run (a repeat of an idempotencyKey answers 200 with the existing run)",
		Roles:   []string{rt}, Body: api.EnqueueRequest{}, Status: http.StatusCreated, AlsoStatus: []int{http.StatusOK},
		Response: api.Run{}, ETag: true, Problems: []apperr.Code{apperr.UnknownProject, apperr.LoopDepth, apperr.IdempotencyKeyReused},
	}, h.enqueue)
	s.Route(http.MethodPost, "/v1/runs/claim", web.Op{
		Summary: "Lease one due run and start its attempt; 204 when nothing is due, or with Retry-After when the budget holds or the tenant has all the long polls it may waiting",
		Roles:   []string{rt}, Body: api.ClaimRequest{}, Status: http.StatusOK, AlsoStatus: []int{http.StatusNoContent}, Response: api.Claim{},
	}, h.claim)
	s.Route(http.MethodGet, "/v1/runs", web.Op{
		Summary: "List runs, newest first", Status: http.StatusOK, Response: web.Page[api.Run]{},
		Query: api.ListRunsParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/runs/:runId", web.Op{
		Summary: "Read a run", Status: http.StatusOK, Response: api.Run{}, ETag: true, Problems: []apperr.Code{apperr.NotFound},
	}, h.get)
	s.Route(http.MethodPost, "/v1/runs/:runId/cancel", web.Op{
		Summary: "Cancel a run: a queued run ends at once, a leased one is asked to stop (idempotent)",
		Roles:   []string{ad}, Status: http.StatusOK, Response: api.Run{}, ETag: true, Problems: []apperr.Code{apperr.NotFound},
	}, h.cancel)
	s.Route(http.MethodPost, "/v1/runs/:runId/continue", web.Op{
		Summary: "Continue an ended run on a new run that spends one more attempt (a repeat answers 200)",
		Roles:   []string{rt, ad}, Body: api.ContinueRequest{}, BodyOptional: true, Status: http.StatusCreated,
		AlsoStatus: []int{http.StatusOK}, Response: api.Run{}, ETag: true,
		Problems: []apperr.Code{apperr.NotFound, apperr.IllegalTransition, apperr.AttemptsExhausted},
	}, h.continueRun)
	fenced := []apperr.Code{apperr.NotFound, apperr.StaleLease, apperr.LeaseExpired, apperr.AttemptEnded}
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/heartbeat", web.Op{
		Summary: "Renew the lease; answers whether a cancel is pending",
		Roles:   []string{rt}, Body: api.HeartbeatRequest{}, Status: http.StatusOK, Response: api.Heartbeat{}, Problems: fenced,
	}, h.heartbeat)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/release", web.Op{
		Summary: "Give the run back: queued after a delay, or ended at its limit, deadline or a pending cancel",
		Roles:   []string{rt}, Body: api.ReleaseAttemptRequest{}, Status: http.StatusOK, Response: api.Attempt{}, ETag: true, Problems: fenced,
	}, h.release)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/complete", web.Op{
		Summary: "End the attempt and its run together (an exact repeat answers as the first did)",
		Roles:   []string{rt}, Body: api.CompleteAttemptRequest{}, Status: http.StatusOK, Response: api.Attempt{}, ETag: true, Problems: fenced,
	}, h.complete)
	s.Route(http.MethodPatch, "/v1/attempts/:attemptId", web.Op{
		Summary: "Change the attempt's phase, count a correction, or record its context snapshot",
		Roles:   []string{rt}, Body: api.PatchAttemptRequest{}, Status: http.StatusOK, Response: api.Attempt{}, ETag: true,
		Problems: append([]apperr.Code{apperr.CorrectionLimit}, fenced...),
	}, h.patchAttempt)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/cancellation", web.Op{
		Summary: "Record that the holder saw the cancel request (once)",
		Roles:   []string{rt}, Body: api.FencedRequest{}, Status: http.StatusOK, Response: api.Attempt{}, ETag: true,
		Problems: append([]apperr.Code{apperr.NoCancelRequested}, fenced...),
	}, h.observeCancellation)
	s.Route(http.MethodPut, "/v1/locks/agents/:agentId/tasks/:taskId", web.Op{
		Summary: "Take or renew a task run lock", Roles: []string{rt}, Body: api.LockRequest{},
		Status: http.StatusOK, Response: api.TaskLock{}, Problems: []apperr.Code{apperr.LockHeld},
	}, h.acquireLock)
	s.Route(http.MethodDelete, "/v1/locks/agents/:agentId/tasks/:taskId", web.Op{
		Summary: "Release a task run lock", Roles: []string{rt}, Status: http.StatusNoContent,
		Query: api.ReleaseLockParams{}, Problems: []apperr.Code{apperr.LockHeld},
	}, h.releaseLock)
}

type handlers struct{ svc *Service }

func caller(c echo.Context) Caller {
	p := tenancy.MustPrincipal(c)
	return Caller{TenantID: p.TenantID, KeyID: p.KeyID}
}

func (h handlers) enqueue(c echo.Context) error {
	var req api.EnqueueRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	run, created, err := h.svc.Enqueue(c.Request().Context(), caller(c), specOfEnqueue(req))
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, web.Path("v1", "runs", run.RunID.String()), run.Version, run.Wire())
	}
	return web.JSONWithETag(c, http.StatusOK, run.Version, run.Wire())
}

func (h handlers) claim(c echo.Context) error {
	var req api.ClaimRequest
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
	if cr.Wait > 0 {
		// A claim that would wait holds one of its tenant's long-poll slots meanwhile; with
		// none free it answers at once, holding nothing (DESIGN.md section 6).
		release, ok := tenancy.HoldLongPoll(c.Request().Context())
		if !ok {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int(tenancy.LongPollRetryAfter/time.Second)))
			return c.NoContent(http.StatusNoContent)
		}
		defer release()
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
	return c.JSON(http.StatusOK, cl.Wire())
}

type runCursor struct {
	QueuedAt time.Time `json:"q"`
	RunID    uuid.UUID `json:"r"`
}

func (h handlers) list(c echo.Context) error {
	var q api.ListRunsParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q.PageParams)
	f := ListFilter{Limit: limit + 1, State: q.State, Subject: q.Subject, ProjectID: q.ProjectID, Kind: q.Kind}
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
	page := web.NewPage(rs, limit, func(last Run) any {
		return runCursor{QueuedAt: last.QueuedAt, RunID: last.RunID}
	})
	return c.JSON(http.StatusOK, web.MapPage(page, Run.Wire))
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
	return web.JSONWithETag(c, http.StatusOK, run.Version, run.Wire())
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
	return web.JSONWithETag(c, http.StatusOK, run.Version, run.Wire())
}

func (h handlers) continueRun(c echo.Context) error {
	id, err := web.PathUUID(c, "runId")
	if err != nil {
		return err
	}
	var req api.ContinueRequest
	if err := web.Bind(c, &req, true); err != nil {
		return err
	}
	run, created, err := h.svc.Continue(c.Request().Context(), caller(c), id,
		Continuation{DueAt: timeOf(req.DueAt), SnapshotID: req.SnapshotID})
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, web.Path("v1", "runs", run.RunID.String()), run.Version, run.Wire())
	}
	return web.JSONWithETag(c, http.StatusOK, run.Version, run.Wire())
}

func (h handlers) heartbeat(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.HeartbeatRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	secs := 0
	if req.LeaseSeconds != nil {
		secs = *req.LeaseSeconds
	}
	hb, err := h.svc.Heartbeat(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, req.FencingToken, secs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, hb.Wire())
}

func (h handlers) release(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.ReleaseAttemptRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	r := Release{Charge: req.Charge}
	if req.RetryAfterSeconds != nil {
		d := time.Duration(*req.RetryAfterSeconds) * time.Second
		r.RetryAfter = &d
	}
	a, err := h.svc.Release(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, req.FencingToken, r)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a.Wire())
}

func (h handlers) complete(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.CompleteAttemptRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	a, err := h.svc.Complete(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, req.FencingToken,
		Completion{State: req.State.AttemptState(), OutcomeHash: req.OutcomeHash})
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a.Wire())
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
	var req api.LockRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	l, _, err := h.svc.AcquireLock(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, agentID, taskID,
		req.HolderID, time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, l.Wire())
}

func (h handlers) releaseLock(c echo.Context) error {
	agentID, taskID, err := lockPath(c)
	if err != nil {
		return err
	}
	var q api.ReleaseLockParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	if err := h.svc.ReleaseLock(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, agentID, taskID, q.HolderID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h handlers) patchAttempt(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.PatchAttemptRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	p := AttemptPatch{Phase: req.Phase, Correction: req.Correction, ContextSnapshotRef: req.ContextSnapshotRef}
	a, err := h.svc.PatchAttempt(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, req.FencingToken, p)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a.Wire())
}

func (h handlers) observeCancellation(c echo.Context) error {
	id, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.FencedRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	a, err := h.svc.ObserveCancellation(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id, req.FencingToken)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a.Wire())
}
