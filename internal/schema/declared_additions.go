// Package schema holds the declared additions to the seed tables and, in its tests, the
// checks that keep the SQL Server migrations true to the seed DDL and free of SQLite
// dialect leaks (DESIGN.md section 3, TSQL.md).
//
// The seed's six attempt-ledger tables (shared/seeds/001_*.txt) keep every column, type,
// nullability, default, key and index exactly as written. Anything migrations/mssql adds
// to them must be listed in DeclaredAdditions with its reason; parity_test.go fails on
// any addition that is missing from the list, and on any listed one the migration lacks.
package schema

// AdditionKind says what a declared addition adds to a seed table.
type AdditionKind string

// The kinds of declared additions.
const (
	// AddColumn is a column the seed table does not have.
	AddColumn AdditionKind = "column"
	// AddIndex is an index the seed does not declare.
	AddIndex AdditionKind = "index"
	// AddCollation is a COLLATE clause on a seed column that the seed leaves at the
	// database default.
	AddCollation AdditionKind = "collation"
)

// Addition is one declared addition to a seed table.
type Addition struct {
	// Table is the seed table, without schema or brackets (ExecutionAttempts).
	Table string
	// Kind says whether Item is a column, an index or a collation on a seed column.
	Kind AdditionKind
	// Item is the column or index name.
	Item string
	// Definition is what the migration must say, in the parity test's canonical form:
	// for a column its type, collation, nullability and default
	// ("nvarchar(32) COLLATE Latin1_General_100_BIN2 NOT NULL"); for an index its
	// uniqueness, key columns, included columns and filter
	// ("INDEX (TenantId, StartedAt, AttemptId)"); for a collation the collation name.
	Definition string
	// Reason says why the addition exists, with the DESIGN.md section that asks for it.
	Reason string
}

// BIN2 is the collation of every identifier column on SQL Server (DESIGN.md section 3).
const BIN2 = "Latin1_General_100_BIN2"

const (
	reasonIdentifier = "DESIGN.md section 3: identifier columns compare case-sensitively on both dialects (SQLite is binary)"
	reasonStatus     = "DESIGN.md sections 3 and 7a: the column holds a lowercase wire string; BIN2 keeps 'Pending' from matching 'pending', as on SQLite"
	reasonHash       = "DESIGN.md sections 3 and 5: a hash decides idempotent repeats and conflicts, so it must compare byte for byte, as on SQLite"
	reasonRowversion = "DESIGN.md section 5: the table's rows change, so they carry a rowversion for ETags and If-Match"
	reasonFeed       = "DESIGN.md sections 5a and 5b (issue 30 item 2, issue 35 item 1): the feed projector (internal/feed) reads the table's rows in rowversion order across tenants, past its position and below MIN_ACTIVE_ROWVERSION (migration 000026); covering, so a row changing while it is read is no reader-lookup deadlock (issue 26 item 5); SQLite has no INCLUDE"
	reasonHistory    = "DESIGN.md section 5: an index that history queries need"
	reasonUsage      = "DESIGN.md section 5b (What it cost, issue 31)"
)

func collation(table, column, reason string) Addition {
	return Addition{Table: table, Kind: AddCollation, Item: column, Definition: BIN2, Reason: reason}
}

// RunsAdditions lists what later migrations add to (or redefine on) the Runs table of
// migrations/mssql/000003_runs.up.sql, which carries seed 003's run-lease core. The
// brief for the write path (issues 11 and 12) asks for these as declared additions;
// parity_test.go checks both ways, against the schema every migration leaves behind.
var RunsAdditions = []Addition{
	{
		Table: "Runs", Kind: AddColumn, Item: "SubjectHead",
		Definition: "bit NOT NULL CONSTRAINT DF_Runs_SubjectHead DEFAULT (0)",
		Reason: "DESIGN.md section 4 (Claim): the per-subject head marker, 1 on the oldest queued run (QueuedAt, RunId) of a " +
			"subject that has no leased run, kept in the transactions that enqueue, claim, requeue, end and cancel runs, so " +
			"the claim's eligibility is one indexed column and its window needs no per-candidate sibling probes",
	},
	{
		Table: "Runs", Kind: AddColumn, Item: "RequestHash",
		Definition: "nvarchar(64) COLLATE " + BIN2 + " NULL",
		Reason: "DESIGN.md section 4 (Enqueue): the SHA-256 (hex) of the enqueue request's defining fields, so an " +
			"idempotencyKey reused for another request answers 409 idempotency_key_reused while an exact repeat answers " +
			"200; BIN2 because it decides a repeat byte for byte",
	},
	{
		Table: "Runs", Kind: AddIndex, Item: "IX_Runs_Claim",
		Definition: "INDEX (TenantId, Band, DueAt, RunId) INCLUDE (ProjectId, Subject, CancelRequestedAt, Kind, AgentId) WHERE SubjectHead = 1",
		Reason: "DESIGN.md section 4 (Claim): redefined from WHERE State = 0 to the subject heads, at most one per " +
			"subject, so the claim's window is at most three index seeks and never reads a subject's backlog",
	},
	{
		Table: "Runs", Kind: AddIndex, Item: "IX_Runs_SubjectQueue",
		Definition: "INDEX (TenantId, Subject, QueuedAt, RunId) INCLUDE (ProjectId, Band, DueAt) WHERE State = 0",
		Reason: "DESIGN.md section 8 (metrics) and issue 10 (the console overview, internal/overview): redefined to cover the queued runs' " +
			"ProjectId, Band and DueAt, so the queue counts per tenant and across tenants read the queued runs only " +
			"(IX_Runs_Claim covered them until it was redefined to the subject heads); SQLite has no INCLUDE",
	},
	{
		Table: "Runs", Kind: AddIndex, Item: "UX_Runs_SubjectHead",
		Definition: "UNIQUE INDEX (TenantId, Subject) WHERE SubjectHead = 1",
		Reason: "DESIGN.md section 4 (Claim): at most one head per subject, and the seek a marker change uses to find " +
			"the subject's current head",
	},
	{
		Table: "Runs", Kind: AddIndex, Item: "IX_Runs_Parent",
		Definition: "INDEX (ParentRunId)",
		Reason: "issue 11 item 7: redefined without its filter, so the purge's self-referencing foreign-key check " +
			"(FK_Runs_ParentRun) can seek it; the optimiser may not match a filtered index there",
	},
	{
		Table: "Runs", Kind: AddIndex, Item: "IX_Runs_ContinuedFromRunId",
		Definition: "INDEX (ContinuedFromRunId)",
		Reason: "issue 11 item 7: an unfiltered index for the purge's self-referencing foreign-key check " +
			"(FK_Runs_ContinuedFromRun); UX_Runs_ContinuedFrom is filtered",
	},
	{
		Table: "Runs", Kind: AddIndex, Item: "IX_Runs_Parent_Subject",
		Definition: "INDEX (TenantId, ParentRunId, Subject) WHERE ParentRunId IS NOT NULL",
		Reason: "issue 18 item 7: the delegated-siblings hook seeks a parent's child runs of one subject; through " +
			"IX_Runs_Parent the subject was a residual after a lookup (and, without READ_COMMITTED_SNAPSHOT, an S lock) " +
			"of every child run, so a claim of one continuation could deadlock with the complete of another subject's sibling",
	},
	{
		Table: "Runs", Kind: AddColumn, Item: "Tags",
		Definition: "nvarchar(max) NULL",
		Reason: "DESIGN.md section 5b (Admins act, issue 29): the tags an enqueue gives (a JSON array of at most 16 " +
			"identifiers), which the runs list filters by (migration 000021)",
	},
	{
		Table: "Runs", Kind: AddColumn, Item: "Metadata",
		Definition: "nvarchar(max) NULL",
		Reason:     "DESIGN.md section 5b (Admins act, issue 29): the metadata an enqueue gives (JSON of at most 4 KiB) (migration 000021)",
	},
	{
		Table: "Runs", Kind: AddColumn, Item: "TraceParent",
		Definition: "nvarchar(55) NULL",
		Reason: "DESIGN.md section 5b (Traces where teams already look, issue 31): the W3C traceparent an enqueue carried, so " +
			"the exported trace of the run chain joins the caller's (migration 000025)",
	},
	{
		Table: "Runs", Kind: AddColumn, Item: "ForkedFromCheckpointId",
		Definition: "uniqueidentifier NULL",
		Reason: "DESIGN.md section 5b (Admins act, issue 29): a run forked from a checkpoint of another run keeps it as its " +
			"resume point (checkpoints/last) until it writes its own (migration 000022)",
	},
	{
		Table: "Runs", Kind: AddIndex, Item: "IX_Runs_Version",
		Definition: "INDEX (Version) INCLUDE (TenantId, State, Outcome, ProjectId, AgentId, Kind, QueuedAt, EndedAt, ErrorCode)",
		Reason:     reasonFeed,
	},
}

// DeclaredAdditions lists every addition migrations/mssql makes to the seed's six tables:
// 000006_attempt_ledger.up.sql and the ALTER TABLE ... ADD or CREATE INDEX statements of
// later migrations on those tables. Keep it in step with those files and their
// migrations/sqlite counterparts.
var DeclaredAdditions = []Addition{
	// ExecutionAttempts
	collation("ExecutionAttempts", "TenantId", reasonIdentifier),
	collation("ExecutionAttempts", "ProjectId", reasonIdentifier),
	collation("ExecutionAttempts", "EnvironmentId", reasonIdentifier),
	collation("ExecutionAttempts", "ReleaseId", reasonIdentifier),
	collation("ExecutionAttempts", "AgentId", reasonIdentifier),
	collation("ExecutionAttempts", "ModelProfileId", reasonIdentifier),
	collation("ExecutionAttempts", "OutcomeHash", reasonHash),
	{
		Table: "ExecutionAttempts", Kind: AddColumn, Item: "AdapterVersion",
		Definition: "nvarchar(32) COLLATE " + BIN2 + " NOT NULL",
		Reason:     "DESIGN.md section 5: records which adapter of the release the attempt runs (a claim names releaseId and adapterVersion); same type as Checkpoints.AdapterVersion",
	},
	{
		Table: "ExecutionAttempts", Kind: AddColumn, Item: "ErrorCode",
		Definition: "nvarchar(64) COLLATE " + BIN2 + " NULL",
		Reason: "DESIGN.md section 5b (Why it failed, issue 29): the error code a complete or release reported, or the " +
			"reaper's lease_lost (migration 000021); the runs list filters by the run's copy, so BIN2 like an identifier",
	},
	{
		Table: "ExecutionAttempts", Kind: AddColumn, Item: "ErrorMessage",
		Definition: "nvarchar(2000) NULL",
		Reason:     "DESIGN.md section 5b (Why it failed, issue 29): the error's message, at most 2,000 characters like the run's seed ErrorMessage (migration 000021)",
	},
	{
		Table: "ExecutionAttempts", Kind: AddColumn, Item: "ErrorDetails",
		Definition: "nvarchar(max) NULL",
		Reason:     "DESIGN.md section 5b (Why it failed, issue 29): the error's details, any JSON of at most 16 KiB (a bounded stack) (migration 000021)",
	},
	{
		Table: "ExecutionAttempts", Kind: AddIndex, Item: "IX_Attempts_Tenant_Started",
		Definition: "INDEX (TenantId, StartedAt, AttemptId)",
		Reason:     reasonHistory + ": GET /v1/attempts newest first with keyset pagination",
	},
	{
		Table: "ExecutionAttempts", Kind: AddIndex, Item: "IX_Attempts_Tenant_Version",
		Definition: "INDEX (TenantId, Version, AttemptId)",
		Reason:     reasonHistory + ": GET /v1/attempts?changedSince in Version order",
	},
	{
		Table: "ExecutionAttempts", Kind: AddIndex, Item: "IX_Attempts_Tenant_State_Ended",
		Definition: "INDEX (TenantId, State, EndedAt) INCLUDE (ProjectId, AgentId, ReleaseId, RunId)",
		Reason: "DESIGN.md section 5a (insights, issue 21): attempts ended in a window, one range per state (lost and " +
			"released apart), leases lost per agent and release, and the console's leases lost in the last hour, each " +
			"bounded to its window (IX_Attempts_Tenant_State reads every attempt of a state the tenant keeps)",
	},
	{
		Table: "ExecutionAttempts", Kind: AddIndex, Item: "IX_Attempts_Version",
		Definition: "INDEX (Version) INCLUDE (TenantId, RunId, State, EndedAt, ProjectId, AgentId, ReleaseId, ErrorCode)",
		Reason:     reasonFeed,
	},
	{
		Table: "ExecutionAttempts", Kind: AddIndex, Item: "IX_Attempts_Release",
		Definition: "INDEX (ReleaseId, AdapterVersion, State)",
		Reason:     "DESIGN.md section 5: draining or retiring a release finds the running attempts of that release and adapter",
	},

	// Checkpoints
	collation("Checkpoints", "TenantId", reasonIdentifier),
	collation("Checkpoints", "AdapterVersion", reasonIdentifier),
	collation("Checkpoints", "Hash", reasonHash),

	// CallRecords
	collation("CallRecords", "TenantId", reasonIdentifier),
	collation("CallRecords", "RequestHash", reasonHash),
	collation("CallRecords", "Status", reasonStatus),
	{
		Table: "CallRecords", Kind: AddColumn, Item: "Version",
		Definition: "rowversion NOT NULL",
		Reason:     reasonRowversion + " (finished by PATCH …/calls/{callId})",
	},
	{
		Table: "CallRecords", Kind: AddIndex, Item: "IX_Calls_Tenant_Started",
		Definition: "INDEX (TenantId, StartedAt) INCLUDE (AttemptId, Target, Status, EndedAt)",
		Reason: "DESIGN.md section 5a (insights, issue 21): calls started in a window, per target, with their status and " +
			"duration; the seed indexes calls by attempt only",
	},
	{
		Table: "CallRecords", Kind: AddIndex, Item: "IX_Calls_Tenant_Ended",
		Definition: "INDEX (TenantId, EndedAt)",
		Reason: "issue 29 item 2: the tenant's calls finished in a window (GET /v1/calls by end, the usage insight's rows " +
			"link there), a page at a time; no other index bounds a call's end",
	},
	{
		Table: "CallRecords", Kind: AddIndex, Item: "IX_Calls_Version",
		Definition: "INDEX (Version) INCLUDE (TenantId, AttemptId, Target, Status, StartedAt, EndedAt, Model, InputTokens, OutputTokens, " +
			"CacheReadInputTokens, CacheCreationInputTokens, ReasoningOutputTokens, CostMicros)",
		Reason: reasonFeed,
	},

	{
		Table: "CallRecords", Kind: AddColumn, Item: "Model",
		Definition: "nvarchar(128) COLLATE Latin1_General_100_BIN2 NULL",
		Reason:     reasonUsage + ": the model a call names when it starts (gen_ai.request.model)",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "Provider",
		Definition: "nvarchar(64) COLLATE Latin1_General_100_BIN2 NULL",
		Reason:     reasonUsage + ": the provider a call names (gen_ai.provider.name)",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "Operation",
		Definition: "nvarchar(32) COLLATE Latin1_General_100_BIN2 NULL",
		Reason:     reasonUsage + ": the operation a call names (gen_ai.operation.name: chat, embeddings, execute_tool, …)",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "ResponseModel",
		Definition: "nvarchar(128) COLLATE Latin1_General_100_BIN2 NULL",
		Reason:     reasonUsage + ": the model that answered, reported at finish (gen_ai.response.model)",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "FinishReasons",
		Definition: "nvarchar(400) NULL",
		Reason:     reasonUsage + ": the finish reasons reported at finish, a JSON array of at most 8 short strings",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "InputTokens",
		Definition: "bigint NULL",
		Reason:     reasonUsage + ": input tokens reported at finish",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "OutputTokens",
		Definition: "bigint NULL",
		Reason:     reasonUsage + ": output tokens reported at finish",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "CacheReadInputTokens",
		Definition: "bigint NULL",
		Reason:     reasonUsage + ": input tokens read from the provider's cache, reported at finish",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "CacheCreationInputTokens",
		Definition: "bigint NULL",
		Reason:     reasonUsage + ": input tokens written to the provider's cache, reported at finish",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "ReasoningOutputTokens",
		Definition: "bigint NULL",
		Reason:     reasonUsage + ": reasoning output tokens reported at finish",
	},
	{
		Table: "CallRecords", Kind: AddColumn, Item: "CostMicros",
		Definition: "bigint NULL",
		Reason:     reasonUsage + ": the call's cost in micro-units of the tenant's currency, reported at finish (daily project budgets count it)",
	},

	// DecisionRequests
	collation("DecisionRequests", "TenantId", reasonIdentifier),
	collation("DecisionRequests", "ProposalHash", reasonHash),
	collation("DecisionRequests", "Status", reasonStatus),
	{
		Table: "DecisionRequests", Kind: AddColumn, Item: "Version",
		Definition: "rowversion NOT NULL",
		Reason:     reasonRowversion + " (answered with If-Match; 412 when stale)",
	},
	{
		Table: "DecisionRequests", Kind: AddColumn, Item: "AnswerJson",
		Definition: "nvarchar(max) NULL",
		Reason:     "DESIGN.md section 5: the answer's optional JSON, which the holder reads with GET",
	},
	{
		Table: "DecisionRequests", Kind: AddColumn, Item: "AnsweredBy",
		Definition: "nvarchar(64) COLLATE " + BIN2 + " NULL",
		Reason:     "DESIGN.md section 5: records the API key that answered (a KeyId, so BIN2 like every identifier)",
	},
	{
		Table: "DecisionRequests", Kind: AddColumn, Item: "ExpiresAt",
		Definition: "datetimeoffset NULL",
		Reason:     "DESIGN.md section 5: set by expiresInSeconds; the reaper marks pending decisions past it expired",
	},
	{
		Table: "DecisionRequests", Kind: AddColumn, Item: "PriorPhase",
		Definition: "int NULL",
		Reason: "DESIGN.md section 5: a decision request moves its attempt to awaiting_decision and its answer or expiry " +
			"restores the phase it had before; the phase is kept here (migration 000012; NULL on older rows: closing one leaves the phase alone)",
	},
	{
		Table: "DecisionRequests", Kind: AddIndex, Item: "IX_Decisions_Tenant_Status",
		Definition: "INDEX (TenantId, Status, RequestedAt, DecisionId)",
		Reason:     reasonHistory + ": the admin inbox GET /v1/decisions?status=pending",
	},
	{
		Table: "DecisionRequests", Kind: AddIndex, Item: "IX_Decisions_Attempt",
		Definition: "INDEX (AttemptId, RequestedAt)",
		Reason:     reasonHistory + ": an attempt's decisions and its timeline; cancelling pending decisions when the attempt ends",
	},
	{
		Table: "DecisionRequests", Kind: AddIndex, Item: "IX_Decisions_PendingExpiry",
		Definition: "INDEX (ExpiresAt) WHERE Status = N'pending' AND ExpiresAt IS NOT NULL",
		Reason:     "DESIGN.md section 4: the reaper seeks pending decisions past ExpiresAt across tenants",
	},
	{
		Table: "DecisionRequests", Kind: AddIndex, Item: "IX_Decisions_Version",
		Definition: "INDEX (Version) INCLUDE (TenantId, AttemptId, Kind, Status, RequestedAt, AnsweredAt)",
		Reason:     reasonFeed,
	},
	{
		Table: "DecisionRequests", Kind: AddColumn, Item: "RunId",
		Definition: "uniqueidentifier NULL",
		Reason: "DESIGN.md section 5b (issue 28): decisions belong to the run; the run an idempotency key is unique in " +
			"(migration 000028; NULL on older rows, whose run is their attempt's)",
	},
	{
		Table: "DecisionRequests", Kind: AddColumn, Item: "IdempotencyKey",
		Definition: "nvarchar(256) COLLATE " + BIN2 + " NULL",
		Reason:     "DESIGN.md section 5b (issue 28): a decision asked again after a crash with the same key is the same decision",
	},
	{
		Table: "DecisionRequests", Kind: AddColumn, Item: "RequestHash",
		Definition: "nvarchar(64) COLLATE " + BIN2 + " NULL",
		Reason:     reasonHash + " (issue 28: the same key with another request is 409 idempotency_key_reused)",
	},
	{
		Table: "DecisionRequests", Kind: AddIndex, Item: "UX_Decisions_Idempotency",
		Definition: "UNIQUE INDEX (TenantId, RunId, IdempotencyKey) WHERE IdempotencyKey IS NOT NULL",
		Reason:     "DESIGN.md section 5b (issue 28): a decision's idempotency key is unique per run (filtered: most have none)",
	},

	// SubAgentDelegations
	collation("SubAgentDelegations", "TenantId", reasonIdentifier),
	collation("SubAgentDelegations", "ChildAgentId", reasonIdentifier),
	collation("SubAgentDelegations", "Status", reasonStatus),
	{
		Table: "SubAgentDelegations", Kind: AddColumn, Item: "Version",
		Definition: "rowversion NOT NULL",
		Reason:     reasonRowversion + " (Status follows the child run)",
	},
	{
		Table: "SubAgentDelegations", Kind: AddColumn, Item: "CreatedAt",
		Definition: "datetimeoffset NOT NULL",
		Reason:     "DESIGN.md section 5: the seed has no time on a delegation; the timeline merges children by time",
	},
	{
		Table: "SubAgentDelegations", Kind: AddIndex, Item: "IX_Delegations_Attempt",
		Definition: "INDEX (AttemptId, CreatedAt)",
		Reason:     reasonHistory + ": an attempt's delegations and its timeline",
	},

	// LoadedReleases
	collation("LoadedReleases", "ReleaseId", reasonIdentifier),
	collation("LoadedReleases", "AdapterVersion", reasonIdentifier),
	collation("LoadedReleases", "TenantId", reasonIdentifier),
	collation("LoadedReleases", "ManifestHash", reasonHash),
	collation("LoadedReleases", "InFlightPolicy", reasonStatus),
	{
		Table: "LoadedReleases", Kind: AddColumn, Item: "Version",
		Definition: "rowversion NOT NULL",
		Reason:     reasonRowversion + " (state moves need If-Match)",
	},
}
