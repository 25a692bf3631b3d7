package client_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/ledger-dev/ledger/client"
)

// TestErrorOfStaysInTheServicesBounds: whatever a handler returns or panics with, what the
// Worker sends is an error the service accepts (code alphabet, message of at most 2,000
// UTF-16 code units of text, details of at most 16 KiB).
func TestErrorOfStaysInTheServicesBounds(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("𝄞", 1500) // 3,000 UTF-16 code units
	deep := errors.New("root")
	for range 100 {
		deep = errors.Join(deep, errors.New(strings.Repeat("x", 1000)))
	}
	type weird struct{ error }
	for name, e := range map[string]struct {
		err      error
		panicked any
		code     string
	}{
		"long message":  {err: errors.New(long), code: "error"},
		"control chars": {err: errors.New("a\x00b\x1bc\nd"), code: "error"},
		"deep chain":    {err: deep, code: "error"},
		"unnamed type":  {err: weird{errors.New("w")}, code: "client_test.weird"},
		"panic":         {panicked: strings.Repeat("p", 5000), code: "panic"},
	} {
		var got = client.ErrorOf(e.err)
		if e.panicked != nil {
			got = client.PanicError(e.panicked, []byte(strings.Repeat("goroutine 1 [running]:\nmain.f()\n", 10000)))
		}
		if got == nil || got.Code != e.code {
			t.Fatalf("%s: %+v, want code %s", name, got, e.code)
		}
		if n := len(utf16.Encode([]rune(got.Message))); n > 2000 || strings.ContainsAny(got.Message, "\x00\x1b") {
			t.Fatalf("%s: message of %d UTF-16 units: %q", name, n, got.Message[:min(40, len(got.Message))])
		}
		if len(got.Details) > 16384 || !json.Valid(got.Details) {
			t.Fatalf("%s: details of %d bytes", name, len(got.Details))
		}
	}
	if client.ErrorOf(nil) != nil || client.ErrorOf(client.Permanent(nil)) != nil {
		t.Fatal("no error, no error")
	}
}
