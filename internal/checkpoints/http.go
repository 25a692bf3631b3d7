package checkpoints

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Routes registers the checkpoint routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	s.Route(http.MethodPost, "/v1/attempts/:attemptId/checkpoints", web.Op{
		ID: "appendCheckpoint", Tag: "Checkpoints", Summary: "Append a checkpoint under the lease",
		Description: "Appends a checkpoint (201 with Location); its phase becomes the attempt's. An exact repeat of a sequence " +
			"answers 200 with the stored checkpoint (also after the lease ended), another hash for the sequence is 409 " +
			"sequence_conflict. Fenced.",
		Roles: []string{tenancy.RoleRuntime}, Body: api.CheckpointRequest{},
		Example: api.CheckpointRequest{FencingToken: 4, Sequence: api.Ptr(int32(3)), Phase: api.Ptr(api.PhaseActing),
			AdapterStateRef: "s3://acme-agent-state/run-42/3", AdapterVersion: "1.4.0", Hash: "sha256:5d41"},
		Status: http.StatusOK, AlsoStatus: []int{http.StatusCreated}, Response: api.Checkpoint{},
		Problems: []api.ProblemCode{api.CodeNotFound, api.CodeStaleLease, api.CodeLeaseExpired, api.CodeAttemptEnded, api.CodeSequenceConflict},
	}, h.append)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/checkpoints", web.Op{
		ID: "listCheckpoints", Tag: "Checkpoints", Summary: "List an attempt's checkpoints in sequence order", Status: http.StatusOK, Response: api.Page[api.Checkpoint]{},
		Query:    api.PageParams{},
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.list)
	s.Route(http.MethodGet, "/v1/attempts/:attemptId/checkpoints/:checkpointId", web.Op{
		ID: "getCheckpoint", Tag: "Checkpoints", Summary: "Read one checkpoint", Status: http.StatusOK, Response: api.Checkpoint{},
		Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.get)
	s.Route(http.MethodGet, "/v1/runs/:runId/checkpoints/last", web.Op{
		ID: "getLastCheckpoint", Tag: "Checkpoints", Summary: "Read the run's last checkpoint",
		Description: "The run's last checkpoint (its newest attempt's highest sequence) or, when it has none, that of the run " +
			"it continues, back the chain, so a continued run resumes; runId says which run wrote it. 404 when none has one.",
		Status: http.StatusOK, Response: api.LastCheckpoint{}, Problems: []api.ProblemCode{api.CodeNotFound},
	}, h.last)
}

type handlers struct{ store *Store }

func location(c Checkpoint) string {
	return web.Path("v1", "attempts", c.AttemptID.String(), "checkpoints", c.CheckpointID.String())
}

func (h handlers) append(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var req api.CheckpointRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	n := Draft{
		Sequence: int(*req.Sequence), Phase: *req.Phase, AdapterStateRef: req.AdapterStateRef,
		AdapterVersion: req.AdapterVersion, ContextSnapshotRef: req.ContextSnapshotRef, Hash: req.Hash,
	}
	cp, created, err := h.store.Append(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID, req.FencingToken, n)
	if err != nil {
		return err
	}
	if created {
		// Checkpoints are immutable and have no version: a Location, no ETag.
		c.Response().Header().Set(echo.HeaderLocation, location(cp))
		return c.JSON(http.StatusCreated, cp.Wire())
	}
	return c.JSON(http.StatusOK, cp.Wire())
}

func (h handlers) get(c echo.Context) error {
	attemptID, err := web.PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	id, err := web.PathUUID(c, "checkpointId")
	if err != nil {
		return err
	}
	cp, err := h.store.Get(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, attemptID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cp.Wire())
}

func (h handlers) list(c echo.Context) error {
	return web.ListBySequence(c, Start, func(x Checkpoint) int { return x.Sequence }, Checkpoint.Wire,
		func(ctx context.Context, attemptID uuid.UUID, after, limit int) ([]Checkpoint, error) {
			return h.store.List(ctx, tenancy.MustPrincipal(c).TenantID, attemptID, after, limit)
		})
}

func (h handlers) last(c echo.Context) error {
	runID, err := web.PathUUID(c, "runId")
	if err != nil {
		return err
	}
	lc, err := h.store.Last(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, runID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, lc.Wire())
}
