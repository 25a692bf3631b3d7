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
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
	"github.com/ledger-dev/ledger/internal/waits"
	"github.com/ledger-dev/ledger/internal/web"
)

// Spec converts a validated enqueue request into the service's spec.
func specOfEnqueue(r api.EnqueueRequest) Spec {
	spec := SpecOf(r.RunSpec)
	spec.ParentRunID = r.ParentRunID
	return spec
}

// Examples of the request bodies, shown in the OpenAPI document.
var (
	exampleStep     = uuid.MustParse("6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d")
	exampleSnapshot = uuid.MustParse("0b4e2d8c-7a61-4f3e-8d2c-5b6a7c8d9e0f")
	// ExampleRunSpec is a run spec for the documents' examples (the delegation's child too).
	ExampleRunSpec = api.RunSpec{
		Subject: "review:42", Kind: "review", ProjectID: "web", AgentID: "reviewer", StepID: exampleStep,
		SnapshotID: exampleSnapshot, Band: api.Ptr(api.BandInteractive), Input: []byte(`{"pr":42}`),
		MaxAttempts: api.Ptr(5), IdempotencyKey: api.Ptr("github:pr-42:opened"),
	}
)

// fenced are the codes every write under a lease can answer (DESIGN.md section 4).
var fenced = []api.ProblemCode{api.CodeNotFound, api.CodeStaleLease, api.CodeLeaseExpired, api.CodeAttemptEnded}

// Routes registers the run-lease routes.
func Routes(s *web.Server, svc *Service) {
	h := handlers{svc: svc}
	rt, ad := tenancy.RoleRuntime, tenancy.RoleAdmin
	parkRoutes(s, h)
	s.Route(http.MethodPost, "/v1/runs", web.Op{
		ID: "enqueueRun", Tag: "Runs", Summary: "Enqueue a run",
		Description: "Queues a run (201 with Location). An idempotencyKey names one run per tenant: an exact repeat answers 200 " +
			"with the existing run, the same key with a request that differs is 409 idempotency_key_reused. deadlineAt must be " +
			"after dueAt and in the future. With parentRunId the run is a child (depth = the parent's + 1, 422 loop_depth past " +
			"the server's limit). The project must exist (422 unknown_project).",
		Roles: []string{rt}, Body: api.EnqueueRequest{}, Example: api.EnqueueRequest{RunSpec: ExampleRunSpec},
		Status: http.StatusCreated, AlsoStatus: []int{http.StatusOK}, Response: api.Run{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeUnknownProject, api.CodeLoopDepth, api.CodeIdempotencyKeyReused},
		RequestHeaders: map[string]string{"traceparent": "The caller's W3C Trace Context, taken as the body's traceparent when the body " +
			"has none: the run's exported spans join that trace. A malformed header is ignored."},
	}, h.enqueue)
	s.Route(http.MethodPost, "/v1/runs/batch", web.Op{
		ID: "enqueueRunBatch", Tag: "Runs", Summary: "Enqueue runs all or nothing",
		Description: "Enqueues every item (at most 500 enqueue bodies) in one transaction, or none: a refusal of any item " +
			"stores nothing and names it (400 with fields items[i].field; 409 idempotency_key_reused and 422 unknown_project " +
			"or loop_depth list items[i] with the field concerned). Each item keeps its own idempotency: an exact repeat " +
			"answers its existing run marked existing. Answers the items in order.",
		Roles: []string{rt, ad}, Body: api.BatchEnqueueRequest{},
		Example: api.BatchEnqueueRequest{Items: []api.EnqueueRequest{{RunSpec: ExampleRunSpec}}},
		Status:  http.StatusOK, Response: api.BatchEnqueueResponse{},
		Problems: []api.ProblemCode{api.CodeUnknownProject, api.CodeLoopDepth, api.CodeIdempotencyKeyReused},
	}, h.enqueueBatch)
	s.Route(http.MethodPost, "/v1/runs/claim", web.Op{
		ID: "claimRun", Tag: "Runs", Summary: "Lease one due run and start its attempt",
		Description: "Leases the tenant's next due run (interactive first, then batch with aged background runs, then background; " +
			"within a band the project with the fewest leased runs among the oldest candidates) and creates its attempt: the " +
			"answer carries the fencing token every later write presents. waitSeconds long-polls. 204 when nothing is due, or " +
			"with Retry-After when the tenant's budget of leased runs (or of waiting claims) holds the claim back. The release " +
			"named must be an active release of the tenant (422 release_not_active).",
		Roles: []string{rt}, Body: api.ClaimRequest{},
		Example: api.ClaimRequest{HolderID: "worker-7", ReleaseID: "acme-reviewer-2026.06", AdapterVersion: "1.4.0",
			ModelProfileID: "default", LeaseSeconds: api.Ptr(60), WaitSeconds: api.Ptr(20), Kinds: []string{"review"}},
		Status: http.StatusOK, AlsoStatus: []int{http.StatusNoContent}, Response: api.Claim{}, RetryAfter: true,
		Problems: []api.ProblemCode{api.CodeReleaseNotActive},
	}, h.claim)
	s.Route(http.MethodGet, "/v1/runs", web.Op{
		ID: "listRuns", Tag: "Runs", Summary: "List runs, newest first",
		Description: "The tenant's runs, newest queued first, filtered by state, subject, project, kind, agent, band, " +
			"queued time (queuedFrom inclusive, queuedTo exclusive), outcome, errorCode (the run's last error) or hasError " +
			"(false: the runs without an error, the errorCode insight's \"(none)\" group), releaseId " +
			"(its latest attempt's release, as insights group runs) or hasRelease (false: the runs never claimed, the release " +
			"insight's \"(none)\" group), ended time (endedFrom inclusive, endedTo exclusive), tag and " +
			"the number of its attempts (attemptsMin, attemptsMax, as the attempts-per-run insight counts them) and its first " +
			"attempt's release (firstReleaseId, as claim latency groups runs). The not* lists (notProjectId, notAgentId, notKind, " +
			"notReleaseId, notErrorCode, notFirstReleaseId, each the parameter repeated) leave out the runs with one of their " +
			"values, so an insight's \"other\" group lists as it counts. Each " +
			"item carries its etag. A cursor continues the listing it was made by: presented with other filters it is " +
			"refused (400 naming cursor).",
		Status: http.StatusOK, Response: api.Page[api.RunItem]{}, Query: api.ListRunsParams{},
	}, h.list)
	s.Route(http.MethodGet, "/v1/runs/:runId", web.Op{
		ID: "getRun", Tag: "Runs", Summary: "Read a run",
		Description: "With waitSeconds the answer waits until the run has ended (or that long, answering with the run as it " +
			"then is); past the tenant's cap of waiting reads it answers at once.",
		Query:  api.WaitParams{},
		Status: http.StatusOK, Response: api.Run{}, ETag: true, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
	s.Route(http.MethodPost, "/v1/runs/:runId/cancel", web.Op{
		ID: "cancelRun", Tag: "Runs", Summary: "Cancel a run",
		Description: "A queued run ends cancelled at once; a leased run gets cancelRequestedAt, its holder sees cancelRequested " +
			"on its next heartbeat and should complete with state cancelled (the reaper ends it cancelled if its lease expires " +
			"first). Idempotent; no If-Match (a leased run's version changes at every heartbeat).",
		Roles: []string{ad}, Status: http.StatusOK, Response: api.Run{}, ETag: true, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.cancel)
	s.Route(http.MethodPost, "/v1/runs/:runId/continue", web.Op{
		ID: "continueRun", Tag: "Runs", Summary: "Continue an ended run",
		Description: "Queues a new run with the ended run's spec that spends one more attempt (201 with Location); its first " +
			"claim's fencing token is greater than any before. A repeat answers 200 with the existing continuation. Only an " +
			"ended run continues (409 illegal_transition), and not past maxAttempts (409 attempts_exhausted). The body is optional.",
		Roles: []string{rt, ad}, Body: api.ContinueRequest{}, BodyOptional: true,
		Example: api.ContinueRequest{SnapshotID: &exampleSnapshot},
		Status:  http.StatusCreated, AlsoStatus: []int{http.StatusOK}, Response: api.Run{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound, api.CodeIllegalTransition, api.CodeAttemptsExhausted},
	}, h.continueRun)
	s.Route(http.MethodPost, "/v1/runs/:runId/fork", web.Op{
		ID: "forkRun", Tag: "Runs", Summary: "Start a new run from a checkpoint of a run",
		Description: "Queues a new run with the run's spec (201 with Location) whose resume point (checkpoints/last) is the " +
			"checkpoint named, one of the run's attempts', until it writes a checkpoint of its own; the run forked and its " +
			"chain are left as they are. The fork has its own epochs and attempts, the run's parent, depth, tags and " +
			"metadata, and its deadline only while that is ahead. An idempotencyKey names one fork: an exact repeat " +
			"answers 200 with it, another request under the key is 409 idempotency_key_reused.",
		Roles: []string{rt, ad}, Body: api.ForkRequest{},
		Example: api.ForkRequest{CheckpointID: exampleStep, IdempotencyKey: api.Ptr("retry-from-plan:42")},
		Status:  http.StatusCreated, AlsoStatus: []int{http.StatusOK}, Response: api.Run{}, ETag: true,
		Problems: []api.ProblemCode{api.CodeNotFound, api.CodeIdempotencyKeyReused},
	}, h.fork)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/heartbeat", web.Op{
		ID: "heartbeatAttempt", Tag: "Attempts", Summary: "Renew the lease",
		Description: "Renews the lease for leaseSeconds (default: the length stored at claim) and answers whether a cancel is " +
			"pending. Fenced: a token that is not the run's current epoch is 409 stale_lease, a lease that passed " +
			"lease_expired, an attempt that ended attempt_ended.",
		Roles: []string{rt}, Body: api.HeartbeatRequest{}, Example: api.HeartbeatRequest{FencingToken: 4, LeaseSeconds: api.Ptr(60)},
		Status: http.StatusOK, Response: api.Heartbeat{}, Problems: fenced,
	}, h.heartbeat)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/release", web.Op{
		ID: "releaseAttempt", Tag: "Attempts", Summary: "Give the run back",
		Description: "Ends the attempt released and queues the run again, due after retryAfterSeconds (default: the backoff); " +
			"charge spends an attempt. At maxAttempts the run ends exhausted (keeping this error), past its deadline " +
			"deadline, with a cancel pending cancelled (the run's error then says so). An optional error says why; the " +
			"attempt keeps it and the run copies its code and message. Fenced.",
		Roles: []string{rt}, Body: api.ReleaseAttemptRequest{},
		Example: api.ReleaseAttemptRequest{FencingToken: 4, Charge: true, RetryAfterSeconds: api.Ptr(30)},
		Status:  http.StatusOK, Response: api.Attempt{}, ETag: true, Problems: fenced,
	}, h.release)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/complete", web.Op{
		ID: "completeAttempt", Tag: "Attempts", Summary: "End the attempt and its run",
		Description: "Ends the attempt and its run together in state succeeded, failed or cancelled, with an optional error " +
			"(failed or cancelled only) that the attempt keeps and whose code and message the run copies (a cancel " +
			"pending makes the run's error cancelled); an exact repeat (same state, outcome hash and error) answers as " +
			"the first did. Fenced.",
		Roles: []string{rt}, Body: api.CompleteAttemptRequest{},
		Example: api.CompleteAttemptRequest{FencingToken: 4, State: api.CompleteFailed, OutcomeHash: api.Ptr("sha256:9f2c"),
			Error: &api.AttemptError{Code: "tool_timeout", Message: "search did not answer in 30 s",
				Details: []byte(`{"stack":["search.go:42"]}`)}},
		Status: http.StatusOK, Response: api.Attempt{}, ETag: true, Problems: fenced,
	}, h.complete)
	s.Route(http.MethodPatch, "/v1/attempts/:attemptId", web.Op{
		ID: "patchAttempt", Tag: "Attempts", Summary: "Change the attempt's phase, count a correction or record its context snapshot",
		Description: "The phase moves freely among the phases; correction counts one correction (422 correction_limit past " +
			"maxCorrections). Fenced.",
		Roles: []string{rt}, Body: api.PatchAttemptRequest{},
		Example: api.PatchAttemptRequest{FencingToken: 4, Phase: api.Ptr(api.PhaseActing), Correction: true},
		Status:  http.StatusOK, Response: api.Attempt{}, ETag: true,
		Problems: append([]api.ProblemCode{api.CodeCorrectionLimit}, fenced...),
	}, h.patchAttempt)
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/cancellation", web.Op{
		ID: "acknowledgeCancellation", Tag: "Attempts", Summary: "Record that the holder saw the cancel request",
		Description: "Records cancellationObservedAt once (a repeat keeps the first time). 409 no_cancel_requested when no " +
			"cancel is pending. Fenced.",
		Roles: []string{rt}, Body: api.FencedRequest{}, Example: api.FencedRequest{FencingToken: 4},
		Status: http.StatusOK, Response: api.Attempt{}, ETag: true,
		Problems: append([]api.ProblemCode{api.CodeNoCancelRequested}, fenced...),
	}, h.observeCancellation)
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
	spec := specOfEnqueue(req)
	if tp := c.Request().Header.Get("traceparent"); spec.TraceParent == nil && tp != "" {
		// The caller's own trace context (W3C Trace Context): the run's trace joins it. A
		// malformed header is ignored, as the specification says of an invalid traceparent.
		if ValidTraceParent(tp) {
			spec.TraceParent = &tp
		}
	}
	run, created, err := h.svc.Enqueue(c.Request().Context(), caller(c), spec)
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, web.Path("v1", "runs", run.RunID.String()), run.Version, run.Wire())
	}
	return web.JSONWithETag(c, http.StatusOK, run.Version, run.Wire())
}

func (h handlers) enqueueBatch(c echo.Context) error {
	var req api.BatchEnqueueRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	specs := make([]Spec, len(req.Items))
	for i, it := range req.Items {
		specs[i] = specOfEnqueue(it)
	}
	items, err := h.svc.EnqueueBatch(c.Request().Context(), caller(c), specs)
	if err != nil {
		return err
	}
	out := api.BatchEnqueueResponse{Items: make([]api.BatchItem, len(items))}
	for i, it := range items {
		out.Items[i] = api.BatchItem{Run: it.Run.Wire(), Existing: it.Existing}
	}
	return c.JSON(http.StatusOK, out)
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
		release, ok := admission.HoldLongPoll(c.Request().Context())
		if !ok {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int(admission.LongPollRetryAfter/time.Second)))
			return c.NoContent(http.StatusNoContent)
		}
		defer release()
	}
	cl, err := h.svc.Claim(c.Request().Context(), caller(c), cr)
	var held *BudgetHeldError
	switch {
	case errors.Is(err, ErrNothingToClaim):
		if h.svc.waits.Closed() {
			// Shutting down: come back (to another replica) shortly.
			c.Response().Header().Set("Retry-After", "1")
		}
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
	// Filters is the digest of the filters the cursor was made with (web.FilterKey).
	Filters string `json:"f,omitempty"`
}

func (h handlers) list(c echo.Context) error {
	var q api.ListRunsParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	limit := web.LimitOf(q.PageParams)
	f := ListFilter{Limit: limit + 1, State: q.State, Subject: q.Subject, ProjectID: q.ProjectID, Kind: q.Kind,
		AgentID: q.AgentID, Band: q.Band, Outcome: q.Outcome, ErrorCode: q.ErrorCode, ReleaseID: q.ReleaseID, Tag: q.Tag,
		EndedFrom: timeOf(q.EndedFrom), EndedTo: timeOf(q.EndedTo), AttemptsMin: q.AttemptsMin, AttemptsMax: q.AttemptsMax,
		FirstReleaseID: q.FirstReleaseID, HasError: q.HasError, HasRelease: q.HasRelease,
		NotProjectIDs: q.NotProjectID, NotAgentIDs: q.NotAgentID, NotKinds: q.NotKind, NotReleaseIDs: q.NotReleaseID,
		NotErrorCodes: q.NotErrorCode, NotFirstReleaseIDs: q.NotFirstReleaseID}
	if q.ErrorCode != nil && q.HasError != nil && !*q.HasError {
		return apperr.FieldsInvalid(api.FieldError{Field: "hasError", Reason: "must not be false with errorCode"})
	}
	if q.ReleaseID != nil && q.HasRelease != nil && !*q.HasRelease {
		return apperr.FieldsInvalid(api.FieldError{Field: "hasRelease", Reason: "must not be false with releaseId"})
	}
	if q.AttemptsMin != nil && q.AttemptsMax != nil && *q.AttemptsMax < *q.AttemptsMin {
		return apperr.FieldsInvalid(api.FieldError{Field: "attemptsMax", Reason: "must not be below attemptsMin"})
	}
	if q.EndedFrom != nil && q.EndedTo != nil && q.EndedTo.Before(q.EndedFrom.Time) {
		return apperr.FieldsInvalid(api.FieldError{Field: "endedTo", Reason: "must not be before endedFrom"})
	}
	if q.QueuedFrom != nil {
		f.QueuedFrom = &q.QueuedFrom.Time
	}
	if q.QueuedTo != nil {
		if q.QueuedFrom != nil && q.QueuedTo.Before(q.QueuedFrom.Time) {
			return apperr.FieldsInvalid(api.FieldError{Field: "queuedTo", Reason: "must not be before queuedFrom"})
		}
		// Before queuedTo, exclusive: the keyset position (queuedTo, the smallest id).
		f.AfterQueuedAt, f.AfterRunID = &q.QueuedTo.Time, uuid.Nil
	}
	filters := web.FilterKey(c)
	var cur runCursor
	if ok, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	} else if ok {
		if cur.Filters != filters {
			return web.CursorOfOtherFilters()
		}
		if f.AfterQueuedAt == nil || cur.QueuedAt.Before(*f.AfterQueuedAt) {
			f.AfterQueuedAt, f.AfterRunID = &cur.QueuedAt, cur.RunID
		}
	}
	rs, err := h.svc.List(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, f)
	if err != nil {
		return err
	}
	return web.WritePage(c, rs, limit, func(last Run) any {
		return runCursor{QueuedAt: last.QueuedAt, RunID: last.RunID, Filters: filters}
	}, Run.Item)
}

func (h handlers) get(c echo.Context) error {
	return waits.Get(c, "runId", h.svc.WaitEnded, func(r Run) (sqldb.RowVersion, any) { return r.Version, r.Wire() })
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

func (h handlers) fork(c echo.Context) error {
	id, err := web.PathUUID(c, "runId")
	if err != nil {
		return err
	}
	var req api.ForkRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	run, created, err := h.svc.Fork(c.Request().Context(), caller(c), id,
		Fork{CheckpointID: req.CheckpointID, DueAt: timeOf(req.DueAt), IdempotencyKey: req.IdempotencyKey})
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
	r := Release{Charge: req.Charge, Error: FailureOf(req.Error)}
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
		Completion{State: req.State.AttemptState(), OutcomeHash: req.OutcomeHash, Error: FailureOf(req.Error)})
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, a.Version, a.Wire())
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
