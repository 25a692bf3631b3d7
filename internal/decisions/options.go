package decisions

// How a decision's answer is checked against the decision (DESIGN.md section 5: "a choice
// answer must be one of its options; an input decision needs an answer").
//
// Kinds and answers:
//   - approval: answered approved or rejected; an answer document is optional and free (a
//     note).
//   - input: approved needs an answer (any JSON but null); rejected may come without one.
//   - choice: an answer, when given, must be one of the decision's options; approved needs
//     one. Rejected may come without an answer (none of the options was chosen).
//
// Options of a choice decision: a JSON array of options, or an object whose "choices"
// member is that array (its other members, a prompt for instance, are kept and not read).
// An option is any JSON value; an option that is an object with a string member "id" is
// also named by that id. An answer matches an option when their RFC 8785 canonical forms
// are equal (so member order, whitespace and number spelling do not matter: 1.0 is 1), or,
// for an option with an id, when the answer is that id as a JSON string. A choice request
// must carry 1..MaxOptions options, no two of which one answer could match (400
// invalid_request naming "options"; the other kinds keep options as any JSON).
//
// A stored choice decision whose options document is not of that shape (written before
// this check existed) is malformed: no answer can match it, so it can only be rejected
// without an answer; anything else is refused with 400 naming "answer" and saying so.

import (
	"encoding/json"
	"fmt"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/jcs"
)

// MaxOptions is the most options a choice decision may offer.
const MaxOptions = 1000

// choices is the set of canonical JSON texts that match one of a choice decision's
// options.
type choices map[string]bool

// parseChoices reads a choice decision's options document; the error says why it has no
// usable list of choices.
func parseChoices(raw json.RawMessage) (choices, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("a choice decision needs options: a JSON array of choices, or an object with a \"choices\" array")
	}
	if _, err := jcs.Canonicalize(raw); err != nil {
		return nil, fmt.Errorf("must be I-JSON (RFC 7493): %w", err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		var doc struct {
			Choices *[]json.RawMessage `json:"choices"`
		}
		if json.Unmarshal(raw, &doc) != nil || doc.Choices == nil {
			return nil, fmt.Errorf("must be a JSON array of choices, or an object with a \"choices\" array")
		}
		list = *doc.Choices
	}
	if len(list) == 0 || len(list) > MaxOptions {
		return nil, fmt.Errorf("must offer 1 to %d choices", MaxOptions)
	}
	set := choices{}
	add := func(key string, i int) error {
		if set[key] {
			return fmt.Errorf("choice %d can be answered with the same value as an earlier choice", i)
		}
		set[key] = true
		return nil
	}
	for i, opt := range list {
		c, err := jcs.Canonicalize(opt)
		if err != nil {
			return nil, fmt.Errorf("choice %d has no canonical JSON form (RFC 8785)", i)
		}
		if err := add(string(c), i); err != nil {
			return nil, err
		}
		var named struct {
			ID *string `json:"id"`
		}
		if c[0] == '{' && json.Unmarshal(c, &named) == nil && named.ID != nil {
			id, _ := json.Marshal(*named.ID)
			idc, err := jcs.Canonicalize(id)
			if err != nil {
				return nil, fmt.Errorf("choice %d has an id with no canonical JSON form", i)
			}
			if err := add(string(idc), i); err != nil {
				return nil, err
			}
		}
	}
	return set, nil
}

// match reports whether answer matches one of the choices.
func (c choices) match(answer json.RawMessage) bool {
	can, err := jcs.Canonicalize(answer)
	return err == nil && c[string(can)]
}

// checkOptions refuses a request whose options do not fit its kind.
func checkOptions(kind api.DecisionKind, options json.RawMessage) error {
	if kind != api.DecisionChoice {
		return nil
	}
	if _, err := parseChoices(options); err != nil {
		return apperr.FieldsInvalid(api.FieldError{Field: "options", Reason: err.Error()})
	}
	return nil
}

// checkAnswer refuses an answer that does not fit the decision d (400 invalid_request
// naming the field). Answer has checked its status already.
func checkAnswer(d Decision, a Answer) error {
	bad := func(field, reason string) error {
		return apperr.FieldsInvalid(api.FieldError{Field: field, Reason: reason})
	}
	approved, answered := a.Status == api.DecisionApproved, len(a.Answer) > 0
	switch d.Kind {
	case api.DecisionInput:
		if approved && !answered {
			return bad("answer", "an input decision is approved with an answer")
		}
	case api.DecisionChoice:
		set, err := parseChoices(d.Options)
		switch {
		case err != nil && (approved || answered):
			return bad("answer", "this choice decision's options are not a list of choices ("+err.Error()+
				"), so no answer can match one: it can only be rejected without an answer")
		case approved && !answered:
			return bad("answer", "a choice decision is approved with an answer: one of its options")
		case answered && !set.match(a.Answer):
			return bad("answer", "must be one of the decision's options")
		}
	}
	return nil
}
