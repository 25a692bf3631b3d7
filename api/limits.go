package api

// Limits of free text that a column keeps as given, in UTF-16 code units (what nvarchar(n)
// counts). Each is stated here once: the handlers' checks of the text read it, and the
// validate tag of the member (which the validator and the OpenAPI document read) and the
// width of the column are held to it by internal/schema's TestLimitsMatchColumns, and
// docs/runtimes.md's table by TestLimitsInRuntimesDoc.
const (
	MaxPurpose        = 1024 // a delegation's purpose (SubAgentDelegations.Purpose)
	MaxRecommendation = 2000 // a decision's recommendation (DecisionRequests.Recommendation)
	MaxErrorMessage   = 2000 // an attempt's error message (ExecutionAttempts and Runs.ErrorMessage)
)
