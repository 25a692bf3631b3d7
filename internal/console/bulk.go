package console

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/web"
)

// Bulk actions from the runs list (DESIGN.md 5b, "Admins act"): the rows ticked, or every
// run matching the list's filters, are cancelled or continued by a bulk operation. The
// first POST is a dry run that shows the count and asks to confirm; the confirmation's POST
// creates the operation and leads to its progress page. Both are console writes, so the
// session's CSRF token and the same-origin check guard them.

type bulkView struct {
	Action  string
	All     bool
	RunIDs  []string
	Query   string // the runs list's filters, as its query string
	Matched int64
	Problem string
	// OpKey is the confirmation's idempotency key, new on each review: the confirmation
	// sent twice is one operation, the action reviewed again later a new one.
	OpKey string
}

// opKeyPrefix starts the idempotency key of a bulk action confirmed in the console.
const opKeyPrefix = "console-bulk:"

// bulkRequest reads the form: action, the ticked runId values or all=1 with the list's
// query (filter), decoded by the API's strict decoder.
func bulkRequest(ctx echo.Context) (api.BulkRunsRequest, bulkView, error) {
	if err := ctx.Request().ParseForm(); err != nil {
		return api.BulkRunsRequest{}, bulkView{}, err
	}
	form := ctx.Request().PostForm
	v := bulkView{Action: form.Get("action"), All: form.Get("all") == "1", RunIDs: form["runId"], Query: form.Get("filter")}
	body := map[string]any{"action": v.Action}
	if v.All {
		q, err := url.ParseQuery(v.Query)
		if err != nil {
			return api.BulkRunsRequest{}, v, apperr.FieldsInvalid(api.FieldError{Field: "filter", Reason: "is not a query"})
		}
		// The bulk filter has no attempt count: widening the action past the list shown
		// would act on runs the admin did not see.
		for _, name := range []string{"attemptsMin", "attemptsMax", "firstRelease", "notFirstRelease"} {
			if strings.TrimSpace(q.Get(name)) != "" {
				return api.BulkRunsRequest{}, v, apperr.FieldsInvalid(api.FieldError{Field: "filter." + name,
					Reason: "a bulk action cannot select by the run's attempts; tick the runs instead"})
			}
		}
		f := map[string]any{}
		for form, member := range map[string]string{"state": "state", "band": "band", "project": "projectId",
			"subject": "subject", "kind": "kind", "agent": "agentId", "outcome": "outcome", "errorCode": "errorCode",
			"release": "releaseId", "tag": "tag"} {
			if s := strings.TrimSpace(q.Get(form)); s != "" {
				f[member] = s
			}
		}
		// The not* lists (an insight's "other" group) go as the arrays the API takes.
		for form, member := range map[string]string{"notProject": "notProjectId", "notAgent": "notAgentId", "notKind": "notKind",
			"notRelease": "notReleaseId", "notErrorCode": "notErrorCode"} {
			if vs := q[form]; len(vs) > 0 {
				f[member] = vs
			}
		}
		// hasError and hasRelease go as the booleans the API takes; anything else is refused by
		// its decoder.
		for _, name := range []string{"hasError", "hasRelease"} {
			switch s := strings.TrimSpace(q.Get(name)); s {
			case "true", "false":
				f[name] = s == "true"
			case "":
			default:
				f[name] = s
			}
		}
		for form, member := range map[string]string{"from": "queuedFrom", "to": "queuedTo", "endedFrom": "endedFrom", "endedTo": "endedTo"} {
			t, err := parseTime(q.Get(form))
			if err != nil {
				return api.BulkRunsRequest{}, v, apperr.FieldsInvalid(api.FieldError{Field: "filter." + member, Reason: "is not a time"})
			}
			if t != nil {
				f[member] = api.NewTime(*t)
			}
		}
		body["filter"] = f
	} else {
		body["runIds"] = v.RunIDs
	}
	raw, _ := json.Marshal(body)
	var req api.BulkRunsRequest
	if err := web.BindJSON(ctx, raw, &req); err != nil {
		return api.BulkRunsRequest{}, v, err
	}
	return req, v, nil
}

func (c *console) bulkRuns(ctx echo.Context) error {
	req, v, err := bulkRequest(ctx)
	if err == nil && len(v.RunIDs) == 0 && !v.All {
		v.Problem = "Tick the runs to act on, or “all matching this filter”."
		return c.render(ctx, http.StatusBadRequest, "bulk", page{Title: "Bulk action", Nav: "runs", Data: v})
	}
	if err != nil {
		v.Problem = refusal("The bulk action was refused", err)
		return c.render(ctx, http.StatusBadRequest, "bulk", page{Title: "Bulk action", Nav: "runs", Data: v})
	}
	s := sessionOf(ctx)
	caller := runs.Caller{TenantID: s.TenantID, KeyID: s.KeyID}
	req.DryRun = formValue(ctx, "confirmed") != "1"
	if req.DryRun {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		v.OpKey = opKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	} else if k := formValue(ctx, "opKey"); k != "" {
		if !strings.HasPrefix(k, opKeyPrefix) || len(k) > 64 {
			v.Problem = "The confirmation is damaged; review the action again."
			return c.render(ctx, http.StatusBadRequest, "bulk", page{Title: "Bulk action", Nav: "runs", Data: v})
		}
		req.IdempotencyKey = &k
	}
	op, _, err := c.Operations.Create(ctx.Request().Context(), caller, req)
	switch {
	case apperr.Is(err, api.CodeBulkTooLarge), apperr.Is(err, api.CodeInvalidRequest), apperr.Is(err, api.CodeIdempotencyKeyReused):
		v.Problem = refusal("The bulk action was refused", err)
		return c.render(ctx, http.StatusUnprocessableEntity, "bulk", page{Title: "Bulk action", Nav: "runs", Data: v})
	case err != nil:
		return err
	case req.DryRun:
		v.Matched = op.Matched
		return c.render(ctx, http.StatusOK, "bulk", page{Title: "Bulk action", Nav: "runs", Data: v})
	}
	return ctx.Redirect(http.StatusSeeOther, "/ui/operations/"+op.OperationID.String())
}

func (c *console) operationPage(ctx echo.Context) error {
	id, err := uuid.Parse(ctx.Param("operationId"))
	if err != nil {
		return c.notFound(ctx)
	}
	op, err := c.Operations.Get(ctx.Request().Context(), tenantOf(ctx), id)
	if err != nil {
		return c.orNotFound(ctx, err)
	}
	return c.render(ctx, http.StatusOK, "operation", page{Title: "Bulk " + string(op.Action), Nav: "runs", Data: op})
}
