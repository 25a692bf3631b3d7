package apitest

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// Pages reads the list at path (no query of its own) as key, limit items a page, following
// nextCursor to the end, and returns every item in order. More pages than maxPages fails
// the test: a cursor that does not move on would loop.
func Pages[T any](t testing.TB, s *Stack, path, key string, limit, maxPages int) []T {
	t.Helper()
	first := path + "?limit=" + strconv.Itoa(limit)
	var items []T
	next := first
	for pages := 0; next != ""; pages++ {
		if pages == maxPages {
			t.Fatalf("%s: more than %d pages", path, maxPages)
		}
		r := s.Do(t, http.MethodGet, next, key, "", nil)
		WantStatus(t, r, http.StatusOK)
		page := DecodeAs[struct {
			Items      []T    `json:"items"`
			NextCursor string `json:"nextCursor"`
		}](t, r)
		items = append(items, page.Items...)
		next = ""
		if page.NextCursor != "" {
			next = first + "&cursor=" + url.QueryEscape(page.NextCursor)
		}
	}
	return items
}
