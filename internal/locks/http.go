package locks

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/web"
)

// Routes registers the task run lock routes.
func Routes(s *web.Server, store *Store) {
	h := handlers{store: store}
	rt := tenancy.RoleRuntime
	s.Route(http.MethodPut, "/v1/locks/agents/:agentId/tasks/:taskId", web.Op{
		ID: "acquireTaskLock", Tag: "Locks", Summary: "Take or renew a task run lock",
		Description: "Takes the lock of an agent's task for ttlSeconds, or renews it for the same holder; 409 lock_held " +
			"(with heldUntil) while another holder has it. An expired lock can be taken by anyone.",
		Roles: []string{rt}, Body: api.LockRequest{}, Example: api.LockRequest{HolderID: "worker-7", TTLSeconds: 300},
		Status: http.StatusOK, Response: api.TaskLock{}, Problems: []api.ProblemCode{api.CodeLockHeld},
	}, h.acquire)
	s.Route(http.MethodDelete, "/v1/locks/agents/:agentId/tasks/:taskId", web.Op{
		ID: "releaseTaskLock", Tag: "Locks", Summary: "Release a task run lock",
		Description: "Releases the lock for its holder (204, also when nobody holds it); 409 lock_held while another holder has it.",
		Roles:       []string{rt}, Status: http.StatusNoContent,
		Query: api.ReleaseLockParams{}, Problems: []api.ProblemCode{api.CodeLockHeld},
	}, h.release)
}

type handlers struct{ store *Store }

func lockPath(c echo.Context) (agentID, taskID string, err error) {
	if agentID, err = web.PathIdent(c, "agentId"); err != nil {
		return "", "", err
	}
	taskID, err = web.PathIdent(c, "taskId")
	return agentID, taskID, err
}

func (h handlers) acquire(c echo.Context) error {
	agentID, taskID, err := lockPath(c)
	if err != nil {
		return err
	}
	var req api.LockRequest
	if err := web.Bind(c, &req, false); err != nil {
		return err
	}
	l, _, err := h.store.Acquire(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, agentID, taskID,
		req.HolderID, time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, l.Wire())
}

func (h handlers) release(c echo.Context) error {
	agentID, taskID, err := lockPath(c)
	if err != nil {
		return err
	}
	var q api.ReleaseLockParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	if err := h.store.Release(c.Request().Context(), tenancy.MustPrincipal(c).TenantID, agentID, taskID, q.HolderID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
