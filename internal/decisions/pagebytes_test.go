package decisions_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/web"
)

// TestListPagesBoundedInBytes: an attempt's pending decisions of 12 KB each, as many as it
// may have, make more than a page's byte budget; every listing that shows them (the inbox,
// the attempt's decisions, its timeline) stops each page within the budget with a
// nextCursor, and following the cursors lists every decision once.
func TestListPagesBoundedInBytes(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	c := s.client(t)
	cl := s.claim(t, c, "bytes:1")
	path := "/v1/attempts/" + cl.Attempt.AttemptID + "/decisions"
	options := `"` + strings.Repeat("o", 12_000) + `"`
	for i := 0; i < decisions.DefaultMaxPending; i++ {
		apitest.Want(t, s.Do(t, http.MethodPost, path, c.runtime,
			fmt.Sprintf(`{"fencingToken":%d,"kind":"input","options":%s}`, cl.Lease.FencingToken, options), nil), http.StatusCreated, "")
	}
	for _, list := range []string{"/v1/decisions?status=pending&limit=500", path + "?limit=500", "/v1/attempts/" + cl.Attempt.AttemptID + "/timeline?limit=500"} {
		seen, pages, cursor := map[string]bool{}, 0, ""
		for {
			p := list
			if cursor != "" {
				p += "&cursor=" + url.QueryEscape(cursor)
			}
			r := s.Do(t, http.MethodGet, p, c.admin, "", nil)
			apitest.Want(t, r, http.StatusOK, "")
			pages++
			if len(r.Body) > web.MaxPageBytes+256 {
				t.Fatalf("%s: page %d is %d bytes, past the budget of %d", list, pages, len(r.Body), web.MaxPageBytes)
			}
			page := apitest.DecodeAs[struct {
				Items []struct {
					DecisionID string `json:"decisionId"`
					Kind       string `json:"kind"`
					ID         string `json:"id"`
				} `json:"items"`
				NextCursor string `json:"nextCursor"`
			}](t, r)
			for _, it := range page.Items {
				id := it.DecisionID + it.ID
				if seen[id] {
					t.Fatalf("%s: %s listed twice", list, id)
				}
				seen[id] = true
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if len(seen) != decisions.DefaultMaxPending || pages < 2 {
			t.Errorf("%s: %d items on %d pages, want %d on more than one", list, len(seen), pages, decisions.DefaultMaxPending)
		}
	}
}
