// Package ifmatch is the one rule for a write's If-Match condition (RFC 9110 section
// 13.1.1): when a route needs one, and what a write without one or with a stale one is
// answered. A route's web.Op declares a Mode; the document and web.IfMatch read it, and a
// store passes the same Mode to Update once it finds, in the transaction that writes,
// that the request changes an existing row. Only the store can tell a create from an
// update (another request may create the row between a check and the write), so the
// decision stays there; what it decides comes from the Mode.
package ifmatch

import (
	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Mode says whether a route takes If-Match and when a request must send it.
type Mode uint8

const (
	// None: the route does not read If-Match.
	None Mode = iota
	// Optional: a condition when sent (412 when stale); a write without one goes ahead.
	Optional
	// Required: every request sends it; 428 without it, before the store is asked.
	Required
	// ToUpdate: a request that creates the resource sends none (412 if it does: there is
	// nothing current to match); one that updates an existing resource must (428 without
	// it). A repeat that changes nothing is not an update.
	ToUpdate
)

// Takes reports whether the route reads If-Match at all.
func (m Mode) Takes() bool { return m != None }

// Requires reports whether every request must send If-Match.
func (m Mode) Requires() bool { return m == Required }

// MayAnswer428 reports whether a request of the route can be refused for want of If-Match.
func (m Mode) MayAnswer428() bool { return m == Required || m == ToUpdate }

// Absent is the answer to a request that sent no If-Match, before anything is read: 428
// under Required, else nil.
func Absent(m Mode) error {
	if m == Required {
		return apperr.New(api.CodePreconditionRequired, "this request needs an If-Match header with the resource's ETag")
	}
	return nil
}

// Create is the answer to a condition on a row that does not exist (what names it): none
// can hold, so 412 when cond is set.
func Create(cond sqldb.VersionMatcher, what string) error {
	if cond != nil {
		return apperr.New(api.CodePreconditionFailed, "%s does not exist", what)
	}
	return nil
}

// Check is the answer to a condition on an existing row at version current: 412 when cond
// is set and current is not one it names; a missing condition passes (see Update).
func Check(cond sqldb.VersionMatcher, current sqldb.RowVersion, what string) error {
	if cond != nil && !cond.Matches(current) {
		return Stale(what)
	}
	return nil
}

// Stale is the answer when the row changed after its version was judged: the write,
// conditional on that version, found another.
func Stale(what string) error {
	return apperr.New(api.CodePreconditionFailed, "%s has changed since that ETag", what)
}

// Update is the answer to a write that changes the existing row at version current under
// the route's mode: Check, and 428 when cond is missing and the mode asks for one to
// update (Required, ToUpdate).
func Update(m Mode, cond sqldb.VersionMatcher, current sqldb.RowVersion, what string) error {
	if cond == nil && m.MayAnswer428() {
		return apperr.New(api.CodePreconditionRequired, "%s exists: changing it needs an If-Match header with its ETag", what)
	}
	return Check(cond, current, what)
}
