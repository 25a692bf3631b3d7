package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

// TestConsoleRefusesUnreadableQueryStrings is issue 30 item 7: /ui/runs?project=zz;x=1
// showed every run (Go dropped the pair, and the filter with it) where the API answers
// 400. The console answers 400 too, as a page, listing nothing.
func TestConsoleRefusesUnreadableQueryStrings(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	run := tn.Enqueue("listed", "batch")
	c, _, _ := httpSession(t, s, tn.Admin)
	if code, body := get(t, c, s, "/ui/runs?project=p1"); code != http.StatusOK || !strings.Contains(body, "listed") {
		t.Fatalf("the filtered list: %d", code)
	}
	for _, path := range []string{"/ui/runs?project=zz;x=1", "/ui/runs?project=%zz", "/ui/decisions?status=pending;x"} {
		code, body := get(t, c, s, path)
		if code != http.StatusBadRequest || !strings.Contains(body, "cannot be read") || strings.Contains(body, run.RunID.String()[:8]) {
			t.Errorf("%s: %d, want a 400 page that lists nothing", path, code)
		}
	}
}

// TestConsoleNewProjectFromTheFormOnly: the project id of a new project is read from the
// form, never from the query string (a link could otherwise choose it).
func TestConsoleNewProjectFromTheFormOnly(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Config{Serve: true})
	tn := s.NewTenant(t)
	c, csrf, _ := httpSession(t, s, tn.Admin)
	post := func(path string, form url.Values) int {
		form.Set("csrf", csrf)
		r, err := c.PostForm(s.URL+path, form)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if code := post("/ui/projects?projectId=from-query", url.Values{}); code != http.StatusBadRequest {
		t.Errorf("a project id in the query string only: %d, want 400", code)
	}
	if code := post("/ui/projects?projectId=from-query", url.Values{"projectId": {"from-form"}}); code != http.StatusSeeOther {
		t.Errorf("a project id in the form: %d, want 303", code)
	}
	tn.Must(http.StatusNotFound, http.MethodGet, "/v1/projects/from-query", tn.Admin, nil)
	tn.Must(http.StatusOK, http.MethodGet, "/v1/projects/from-form", tn.Admin, nil)
}

// TestConsoleSignInDuringDatabaseFailure: a sign-in while the database cannot be written
// (here its file was moved away under the process, which fails every write as
// unavailable) answers a 503 page, not the API's problem+json.
func TestConsoleSignInDuringDatabaseFailure(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sqldb.Open(context.Background(), sqldb.Config{DSN: path, Logger: apitest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	mg.Close()
	s := apitest.New(t, apitest.Config{Serve: true, DB: db})
	tn := s.NewTenant(t)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: noRedirect.CheckRedirect}
	_, page := get(t, c, s, "/ui/signin")
	tok := regexp.MustCompile(`name="signin" value="([^"]+)"`).FindStringSubmatch(page)
	if tok == nil {
		t.Fatal("no sign-in token")
	}
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	r, err := c.PostForm(s.URL+"/ui/signin", url.Values{"signin": {tok[1]}, "key": {tn.Admin}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(b), "database is unavailable") {
		t.Fatalf("sign-in with the database unavailable: %d %s %.300s", r.StatusCode, r.Header.Get("Content-Type"), b)
	}
}
