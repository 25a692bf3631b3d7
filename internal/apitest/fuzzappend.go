package apitest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// FuzzAppend fuzzes the append of an attempt's records (calls, checkpoints): arbitrary
// bytes go as the body of POST /v1/attempts/{id}/<records> through s's real handler stack
// (auth, body limit, strict binding, validation, the fenced store), and the answer must be
// one a client is promised (never a 500): 201 wrote one record more, 200 (a repeat) and a
// refusal (400, 404, 409, 413) wrote nothing. The attempt's lease is held at fencing token
// 1 on a clock that never moves, so the valid bodies of the seed corpus are accepted,
// repeated or conflict. state reads what a write changes (the records' count and a
// version) for the tenant's attempt.
func FuzzAppend(f *testing.F, s *Stack, records string, state func(t *testing.T, tenant string, attemptID uuid.UUID) (int, sqldb.RowVersion)) {
	tenant, _, rt := s.TenantKeys(f)
	l := s.Lease(f, rt)
	if l.Token != 1 {
		f.Fatalf("first claim of a fresh tenant has token %d; the seed corpus assumes 1", l.Token)
	}
	attemptID := uuid.MustParse(l.AttemptID)
	path := "/v1/attempts/" + l.AttemptID + "/" + records
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAppend(t, s, path, rt, body, records, func(t *testing.T) (int, sqldb.RowVersion) { return state(t, tenant, attemptID) })
	})
}

func checkAppend(t *testing.T, s *Stack, path, key string, body []byte, noun string, state func(t *testing.T) (int, sqldb.RowVersion)) {
	t.Helper()
	beforeN, beforeV := state(t)
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	afterN, afterV := state(t)
	t.Logf("status %d", rec.Code)
	switch rec.Code {
	case http.StatusCreated:
		if afterN != beforeN+1 {
			t.Fatalf("201 but %d %s before, %d after", beforeN, noun, afterN)
		}
	case http.StatusOK:
		if afterN != beforeN || afterV != beforeV {
			t.Fatalf("a repeat (200) wrote: %d -> %d %s, version %d -> %d", beforeN, afterN, noun, beforeV, afterV)
		}
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge:
		if afterN != beforeN || afterV != beforeV {
			t.Fatalf("refused with %d but wrote: %d -> %d %s, version %d -> %d; body %q",
				rec.Code, beforeN, afterN, noun, beforeV, afterV, body)
		}
	default:
		t.Fatalf("status %d for body %q: %s", rec.Code, body, rec.Body.Bytes())
	}
}
