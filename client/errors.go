package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ledger-dev/ledger/api"
)

// ErrorCoder is an error that names its own code for the ledger (1 to 64 characters of
// a-z, 0-9, '_', '.' and '-'); ErrorOf uses it instead of the error's type.
type ErrorCoder interface {
	ErrorCode() string
}

// Bounds of what ErrorOf and PanicError send: the service refuses a longer message (2,000
// UTF-16 code units) or larger details (16 KiB compacted); stacks and chains are cut well
// inside that.
const (
	maxErrorMessage = api.MaxErrorMessage
	maxStackLines   = 64
	maxStackBytes   = 8 << 10
	maxChain        = 8
	maxChainItem    = 512
	maxDetailsBytes = 12 << 10
)

// ErrorOf describes a handler's error for the ledger, as the Worker sends it: the code is
// the ErrorCoder's code when the error (or one it wraps) has a valid one, else the type of
// the innermost error of its chain that has a type of its own (not errors.New's or
// fmt.Errorf's), lowered and cut to the code's alphabet ("*fs.PathError" is
// "fs.patherror"; a chain of plain errors is "error"); the message is the error's
// own (Permanent and RetryAfter add nothing to it: they carry their cause), cut to the
// service's bound; the details hold the type and the chain of wrapped messages. Nil for a
// nil error.
func ErrorOf(err error) *api.AttemptError {
	err = causeOf(err)
	if err == nil {
		return nil
	}
	inner := innermost(err)
	code := ""
	var coder ErrorCoder
	if errors.As(err, &coder) && validCode(coder.ErrorCode()) {
		code = coder.ErrorCode()
	} else {
		code = codeOfType(inner)
	}
	details := map[string]any{"type": fmt.Sprintf("%T", inner)}
	if chain := chainOf(err); len(chain) > 1 {
		details["chain"] = chain
	}
	return &api.AttemptError{Code: code, Message: cleanText(err.Error(), maxErrorMessage), Details: marshalBounded(details)}
}

// PanicError describes a handler's panic: code "panic", the value as the message, and the
// stack (at most 64 lines, 8 KiB) in the details.
func PanicError(value any, stack []byte) *api.AttemptError {
	details := map[string]any{"type": fmt.Sprintf("%T", value), "stack": stackLines(stack)}
	return &api.AttemptError{Code: "panic", Message: cleanText(fmt.Sprint(value), maxErrorMessage), Details: marshalBounded(details)}
}

// causeOf takes off the Worker's own markers (Permanent, RetryAfter), which say how to
// settle, not what went wrong.
func causeOf(err error) error {
	for {
		switch e := err.(type) {
		case *permanentError:
			err = e.err
		case *retryAfterError:
			err = e.err
		default:
			return err
		}
	}
}

// innermost is the deepest error of err's chain (following a joined error's first) whose
// type is its own, or err when none is.
func innermost(err error) error {
	found := err
	for range 64 {
		if !plainError(err) {
			found = err
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			errs := u.Unwrap()
			if len(errs) == 0 {
				return found
			}
			err = errs[0]
		default:
			return found
		}
		if err == nil {
			return found
		}
	}
	return found
}

// plainError: an error of errors.New, fmt.Errorf or errors.Join, whose type says nothing.
func plainError(err error) bool {
	switch fmt.Sprintf("%T", err) {
	case "*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		return true
	}
	return false
}

// chainOf is the messages of err's chain (at most 8, each cut to 512 bytes).
func chainOf(err error) []string {
	var out []string
	for err != nil && len(out) < maxChain {
		out = append(out, cleanText(err.Error(), maxChainItem))
		err = errors.Unwrap(err)
	}
	return out
}

// codeOfType makes an error code of err's Go type.
func codeOfType(err error) string {
	if plainError(err) {
		return "error"
	}
	t := fmt.Sprintf("%T", err)
	var b strings.Builder
	for _, r := range strings.ToLower(t) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		case r == '*' || r == '&':
		default:
			b.WriteByte('_')
		}
	}
	code := strings.Trim(b.String(), "_.")
	if len(code) > 64 {
		code = code[len(code)-64:] // the type's own name is at the end
	}
	if code == "" {
		return "error"
	}
	return code
}

func validCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// cleanText makes s text the service keeps: valid UTF-8 without control characters but
// tab and line breaks, at most max UTF-16 code units (cut on a character, ending in "…").
func cleanText(s string, max int) string {
	total := 0
	for _, r := range s {
		total += utf16Len(r)
	}
	limit := max
	if total > max {
		limit = max - 1 // room for the ellipsis
	}
	var b strings.Builder
	units := 0
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			r = '?'
		case (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f:
			r = ' '
		}
		if units+utf16Len(r) > limit {
			b.WriteRune('…')
			break
		}
		units += utf16Len(r)
		b.WriteRune(r)
	}
	return b.String()
}

func utf16Len(r rune) int {
	if r > 0xFFFF {
		return 2
	}
	return 1
}

// stackLines is a stack as lines, at most maxStackLines and maxStackBytes.
func stackLines(stack []byte) []string {
	var out []string
	size := 0
	for _, line := range bytes.Split(bytes.TrimSpace(stack), []byte("\n")) {
		l := cleanText(strings.TrimSpace(string(line)), maxChainItem)
		if len(out) == maxStackLines || size+len(l) > maxStackBytes {
			out = append(out, "…")
			break
		}
		out = append(out, l)
		size += len(l)
	}
	return out
}

// marshalBounded marshals details, dropping the stack and then the chain when they would
// pass the bound (they are cut already; this keeps the bound whatever they held).
func marshalBounded(details map[string]any) json.RawMessage {
	for _, drop := range []string{"", "stack", "chain"} {
		if drop != "" {
			delete(details, drop)
		}
		if b, err := json.Marshal(details); err == nil && len(b) <= maxDetailsBytes {
			return b
		}
	}
	return nil
}
