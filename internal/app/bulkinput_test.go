package app_test

import (
	"net/http"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
)

// A bulk request whose action is none of cancel and continue is bad input: 400 naming
// action, for a dry run as for the real thing, and no operation is made. (It reached the
// database's CHECK constraint before, as 409 illegal_transition, and a dry run echoed it.)
func TestBulkActionOutsideItsEnumIsInvalid(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{})
	tn := s.NewTenant(t)
	run := tn.Enqueue("bulk-nuke", "batch")
	for _, body := range []string{
		`{"action":"nuke","runIds":["` + run.RunID.String() + `"]}`,
		`{"action":"nuke","filter":{},"dryRun":true}`,
		`{"action":"Cancel","filter":{"state":"queued"}}`,
	} {
		apitest.WantFields(t, s.Do(t, http.MethodPost, "/v1/runs/bulk", tn.Admin, body, nil), "action")
	}
	if n := s.Rows(t, "Operations", tn.ID); n != 0 {
		t.Fatalf("%d operations made of bad input", n)
	}
	var got api.Run
	tn.Must(http.StatusOK, http.MethodGet, "/v1/runs/"+run.RunID.String(), tn.Admin, nil).Decode(t, &got)
	if got.State != api.RunQueued || got.CancelRequestedAt != nil {
		t.Fatalf("the run changed: %+v", got)
	}
}
