package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/web"
)

// Run actions (DESIGN.md section 5b, "Admins act"): the run page's cancel and continue.
// Each is asked for on the page (a GET with confirm=…, which changes nothing) and done by
// the confirmation's POST, which the session's CSRF token and the same-origin check guard
// like every console write; the continue's due time goes through the API's strict decoder.

// runConfirm is what the run page asks to confirm: "" (nothing), cancel or continue.
func runConfirm(ctx echo.Context, run runs.Run) string {
	switch ctx.QueryParam("confirm") {
	case "cancel":
		if run.State != api.RunEnded {
			return "cancel"
		}
	case "continue":
		if run.State == api.RunEnded && !run.NoAttemptLeft() {
			return "continue"
		}
	case "fork":
		return "fork"
	}
	return ""
}

// forkPoints are the checkpoints the run page offers to fork from: each attempt's last.
func forkPoints(as []attempts.Attempt) []forkPoint {
	var out []forkPoint
	for i, a := range as {
		if a.LastCheckpointID.Valid {
			out = append(out, forkPoint{ID: a.LastCheckpointID.UUID.String(),
				Label: fmt.Sprintf("the last checkpoint of attempt %d (epoch %d, %s)", len(as)-i, a.FencingToken, a.State)})
		}
	}
	return out
}

type forkPoint struct{ ID, Label string }

// forkKeyPrefix starts the idempotency key of a fork confirmed in the console, so the
// tenant's own keys (enqueue's and the API's forks') never meet one by chance.
const forkKeyPrefix = "console-fork:"

func (c *console) forkRun(ctx echo.Context) error {
	id, err := c.pathUUID(ctx, "runId")
	if err != nil {
		return c.notFound(ctx)
	}
	s := sessionOf(ctx)
	body := map[string]any{"checkpointId": formValue(ctx, "checkpointId")}
	if key := formValue(ctx, "forkKey"); key != "" {
		if !strings.HasPrefix(key, forkKeyPrefix) {
			return c.runRefused(ctx, http.StatusBadRequest, "The fork's confirmation is damaged; open it again.")
		}
		body["idempotencyKey"] = key
	}
	raw, _ := json.Marshal(body)
	var req api.ForkRequest
	if err := web.BindJSON(ctx, raw, &req); err != nil {
		return c.runRefused(ctx, http.StatusBadRequest, refusal("The fork was refused", err))
	}
	fork, _, err := c.Runs.Fork(ctx.Request().Context(), runs.Caller{TenantID: s.TenantID, KeyID: s.KeyID}, id,
		runs.Fork{CheckpointID: req.CheckpointID, IdempotencyKey: req.IdempotencyKey})
	switch {
	case err == nil:
		return ctx.Redirect(http.StatusSeeOther, "/ui/runs/"+fork.RunID.String()+"?done=fork")
	case apperr.Is(err, api.CodeIdempotencyKeyReused):
		return c.runRefused(ctx, http.StatusConflict, "This confirmation already forked the run from another checkpoint; open the fork again.")
	case apperr.Is(err, api.CodeInvalidRequest):
		return c.runRefused(ctx, http.StatusBadRequest, refusal("The fork was refused", err))
	default:
		return c.orNotFound(ctx, err)
	}
}

func (c *console) cancelRun(ctx echo.Context) error {
	id, err := c.pathUUID(ctx, "runId")
	if err != nil {
		return c.notFound(ctx)
	}
	if _, err := c.Runs.Cancel(ctx.Request().Context(), tenantOf(ctx), id); err != nil {
		return c.orNotFound(ctx, err)
	}
	return ctx.Redirect(http.StatusSeeOther, "/ui/runs/"+id.String()+"?done=cancel")
}

func (c *console) continueRun(ctx echo.Context) error {
	id, err := c.pathUUID(ctx, "runId")
	if err != nil {
		return c.notFound(ctx)
	}
	rctx, s := ctx.Request().Context(), sessionOf(ctx)
	body := map[string]any{}
	if due := formValue(ctx, "dueAt"); due != "" {
		t, err := parseTime(due)
		if err != nil || t == nil {
			return c.runRefused(ctx, http.StatusBadRequest, "The due time is not a time.")
		}
		body["dueAt"] = api.NewTime(*t)
	}
	raw, _ := json.Marshal(body)
	var req api.ContinueRequest
	if err := web.BindJSON(ctx, raw, &req); err != nil {
		return c.runRefused(ctx, http.StatusBadRequest, refusal("The continue was refused", err))
	}
	cont := runs.Continuation{}
	if req.DueAt != nil {
		t := req.DueAt.Time
		cont.DueAt = &t
	}
	next, _, err := c.Runs.Continue(rctx, runs.Caller{TenantID: s.TenantID, KeyID: s.KeyID}, id, cont)
	switch {
	case err == nil:
		return ctx.Redirect(http.StatusSeeOther, "/ui/runs/"+next.RunID.String()+"?done=continue")
	case apperr.Is(err, api.CodeAttemptsExhausted):
		return c.runRefused(ctx, http.StatusConflict, "This run has spent all its attempts: it cannot be continued.")
	case apperr.Is(err, api.CodeIllegalTransition):
		return c.runRefused(ctx, http.StatusConflict, "Only an ended run can be continued; this one has not ended.")
	default:
		return c.orNotFound(ctx, err)
	}
}

// runRefused shows the run page as it is now with why an action was not done.
func (c *console) runRefused(ctx echo.Context, status int, msg string) error {
	return c.renderRun(ctx, status, msg)
}
