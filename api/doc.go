// Package api is the wire of the ledger service: every request and response body, the
// query parameters of every listing, the enumerations with their string forms, the time
// format, the problem codes and the problem document. The server's handlers and the Go SDK
// use these same types, and the OpenAPI document at /openapi.json is derived from them, so
// the three cannot disagree.
//
// Conventions (DESIGN.md sections 7 and 7a):
//   - members are camelCase; a member that is always sent is a plain value, an optional one
//     a pointer with omitempty (absent, never null, when it has no value); the few members
//     that are always sent but may have no value (parentRunId, lastCheckpointId, ...) are
//     pointers without omitempty and travel as null; a request member tagged
//     `nullable:"true"` may be absent (keep) or null (remove), which differ;
//   - enumerations travel as lowercase snake_case strings; decoding an unknown name is an
//     error (a *ValueError listing the allowed names);
//   - times travel as RFC 3339 UTC with exactly three fractional digits (Time);
//   - the `validate` struct tags state the bounds the server enforces (validator/v10 syntax;
//     ident=N is an identifier of 1..N UTF-16 code units, see DESIGN.md 7a; segment=N one
//     that also appears as a path segment, so without "/") and `default`
//     the value an absent member takes. The OpenAPI document reads both, so a bound is
//     written once.
//
// The package imports only the standard library and github.com/google/uuid.
package api
