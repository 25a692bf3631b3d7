package web

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// UTF16Len is the length of s in UTF-16 code units, the unit SQL Server's nvarchar(n)
// counts: a character outside the Basic Multilingual Plane counts twice. Each byte of
// invalid UTF-8 counts once (as the U+FFFD it decodes to).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// AppendTooLong adds a field error when v is empty or longer than n UTF-16 code units:
// nvarchar(n) counts those, so a string of n runes outside the Basic Multilingual Plane
// would not fit (SQL Server refuses it with a truncation error, 2628).
func AppendTooLong(fields []apperr.FieldError, name, v string, n int) []apperr.FieldError {
	switch {
	case v == "":
		return append(fields, apperr.FieldError{Field: name, Reason: "is required"})
	case UTF16Len(v) > n:
		return append(fields, apperr.FieldError{Field: name, Reason: fmt.Sprintf("must be at most %d UTF-16 code units", n)})
	}
	return fields
}

// NotOneOf is the field error of a value that is none of e's wire names: the reason the
// API's decoder gives, for the services that check an enumeration a caller other than
// the decoder may have filled.
func NotOneOf(name string, e api.Enum) apperr.FieldError {
	return apperr.FieldError{Field: name, Reason: "must be one of: " + strings.Join(e.EnumValues(), ", ")}
}

// ValidText reports whether s is free text for an nvarchar(n) column of n = max: valid
// UTF-8, at most max UTF-16 code units, no control characters other than tab and line
// breaks, and no U+FFFD (what the JSON decoder makes of invalid UTF-8). The empty string
// passes; callers that require text check for it.
func ValidText(s string, max int) bool {
	if !utf8.ValidString(s) || UTF16Len(s) > max {
		return false
	}
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}
