package apitest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// CheckAppend posts body as key to path, an append of a record (calls, checkpoints), through
// s.Handler and fails t unless the answer is one a client is promised (never a 500): 201
// wrote one record more, 200 (a repeat) and a refusal (400, 404, 409, 413) wrote nothing.
// state reads what a write changes (the records' count and a version); noun names the
// records in failures.
func CheckAppend(t *testing.T, s *Stack, path, key string, body []byte, noun string, state func(t *testing.T) (int, sqldb.RowVersion)) {
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
