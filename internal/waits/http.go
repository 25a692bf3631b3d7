package waits

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
	"github.com/ledger-dev/ledger/internal/tenancy/admission"
	"github.com/ledger-dev/ledger/internal/web"
)

// Get answers a GET of one row by the path parameter idParam that may wait for the row's
// final state (api.WaitParams): the wait holds one of the tenant's waiting-read slots
// (none free: it answers at once, admission.HoldWait), read waits up to the time granted,
// and the row goes out with its ETag. The handlers of such reads (a decision's close, a
// run's end) differ only in read and in what the row sends.
func Get[T any](c echo.Context, idParam string,
	read func(ctx context.Context, tenantID string, id uuid.UUID, wait time.Duration) (T, error),
	answer func(T) (sqldb.RowVersion, any),
) error {
	id, err := web.PathUUID(c, idParam)
	if err != nil {
		return err
	}
	var q api.WaitParams
	if err := web.BindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.Request().Context()
	wait, release := admission.HoldWait(ctx, q.Wait())
	defer release()
	row, err := read(ctx, tenancy.MustPrincipal(c).TenantID, id, wait)
	if err != nil {
		return err
	}
	version, body := answer(row)
	return web.JSONWithETag(c, http.StatusOK, version, body)
}
