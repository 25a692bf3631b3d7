package main

import (
	"strings"
	"testing"
)

// TestOTLPFlags: --otlp-endpoint takes an http(s) URL, --otlp-headers name=value pairs with
// percent-encoded values; a bad pair is refused without echoing it (it may hold a secret).
func TestOTLPFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		endpoint, headers string
		want              map[string]string
		err               string
	}{
		{"", "", nil, ""},
		{"http://127.0.0.1:4318/v1/traces", "authorization=Bearer%20t0k,x-team=agents", map[string]string{"authorization": "Bearer t0k", "x-team": "agents"}, ""},
		{"https://collector.example/v1/traces", "", map[string]string{}, ""},
		{"collector:4318", "", nil, "must be an http:// or https:// URL"},
		{"ftp://collector/v1/traces", "", nil, "must be an http:// or https:// URL"},
		{"http://127.0.0.1:4318/v1/traces", "authorization", nil, "each header is name=value"},
		{"http://127.0.0.1:4318/v1/traces", "authorization=%zzsecret", nil, "each header is name=value"},
		{"", "authorization=x", nil, "--otlp-headers needs --otlp-endpoint"},
	} {
		got, err := serveFlags{otlpEndpoint: c.endpoint, otlpHeaders: c.headers}.otlp()
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%q %q: error %v, want one saying %q", c.endpoint, c.headers, err, c.err)
			}
		case err != nil:
			t.Errorf("%q %q: %v", c.endpoint, c.headers, err)
		case got.Endpoint != c.endpoint || len(got.Headers) != len(c.want):
			t.Errorf("%q %q: %+v, want headers %v", c.endpoint, c.headers, got, c.want)
		default:
			for k, v := range c.want {
				if got.Headers[k] != v {
					t.Errorf("%q: header %s = %q, want %q", c.headers, k, got.Headers[k], v)
				}
			}
		}
	}
}
