package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/migrations/mssql"
)

// storedMembers are the request members a column keeps as given, with the columns that
// keep them (Table.Column of the SQL Server migrations, whose nvarchar(n) is the width;
// SQLite's TEXT has none). limit names api's constant where the member's text is checked
// by a handler too, which the tag then names (api.LimitTags) rather than repeats (0: the
// validate tag is the only statement of the limit).
var storedMembers = []struct {
	member  any    // the request type
	field   string // its Go field
	columns []string
	limit   int
}{
	{api.RunSpec{}, "Subject", []string{"Runs.Subject"}, 0},
	{api.RunSpec{}, "Kind", []string{"Runs.Kind", "InsightCells.Kind"}, 0},
	{api.RunSpec{}, "ProjectID", []string{"Runs.ProjectId", "Projects.ProjectId", "ExecutionAttempts.ProjectId"}, 0},
	{api.RunSpec{}, "AgentID", []string{"Runs.AgentId", "ExecutionAttempts.AgentId", "SubAgentDelegations.ChildAgentId", "TaskRunLocks.AgentId"}, 0},
	{api.RunSpec{}, "EnvironmentID", []string{"Runs.EnvironmentId", "ExecutionAttempts.EnvironmentId"}, 0},
	{api.RunSpec{}, "IdempotencyKey", []string{"Runs.IdempotencyKey", "IdempotencyTombstones.IdempotencyKey"}, 0},
	{api.RunExtras{}, "TraceParent", []string{"Runs.TraceParent"}, 0},
	{api.AttemptError{}, "Message", []string{"Runs.ErrorMessage", "ExecutionAttempts.ErrorMessage"}, api.MaxErrorMessage},
	{api.ClaimRequest{}, "HolderID", []string{"Runs.HolderId"}, 0},
	{api.ClaimRequest{}, "ReleaseID", []string{"ExecutionAttempts.ReleaseId", "LoadedReleases.ReleaseId"}, 0},
	{api.ClaimRequest{}, "AdapterVersion", []string{"ExecutionAttempts.AdapterVersion", "Checkpoints.AdapterVersion"}, 0},
	{api.ClaimRequest{}, "ModelProfileID", []string{"ExecutionAttempts.ModelProfileId"}, 0},
	{api.CompleteAttemptRequest{}, "OutcomeHash", []string{"ExecutionAttempts.OutcomeHash"}, 0},
	{api.PatchAttemptRequest{}, "ContextSnapshotRef", []string{"ExecutionAttempts.ContextSnapshotRef"}, 0},
	{api.LockRequest{}, "HolderID", []string{"TaskRunLocks.HolderId"}, 0},
	{api.CheckpointRequest{}, "AdapterStateRef", []string{"Checkpoints.AdapterStateRef"}, 0},
	{api.CheckpointRequest{}, "AdapterVersion", []string{"Checkpoints.AdapterVersion"}, 0},
	{api.CheckpointRequest{}, "Hash", []string{"Checkpoints.Hash"}, 0},
	{api.CheckpointRequest{}, "ContextSnapshotRef", []string{"Checkpoints.ContextSnapshotRef"}, 0},
	{api.CallRequest{}, "Target", []string{"CallRecords.Target"}, 0},
	{api.CallRequest{}, "RequestHash", []string{"CallRecords.RequestHash"}, 0},
	{api.CallRequest{}, "Model", []string{"CallRecords.Model"}, 0},
	{api.CallRequest{}, "Provider", []string{"CallRecords.Provider"}, 0},
	{api.CallRequest{}, "Operation", []string{"CallRecords.Operation"}, 0},
	{api.FinishCallRequest{}, "ReceiptRef", []string{"CallRecords.ReceiptRef"}, 0},
	{api.FinishCallRequest{}, "ResponseModel", []string{"CallRecords.ResponseModel"}, 0},
	{api.DecisionRequest{}, "ProposalHash", []string{"DecisionRequests.ProposalHash"}, 0},
	{api.DecisionRequest{}, "Recommendation", []string{"DecisionRequests.Recommendation"}, api.MaxRecommendation},
	{api.DecisionRequest{}, "IdempotencyKey", []string{"DecisionRequests.IdempotencyKey"}, 0},
	{api.DelegationRequest{}, "Purpose", []string{"SubAgentDelegations.Purpose"}, api.MaxPurpose},
	{api.BulkRunsRequest{}, "Reason", []string{"Operations.Reason"}, 0},
	{api.PutScheduleRequest{}, "Cron", []string{"Schedules.Cron"}, 0},
	{api.PutScheduleRequest{}, "Timezone", []string{"Schedules.Timezone"}, 0},
	{api.PutScheduleRequest{}, "Description", []string{"Schedules.Description"}, 0},
	{api.PutWebhookRequest{}, "URL", []string{"WebhookEndpoints.Url"}, 0},
	{api.PutWebhookRequest{}, "Description", []string{"WebhookEndpoints.Description"}, 0},
}

var tagLimit = regexp.MustCompile(`(?:^|,)(?:max|ident|segment)=(\d+)(?:,|$)`)

// A column that keeps a request member as given is exactly as wide as the member's limit:
// the validate tag's (what the validator and the OpenAPI document read, limit tags expanded),
// and api's constant where a handler checks the text too, which the tag names. Wider would accept what the API refuses, narrower
// would make an accepted request fail at the insert (SQL Server truncates with Msg 2628).
func TestLimitsMatchColumns(t *testing.T) {
	t.Parallel()
	s := dialectSchema(t, mssql.FS, true)
	width := regexp.MustCompile(`^n?varchar\((\d+)\)$`)
	for _, m := range storedMembers {
		typ := reflect.TypeOf(m.member)
		f, ok := typ.FieldByName(m.field)
		if !ok {
			t.Errorf("api.%s has no field %s", typ.Name(), m.field)
			continue
		}
		tag := f.Tag.Get("validate")
		got := tagLimit.FindStringSubmatch(api.ExpandLimitTags(tag))
		if got == nil {
			t.Errorf("api.%s.%s: its validate tag %q states no length", typ.Name(), m.field, tag)
			continue
		}
		limit, _ := strconv.Atoi(got[1])
		if m.limit != 0 && m.limit != limit {
			t.Errorf("api.%s.%s: validate tag says %d, api's constant %d", typ.Name(), m.field, limit, m.limit)
		}
		// A limit api states is named in the tag (api.LimitTags), not repeated as a number.
		if m.limit != 0 && tagLimit.MatchString(tag) {
			t.Errorf("api.%s.%s: validate tag %q repeats api's limit %d as a number; name it (api.LimitTags)", typ.Name(), m.field, tag, m.limit)
		}
		for _, col := range m.columns {
			table, name, _ := strings.Cut(col, ".")
			tbl := s.Tables[table]
			if tbl == nil {
				t.Errorf("%s: no table %s in migrations/mssql", col, table)
				continue
			}
			c, _ := tbl.column(name)
			if c == nil {
				t.Errorf("%s: no such column in migrations/mssql", col)
				continue
			}
			w := width.FindStringSubmatch(c.Type)
			if w == nil {
				t.Errorf("%s is %s, not a text column of a stated width", col, c.Type)
				continue
			}
			if n, _ := strconv.Atoi(w[1]); n != limit {
				t.Errorf("%s is %s; api.%s.%s allows %d", col, c.Type, typ.Name(), m.field, limit)
			}
		}
	}
}

// docs/runtimes.md's table of limits states api's: a runtime author reads the numbers there.
func TestLimitsInRuntimesDoc(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "runtimes.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{
		fmt.Sprintf("| `purpose` / `recommendation` (free text) | %d / %d |", api.MaxPurpose, api.MaxRecommendation),
		fmt.Sprintf("`message` at most %d UTF-16 code units", api.MaxErrorMessage),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/runtimes.md does not say %q", want)
		}
	}
}
