package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestWritePageBoundedInBytes: a page holds at most limit items, stops before the item that
// would take it past MaxPageBytes (with a cursor of the last item it holds), and always holds
// one item, however large.
func TestWritePageBoundedInBytes(t *testing.T) {
	t.Parallel()
	type row struct{ N, Size int }
	rows := func(sizes ...int) []row {
		out := make([]row, len(sizes))
		for i, s := range sizes {
			out[i] = row{i, s}
		}
		return out
	}
	const kb = 1 << 10
	for _, tc := range []struct {
		name  string
		rows  []row
		limit int
		items int
		next  int // the row the cursor names; -1: no cursor
	}{
		{"all fit", rows(10, 10, 10), 5, 3, -1},
		{"limit first", rows(10, 10, 10), 2, 2, 1},
		{"bytes first", rows(300*kb, 300*kb, 300*kb, 300*kb, 300*kb), 10, 3, 2},
		{"one past the budget alone", rows(MaxPageBytes+kb, 10), 10, 1, 0},
		{"none", rows(), 10, 0, -1},
	} {
		c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder())
		rec := c.Response().Writer.(*httptest.ResponseRecorder)
		err := WritePage(c, tc.rows, tc.limit, func(last row) any { return last.N },
			func(r row) map[string]any { return map[string]any{"n": r.N, "pad": strings.Repeat("x", r.Size)} })
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || page.Items == nil {
			t.Fatalf("%s: %v %.100s", tc.name, err, rec.Body)
		}
		want := ""
		if tc.next >= 0 {
			want = EncodeCursor(tc.next)
		}
		if len(page.Items) != tc.items || page.NextCursor != want {
			t.Errorf("%s: %d items, cursor %q; want %d, %q", tc.name, len(page.Items), page.NextCursor, tc.items, want)
		}
		if tc.items > 1 && rec.Body.Len() > MaxPageBytes+100 {
			t.Errorf("%s: a page of %d bytes", tc.name, rec.Body.Len())
		}
	}
}

// TestWritePageCountsBytesAsSent: characters that HTML escaping would send as six bytes
// (<, >, &) count as what is sent. The page was counted before it was escaped, so one item
// of a 900 KiB input of < reached 5.4 MB, and three of 300 KiB went one to a page.
func TestWritePageCountsBytesAsSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sizes []int
		items int
	}{
		{"one large", []int{900 << 10}, 1},
		{"three fit", []int{300 << 10, 300 << 10, 300 << 10, 300 << 10}, 3},
	} {
		c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder())
		rec := c.Response().Writer.(*httptest.ResponseRecorder)
		err := WritePage(c, tc.sizes, 10, func(last int) any { return last },
			func(n int) map[string]any { return map[string]any{"input": strings.Repeat("<&>", n/3)} })
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Items []struct{ Input string } `json:"items"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != tc.items || rec.Body.Len() > MaxPageBytes {
			t.Errorf("%s: %d items in %d bytes; want %d items in at most %d", tc.name, len(page.Items), rec.Body.Len(), tc.items, MaxPageBytes)
		}
		if page.Items[0].Input != strings.Repeat("<&>", tc.sizes[0]/3) {
			t.Errorf("%s: the input did not travel whole", tc.name)
		}
	}
}

// TestFilterKeyHashesEveryValue: a repeated (list) parameter's every item makes the key, in
// its order; a single value keys as it did before lists; cursor and limit never count.
func TestFilterKeyHashesEveryValue(t *testing.T) {
	t.Parallel()
	key := func(query string) string {
		return FilterKey(echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/?"+query, nil), httptest.NewRecorder()))
	}
	a, ab, ba := key("notAgentId=a"), key("notAgentId=a&notAgentId=b"), key("notAgentId=b&notAgentId=a")
	if a == ab || ab == ba || a == "" {
		t.Fatalf("keys of [a], [a b], [b a]: %q %q %q", a, ab, ba)
	}
	if ab != key("limit=2&notAgentId=a&cursor=x&notAgentId=b") {
		t.Fatal("cursor or limit changed the key")
	}
	if key("") != "" || key("limit=5") != "" {
		t.Fatal("no filter has a key")
	}
}
