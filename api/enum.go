package api

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Enum is what every enumeration of this package implements: its wire name, whether it is
// one of the declared values, and the list of every wire name in declared order (the
// OpenAPI document lists them).
type Enum interface {
	fmt.Stringer
	Valid() bool
	EnumValues() []string
}

// names is an enumeration's wire names in declared (and, for the stored-as-int ones,
// stored) order.
type names []string

func (n names) name(v int) string {
	if v < 0 || v >= len(n) {
		return ""
	}
	return n[v]
}

func (n names) index(s string) (int, bool) {
	for i, x := range n {
		if x == s {
			return i, true
		}
	}
	return 0, false
}

func (n names) values() []string { return append([]string(nil), n...) }

func (n names) refusal() *ValueError {
	return &ValueError{Reason: "must be one of: " + strings.Join(n, ", ")}
}

// marshalInt encodes a stored-as-int enumeration value as its name.
func (n names) marshalInt(v int, what string) ([]byte, error) {
	s := n.name(v)
	if s == "" {
		return nil, fmt.Errorf("%s %d is not one of: %s", what, v, strings.Join(n, ", "))
	}
	return []byte(s), nil
}

// unmarshalInt decodes a name into its position.
func (n names) unmarshalInt(dst *int, text []byte) error {
	i, ok := n.index(string(text))
	if !ok {
		return n.refusal()
	}
	*dst = i
	return nil
}

// marshalString encodes a stored-as-string enumeration value, refusing an undeclared one.
func (n names) marshalString(v, what string) ([]byte, error) {
	if _, ok := n.index(v); !ok {
		return nil, fmt.Errorf("%s %q is not one of: %s", what, v, strings.Join(n, ", "))
	}
	return []byte(v), nil
}

// unmarshalString checks a name.
func (n names) unmarshalString(text []byte) (string, error) {
	if _, ok := n.index(string(text)); !ok {
		return "", n.refusal()
	}
	return string(text), nil
}

// jsonString reads a JSON string member; anything else is refused with the allowed names.
func (n names) jsonString(data []byte) ([]byte, error) {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, n.refusal()
	}
	return []byte(s), nil
}

// Enumerations stored as their position (DESIGN.md 7a). Each has constants, String, Valid,
// EnumValues, and text and JSON (un)marshalling from its one list of names.

// RunState is a run's state.
type RunState int

// Run states.
const (
	RunQueued RunState = iota
	RunLeased
	RunEnded
)

var runStateNames = names{"queued", "leased", "ended"}

func (v RunState) String() string                { return runStateNames.name(int(v)) }
func (v RunState) Valid() bool                   { return runStateNames.name(int(v)) != "" }
func (RunState) EnumValues() []string            { return runStateNames.values() }
func (v RunState) MarshalText() ([]byte, error)  { return runStateNames.marshalInt(int(v), "run state") }
func (v *RunState) UnmarshalText(b []byte) error { return runStateNames.unmarshalInt((*int)(v), b) }
func (v *RunState) UnmarshalJSON(b []byte) error {
	s, err := runStateNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// Band is a run's priority band, most urgent first.
type Band int

// Bands.
const (
	BandInteractive Band = iota
	BandBatch
	BandBackground
)

var bandNames = names{"interactive", "batch", "background"}

func (v Band) String() string                { return bandNames.name(int(v)) }
func (v Band) Valid() bool                   { return bandNames.name(int(v)) != "" }
func (Band) EnumValues() []string            { return bandNames.values() }
func (v Band) MarshalText() ([]byte, error)  { return bandNames.marshalInt(int(v), "band") }
func (v *Band) UnmarshalText(b []byte) error { return bandNames.unmarshalInt((*int)(v), b) }
func (v *Band) UnmarshalJSON(b []byte) error {
	s, err := bandNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// AttemptState is an execution attempt's state.
type AttemptState int

// Attempt states.
const (
	AttemptRunning AttemptState = iota
	AttemptSucceeded
	AttemptFailed
	AttemptCancelled
	AttemptLost
	AttemptReleased
	// AttemptParked: the holder parked the run to wait for decisions, children or a time
	// (issue 28); no attempt was spent.
	AttemptParked
)

var attemptStateNames = names{"running", "succeeded", "failed", "cancelled", "lost", "released", "parked"}

func (v AttemptState) String() string     { return attemptStateNames.name(int(v)) }
func (v AttemptState) Valid() bool        { return attemptStateNames.name(int(v)) != "" }
func (AttemptState) EnumValues() []string { return attemptStateNames.values() }
func (v AttemptState) MarshalText() ([]byte, error) {
	return attemptStateNames.marshalInt(int(v), "attempt state")
}
func (v *AttemptState) UnmarshalText(b []byte) error {
	return attemptStateNames.unmarshalInt((*int)(v), b)
}
func (v *AttemptState) UnmarshalJSON(b []byte) error {
	s, err := attemptStateNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// Phase is a running attempt's phase.
type Phase int

// Phases.
const (
	PhaseStarting Phase = iota
	PhasePlanning
	PhaseActing
	PhaseObserving
	PhaseCorrecting
	PhaseAwaitingDecision
	PhaseFinalizing
)

var phaseNames = names{"starting", "planning", "acting", "observing", "correcting", "awaiting_decision", "finalizing"}

func (v Phase) String() string                { return phaseNames.name(int(v)) }
func (v Phase) Valid() bool                   { return phaseNames.name(int(v)) != "" }
func (Phase) EnumValues() []string            { return phaseNames.values() }
func (v Phase) MarshalText() ([]byte, error)  { return phaseNames.marshalInt(int(v), "phase") }
func (v *Phase) UnmarshalText(b []byte) error { return phaseNames.unmarshalInt((*int)(v), b) }
func (v *Phase) UnmarshalJSON(b []byte) error {
	s, err := phaseNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// CallKind is what a call record calls.
type CallKind int

// Call kinds.
const (
	CallModel CallKind = iota
	CallTool
	CallHTTP
	CallOther
)

var callKindNames = names{"model", "tool", "http", "other"}

func (v CallKind) String() string                { return callKindNames.name(int(v)) }
func (v CallKind) Valid() bool                   { return callKindNames.name(int(v)) != "" }
func (CallKind) EnumValues() []string            { return callKindNames.values() }
func (v CallKind) MarshalText() ([]byte, error)  { return callKindNames.marshalInt(int(v), "call kind") }
func (v *CallKind) UnmarshalText(b []byte) error { return callKindNames.unmarshalInt((*int)(v), b) }
func (v *CallKind) UnmarshalJSON(b []byte) error {
	s, err := callKindNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// DecisionKind is what a decision request asks for.
type DecisionKind int

// Decision kinds.
const (
	DecisionApproval DecisionKind = iota
	DecisionChoice
	DecisionInput
)

var decisionKindNames = names{"approval", "choice", "input"}

func (v DecisionKind) String() string     { return decisionKindNames.name(int(v)) }
func (v DecisionKind) Valid() bool        { return decisionKindNames.name(int(v)) != "" }
func (DecisionKind) EnumValues() []string { return decisionKindNames.values() }
func (v DecisionKind) MarshalText() ([]byte, error) {
	return decisionKindNames.marshalInt(int(v), "decision kind")
}
func (v *DecisionKind) UnmarshalText(b []byte) error {
	return decisionKindNames.unmarshalInt((*int)(v), b)
}
func (v *DecisionKind) UnmarshalJSON(b []byte) error {
	s, err := decisionKindNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// ReleaseState is a release adapter's state.
type ReleaseState int

// Release states.
const (
	ReleaseVerified ReleaseState = iota
	ReleaseActive
	ReleaseDraining
	ReleaseRetired
)

var releaseStateNames = names{"verified", "active", "draining", "retired"}

func (v ReleaseState) String() string     { return releaseStateNames.name(int(v)) }
func (v ReleaseState) Valid() bool        { return releaseStateNames.name(int(v)) != "" }
func (ReleaseState) EnumValues() []string { return releaseStateNames.values() }
func (v ReleaseState) MarshalText() ([]byte, error) {
	return releaseStateNames.marshalInt(int(v), "release state")
}
func (v *ReleaseState) UnmarshalText(b []byte) error {
	return releaseStateNames.unmarshalInt((*int)(v), b)
}
func (v *ReleaseState) UnmarshalJSON(b []byte) error {
	s, err := releaseStateNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// TimelineKind is the kind of an attempt's timeline entry, in the order a timeline sorts
// entries that share a time.
type TimelineKind int

// Timeline entry kinds.
const (
	TimelineCheckpoint TimelineKind = iota
	TimelineCall
	TimelineDecision
	TimelineDelegation
	// TimelineEnd is the last entry of an ended attempt's timeline: how it ended.
	TimelineEnd
)

var timelineKindNames = names{"checkpoint", "call", "decision", "delegation", "end"}

func (v TimelineKind) String() string     { return timelineKindNames.name(int(v)) }
func (v TimelineKind) Valid() bool        { return timelineKindNames.name(int(v)) != "" }
func (TimelineKind) EnumValues() []string { return timelineKindNames.values() }
func (v TimelineKind) MarshalText() ([]byte, error) {
	return timelineKindNames.marshalInt(int(v), "timeline kind")
}
func (v *TimelineKind) UnmarshalText(b []byte) error {
	return timelineKindNames.unmarshalInt((*int)(v), b)
}
func (v *TimelineKind) UnmarshalJSON(b []byte) error {
	s, err := timelineKindNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// Enumerations stored as their wire string (the seed's nvarchar Status columns and the
// service's own string columns). Each is a string type with constants, String, Valid,
// EnumValues, and text and JSON (un)marshalling that refuse an undeclared value.

// RunOutcome is how an ended run ended.
type RunOutcome string

// Run outcomes.
const (
	OutcomeSucceeded RunOutcome = "succeeded"
	OutcomeFailed    RunOutcome = "failed"
	OutcomeCancelled RunOutcome = "cancelled"
	OutcomeExhausted RunOutcome = "exhausted"
	OutcomeDeadline  RunOutcome = "deadline"
)

var runOutcomeNames = names{"succeeded", "failed", "cancelled", "exhausted", "deadline"}

func (v RunOutcome) String() string     { return string(v) }
func (v RunOutcome) Valid() bool        { _, ok := runOutcomeNames.index(string(v)); return ok }
func (RunOutcome) EnumValues() []string { return runOutcomeNames.values() }
func (v RunOutcome) MarshalText() ([]byte, error) {
	return runOutcomeNames.marshalString(string(v), "run outcome")
}
func (v *RunOutcome) UnmarshalText(b []byte) error {
	s, err := runOutcomeNames.unmarshalString(b)
	*v = RunOutcome(s)
	return err
}
func (v *RunOutcome) UnmarshalJSON(b []byte) error {
	s, err := runOutcomeNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// CompletionState is the state a holder completes an attempt in: an AttemptState that ends it.
type CompletionState string

// Completion states.
const (
	CompleteSucceeded CompletionState = "succeeded"
	CompleteFailed    CompletionState = "failed"
	CompleteCancelled CompletionState = "cancelled"
)

var completionStateNames = names{"succeeded", "failed", "cancelled"}

func (v CompletionState) String() string     { return string(v) }
func (v CompletionState) Valid() bool        { _, ok := completionStateNames.index(string(v)); return ok }
func (CompletionState) EnumValues() []string { return completionStateNames.values() }
func (v CompletionState) MarshalText() ([]byte, error) {
	return completionStateNames.marshalString(string(v), "completion state")
}
func (v *CompletionState) UnmarshalText(b []byte) error {
	s, err := completionStateNames.unmarshalString(b)
	*v = CompletionState(s)
	return err
}
func (v *CompletionState) UnmarshalJSON(b []byte) error {
	s, err := completionStateNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// AttemptState is the attempt state a completion ends the attempt in.
func (v CompletionState) AttemptState() AttemptState {
	i, _ := attemptStateNames.index(string(v))
	return AttemptState(i)
}

// CallStatus is a call record's status: started until finished once, or abandoned when its
// attempt ends first.
type CallStatus string

// Call statuses.
const (
	CallStarted   CallStatus = "started"
	CallSucceeded CallStatus = "succeeded"
	CallFailed    CallStatus = "failed"
	CallDenied    CallStatus = "denied"
	CallAbandoned CallStatus = "abandoned"
)

var callStatusNames = names{"started", "succeeded", "failed", "denied", "abandoned"}

func (v CallStatus) String() string     { return string(v) }
func (v CallStatus) Valid() bool        { _, ok := callStatusNames.index(string(v)); return ok }
func (CallStatus) EnumValues() []string { return callStatusNames.values() }
func (v CallStatus) MarshalText() ([]byte, error) {
	return callStatusNames.marshalString(string(v), "call status")
}
func (v *CallStatus) UnmarshalText(b []byte) error {
	s, err := callStatusNames.unmarshalString(b)
	*v = CallStatus(s)
	return err
}
func (v *CallStatus) UnmarshalJSON(b []byte) error {
	s, err := callStatusNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// CallFinishStatus is the status a holder finishes a call with.
type CallFinishStatus string

// Call finish statuses.
const (
	FinishSucceeded CallFinishStatus = "succeeded"
	FinishFailed    CallFinishStatus = "failed"
	FinishDenied    CallFinishStatus = "denied"
)

var callFinishStatusNames = names{"succeeded", "failed", "denied"}

func (v CallFinishStatus) String() string     { return string(v) }
func (v CallFinishStatus) Valid() bool        { _, ok := callFinishStatusNames.index(string(v)); return ok }
func (CallFinishStatus) EnumValues() []string { return callFinishStatusNames.values() }
func (v CallFinishStatus) MarshalText() ([]byte, error) {
	return callFinishStatusNames.marshalString(string(v), "call finish status")
}
func (v *CallFinishStatus) UnmarshalText(b []byte) error {
	s, err := callFinishStatusNames.unmarshalString(b)
	*v = CallFinishStatus(s)
	return err
}
func (v *CallFinishStatus) UnmarshalJSON(b []byte) error {
	s, err := callFinishStatusNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// DecisionStatus is a decision's status: pending until it closes once.
type DecisionStatus string

// Decision statuses.
const (
	DecisionPending   DecisionStatus = "pending"
	DecisionApproved  DecisionStatus = "approved"
	DecisionRejected  DecisionStatus = "rejected"
	DecisionExpired   DecisionStatus = "expired"
	DecisionCancelled DecisionStatus = "cancelled"
)

var decisionStatusNames = names{"pending", "approved", "rejected", "expired", "cancelled"}

func (v DecisionStatus) String() string     { return string(v) }
func (v DecisionStatus) Valid() bool        { _, ok := decisionStatusNames.index(string(v)); return ok }
func (DecisionStatus) EnumValues() []string { return decisionStatusNames.values() }
func (v DecisionStatus) MarshalText() ([]byte, error) {
	return decisionStatusNames.marshalString(string(v), "decision status")
}
func (v *DecisionStatus) UnmarshalText(b []byte) error {
	s, err := decisionStatusNames.unmarshalString(b)
	*v = DecisionStatus(s)
	return err
}
func (v *DecisionStatus) UnmarshalJSON(b []byte) error {
	s, err := decisionStatusNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// AnswerStatus is how an admin answers a decision.
type AnswerStatus string

// Answer statuses.
const (
	AnswerApproved AnswerStatus = "approved"
	AnswerRejected AnswerStatus = "rejected"
)

var answerStatusNames = names{"approved", "rejected"}

func (v AnswerStatus) String() string     { return string(v) }
func (v AnswerStatus) Valid() bool        { _, ok := answerStatusNames.index(string(v)); return ok }
func (AnswerStatus) EnumValues() []string { return answerStatusNames.values() }
func (v AnswerStatus) MarshalText() ([]byte, error) {
	return answerStatusNames.marshalString(string(v), "answer status")
}
func (v *AnswerStatus) UnmarshalText(b []byte) error {
	s, err := answerStatusNames.unmarshalString(b)
	*v = AnswerStatus(s)
	return err
}
func (v *AnswerStatus) UnmarshalJSON(b []byte) error {
	s, err := answerStatusNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// DelegationStatus follows a delegation's child run: queued is pending, leased running,
// ended succeeded succeeded, ended cancelled cancelled, any other end failed.
type DelegationStatus string

// Delegation statuses.
const (
	DelegationPending   DelegationStatus = "pending"
	DelegationRunning   DelegationStatus = "running"
	DelegationSucceeded DelegationStatus = "succeeded"
	DelegationFailed    DelegationStatus = "failed"
	DelegationCancelled DelegationStatus = "cancelled"
)

var delegationStatusNames = names{"pending", "running", "succeeded", "failed", "cancelled"}

func (v DelegationStatus) String() string     { return string(v) }
func (v DelegationStatus) Valid() bool        { _, ok := delegationStatusNames.index(string(v)); return ok }
func (DelegationStatus) EnumValues() []string { return delegationStatusNames.values() }
func (v DelegationStatus) MarshalText() ([]byte, error) {
	return delegationStatusNames.marshalString(string(v), "delegation status")
}
func (v *DelegationStatus) UnmarshalText(b []byte) error {
	s, err := delegationStatusNames.unmarshalString(b)
	*v = DelegationStatus(s)
	return err
}
func (v *DelegationStatus) UnmarshalJSON(b []byte) error {
	s, err := delegationStatusNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}

// InFlightPolicy is what draining or retiring a release does to the attempts still running
// on it: drain lets them finish, cancel asks their runs to stop.
type InFlightPolicy string

// In-flight policies.
const (
	PolicyDrain  InFlightPolicy = "drain"
	PolicyCancel InFlightPolicy = "cancel"
)

var inFlightPolicyNames = names{"drain", "cancel"}

func (v InFlightPolicy) String() string     { return string(v) }
func (v InFlightPolicy) Valid() bool        { _, ok := inFlightPolicyNames.index(string(v)); return ok }
func (InFlightPolicy) EnumValues() []string { return inFlightPolicyNames.values() }
func (v InFlightPolicy) MarshalText() ([]byte, error) {
	return inFlightPolicyNames.marshalString(string(v), "in-flight policy")
}
func (v *InFlightPolicy) UnmarshalText(b []byte) error {
	s, err := inFlightPolicyNames.unmarshalString(b)
	*v = InFlightPolicy(s)
	return err
}
func (v *InFlightPolicy) UnmarshalJSON(b []byte) error {
	s, err := inFlightPolicyNames.jsonString(b)
	if err != nil {
		return err
	}
	return v.UnmarshalText(s)
}
