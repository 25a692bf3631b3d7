package releases_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/releases"
)

// writes is a fingerprint of everything a request could have written: the database-wide
// rowversion counter (every insert and update of a versioned table advances it) and the
// number of release rows.
func (s *stack) writes(t testing.TB) [2]int64 {
	t.Helper()
	var w [2]int64
	if err := s.db.Raw().QueryRow(`SELECT (SELECT Value FROM RowVersionCounter), (SELECT COUNT(*) FROM LoadedReleases)`).Scan(&w[0], &w[1]); err != nil {
		t.Fatal(err)
	}
	return w
}

// FuzzReleaseRequest sends arbitrary PUT bodies (and If-Match values) through the whole
// HTTP stack. No answer may be a 5xx; a 400 must write nothing; a 2xx must answer the
// release as a later GET reads it. With fixHash set, a body whose contentRefs has a
// canonical form gets the matching manifestHash, so the fuzzer reaches the store's rules
// (creates, repeats, transitions, immutability) and not only the manifest check.
func FuzzReleaseRequest(f *testing.F) {
	s := newStack(f)
	tenant, _, runtime := s.tenantKeys(f)
	seeds := []struct {
		body    string
		fixHash bool
		ifMatch string
		adapter uint8
	}{
		{putBody(f, refsA, "active", ""), false, "", 0},
		{putBody(f, refsA, "verified", "cancel"), false, "", 1},
		{putBody(f, refsA, "draining", "drain"), false, `"0000000000000001"`, 0},
		{`{"manifestHash":"","contentRefs":[],"state":"active"}`, true, "", 2},
		{`{"manifestHash":"","contentRefs":[{"b":1,"a":[1.0,"\u00e9",null]}],"state":"verified","inFlightPolicy":"cancel"}`, true, "", 0},
		{`{"manifestHash":"","contentRefs":[],"state":"retired"}`, true, `"0000000000000002"`, 2},
		{`{"manifestHash":"` + strings.Repeat("0", 64) + `","contentRefs":[],"state":"active"}`, false, "", 1},
		{`{"manifestHash":"x","contentRefs":{},"state":"nope","extra":1}`, false, "", 0},
		{`{"contentRefs":[{"a":1,"a":2}]}`, true, "", 0},
		{`{"contentRefs":["\ud800"],"state":"active"}`, true, "", 0},
		{`[]`, false, "", 0},
		{``, false, "W/\"1\"", 0},
		{`{"manifestHash":null,"contentRefs":null,"state":null,"inFlightPolicy":null}`, true, "", 0},
	}
	for _, sd := range seeds {
		f.Add([]byte(sd.body), sd.fixHash, sd.ifMatch, sd.adapter)
	}
	adapters := []string{"1", "2", "3"}
	f.Fuzz(func(t *testing.T, body []byte, fixHash bool, ifMatch string, adapter uint8) {
		if fixHash {
			body = withFixedHash(body)
		}
		path := relPath(tenant+"-fuzz", adapters[int(adapter)%len(adapters)])
		header := map[string]string{}
		if ifMatch != "" && !strings.ContainsAny(ifMatch, "\r\n\x00") {
			header["If-Match"] = ifMatch
		}
		before := s.writes(t)
		r := s.do(t, http.MethodPut, path, runtime, string(body), header)
		after := s.writes(t)
		if r.Code >= 500 {
			t.Fatalf("%d for body %q: %s", r.Code, body, r.Body)
		}
		var p problem
		switch {
		case r.Code == http.StatusOK || r.Code == http.StatusCreated:
			var got wireRelease
			if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil || got.ReleaseID != tenant+"-fuzz" {
				t.Fatalf("%d with body %s", r.Code, r.Body)
			}
			read := s.do(t, http.MethodGet, path, runtime, "", nil)
			if read.Code != http.StatusOK || read.Header().Get("ETag") != r.Header().Get("ETag") || read.Body.String() != r.Body.String() {
				t.Fatalf("PUT answered %s (ETag %s) but GET reads %d %s (ETag %s)", r.Body, r.Header().Get("ETag"),
					read.Code, read.Body, read.Header().Get("ETag"))
			}
		case json.Unmarshal(r.Body.Bytes(), &p) != nil || p.Status != r.Code || p.Code == "":
			t.Fatalf("%d without a problem document: %s", r.Code, r.Body)
		}
		if r.Code == http.StatusBadRequest && before != after {
			t.Fatalf("a 400 wrote: %v -> %v (body %q: %s)", before, after, body, r.Body)
		}
		if r.Code >= 400 && before != after {
			t.Fatalf("a refused PUT (%d %s) wrote: %v -> %v", r.Code, p.Code, before, after)
		}
	})
}

// withFixedHash sets body's manifestHash to the hash of its contentRefs when body is a JSON
// object whose contentRefs has a canonical form; otherwise it returns body unchanged.
func withFixedHash(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return body
	}
	c, err := releases.Canonicalize(m["contentRefs"])
	if err != nil {
		return body
	}
	m["manifestHash"] = json.RawMessage(`"` + releases.ManifestHash(c) + `"`)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}
