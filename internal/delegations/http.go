package delegations

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Column limits of the fields a delegation writes (nvarchar lengths count UTF-16 units).
const (
	maxChildAgentID = 128
	maxPurpose      = 1024
)

// ChildBody is the child run of a delegation: runs.EnqueueRequest without parentRunId
// (the parent is the attempt's run), field for field and tag for tag, so it validates and
// converts exactly as an enqueue does; a parentRunId is refused as an unknown field. A
// test keeps the two in step.
type ChildBody struct {
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
}

// Spec converts a validated child into the run-lease core's spec (without a parent).
func (c ChildBody) Spec() runs.Spec {
	return runs.EnqueueRequest{
		Subject: c.Subject, Kind: c.Kind, ProjectID: c.ProjectID, AgentID: c.AgentID, StepID: c.StepID,
		SnapshotID: c.SnapshotID, EnvironmentID: c.EnvironmentID, Band: c.Band, Input: c.Input,
		MaxAttempts: c.MaxAttempts, MaxCorrections: c.MaxCorrections, DueAt: c.DueAt, DeadlineAt: c.DeadlineAt,
		IdempotencyKey: c.IdempotencyKey,
	}.Spec()
}

// DelegationBody is the body of POST /v1/attempts/{attemptId}/delegations.
type DelegationBody struct {
	FencingToken *int64     `json:"fencingToken" validate:"required,min=1"`
	ChildAgentID string     `json:"childAgentId" validate:"required,ident=128"`
	Purpose      string     `json:"purpose" validate:"required,max=1024"`
	Child        *ChildBody `json:"child" validate:"required"`
}

// Routes registers the delegation routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/delegations", web.Op{
		Summary: "Delegate to a sub-agent: enqueue the child run and record the delegation under the lease " +
			"(a repeat of the child's idempotencyKey answers 200 with the existing delegation)",
		Roles: []string{tenancy.RoleRuntime}, Body: DelegationBody{}, Status: http.StatusCreated,
		AlsoStatus: []int{http.StatusOK}, Response: Delegation{}, ETag: true,
		Problems: []apperr.Code{apperr.NotFound, apperr.StaleLease, apperr.LeaseExpired, apperr.AttemptEnded, apperr.IdempotencyKeyReused, apperr.SubjectConflict,
			apperr.LoopDepth, apperr.UnknownProject, apperr.SequenceConflict},
	}, h.create)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/delegations", web.Op{
		Summary: "List an attempt's delegations, oldest first", Status: http.StatusOK, Response: web.Page[Delegation]{},
		Query:    []web.Param{{Name: "limit", Type: "integer"}, {Name: "cursor", Type: "string"}},
		Problems: []apperr.Code{apperr.NotFound},
	}, h.listByAttempt)
	s.Route(http.MethodGet, "/v1/delegations/:delegationId", web.Op{
		Summary: "Read a delegation", Status: http.StatusOK, Response: Delegation{}, ETag: true,
		Problems: []apperr.Code{apperr.NotFound},
	}, h.get)
}

type handlers struct{ store *Store }

func (h handlers) create(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req DelegationBody
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	var bad []apperr.FieldError
	if web.UTF16Len(req.ChildAgentID) > maxChildAgentID {
		bad = append(bad, apperr.FieldError{Field: "childAgentId", Reason: "must be at most 128 characters"})
	}
	if req.Purpose == "" || !web.ValidText(req.Purpose, maxPurpose) {
		bad = append(bad, apperr.FieldError{Field: "purpose", Reason: "must be 1 to 1024 characters of text (no control characters but tab and line breaks)"})
	}
	if len(bad) > 0 {
		return apperr.FieldsInvalid(bad...)
	}
	p := tenancy.MustPrincipal(c)
	d, created, err := h.store.Create(c.Request().Context(), runs.Caller{TenantID: p.TenantID, KeyID: p.KeyID}, attemptID,
		*req.FencingToken, Request{ChildAgentID: req.ChildAgentID, Purpose: req.Purpose, Child: req.Child.Spec()})
	if err != nil {
		return err
	}
	if created {
		return web.Created(c, "/v1/delegations/"+d.DelegationID.String(), d.Version, d)
	}
	return web.JSONWithETag(c, http.StatusOK, d.Version, d)
}

func (h handlers) get(c echo.Context) error {
	id, err := web.PathUUID(c, "delegationId")
	if err != nil {
		return err
	}
	d, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, id)
	if err != nil {
		return err
	}
	return web.JSONWithETag(c, http.StatusOK, d.Version, d)
}

type cursor struct {
	CreatedAt    time.Time `json:"t"`
	DelegationID uuid.UUID `json:"d"`
}

func (h handlers) listByAttempt(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	limit, err := web.Limit(c)
	if err != nil {
		return err
	}
	var (
		cur cursor
		pos *Position
	)
	if ok, err := web.DecodeCursor(c, &cur); err != nil {
		return err
	} else if ok {
		pos = &Position{CreatedAt: cur.CreatedAt, DelegationID: cur.DelegationID}
	}
	ds, err := h.store.ListByAttempt(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID, pos, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, web.NewPage(ds, limit, func(last Delegation) any {
		return cursor{CreatedAt: last.CreatedAt, DelegationID: last.DelegationID}
	}))
}
