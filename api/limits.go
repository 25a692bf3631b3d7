package api

import (
	"strconv"
	"strings"
)

// Limits of free text that a column keeps as given, in UTF-16 code units (what nvarchar(n)
// counts). Each is stated here once: the handlers' checks of the text read it, the member's
// validate tag names it (LimitTags), the width of the column is held to it by
// internal/schema's TestLimitsMatchColumns, and docs/runtimes.md's table by
// TestLimitsInRuntimesDoc.
const (
	MaxPurpose        = 1024 // a delegation's purpose (SubAgentDelegations.Purpose)
	MaxRecommendation = 2000 // a decision's recommendation (DecisionRequests.Recommendation)
	MaxErrorMessage   = 2000 // an attempt's error message (ExecutionAttempts and Runs.ErrorMessage)
)

// LimitTags name the limits above as validate tags (`validate:"required,purpose"`), so a
// member's tag states its limit by name and the number stays here: the validator registers
// each as an alias of its definition, and the OpenAPI document and the schema tests read
// tags through ExpandLimitTags. A function, not a map variable: nothing can change it.
func LimitTags() map[string]string {
	return map[string]string{
		"purpose":        "max=" + strconv.Itoa(MaxPurpose),
		"recommendation": "max=" + strconv.Itoa(MaxRecommendation),
		"errormessage":   "max=" + strconv.Itoa(MaxErrorMessage),
	}
}

// ExpandLimitTags returns a validate tag with each of LimitTags' names replaced by its
// definition: the tag the validator runs.
func ExpandLimitTags(tag string) string {
	aliases := LimitTags()
	parts := strings.Split(tag, ",")
	for i, p := range parts {
		if def, ok := aliases[p]; ok {
			parts[i] = def
		}
	}
	return strings.Join(parts, ",")
}
