package sqllint

import (
	"strings"
	"testing"
)

// endLeasedBefore is runs' endLeased statement as it was before issue 26 item 1: @t's string
// columns took the database's default collation, and the SubjectQueued probe compares two
// of them with dbo.Runs' BIN2 columns (Msg 468 on a database whose default is not BIN2).
const endLeasedBefore = `DECLARE @t TABLE (RunId uniqueidentifier, TenantId nvarchar(64), ProjectId nvarchar(64),
    EnvironmentId nvarchar(64), Subject nvarchar(256), Kind nvarchar(64), AgentId nvarchar(128), StepId uniqueidentifier,
    SnapshotId uniqueidentifier, Input nvarchar(max), Band int, State int, Epoch bigint, HolderId nvarchar(128),
    LeaseSeconds int, LeasedUntil datetimeoffset(3), Attempt int, MaxAttempts int, MaxCorrections int,
    QueuedAt datetimeoffset(3), DueAt datetimeoffset(3), DeadlineAt datetimeoffset(3), EndedAt datetimeoffset(3),
    Outcome nvarchar(16), ErrorCode nvarchar(64), ErrorMessage nvarchar(2000), CancelRequestedAt datetimeoffset(3),
    IdempotencyKey nvarchar(256), ParentRunId uniqueidentifier, Depth int, ContinuedFromRunId uniqueidentifier,
    CreatedBy nvarchar(64), Version binary(8), SubjectHead bit);
UPDATE dbo.Runs SET State = 2, Outcome = @p3, EndedAt = @p4, Attempt = @p5, LeasedUntil = NULL
OUTPUT inserted.RunId, inserted.TenantId, inserted.ProjectId, inserted.EnvironmentId, inserted.Subject,
    inserted.Kind, inserted.AgentId, inserted.StepId, inserted.SnapshotId, inserted.Input, inserted.Band,
    inserted.State, inserted.Epoch, inserted.HolderId, inserted.LeaseSeconds, inserted.LeasedUntil,
    inserted.Attempt, inserted.MaxAttempts, inserted.MaxCorrections, inserted.QueuedAt, inserted.DueAt,
    inserted.DeadlineAt, inserted.EndedAt, inserted.Outcome, inserted.ErrorCode, inserted.ErrorMessage,
    inserted.CancelRequestedAt, inserted.IdempotencyKey, inserted.ParentRunId, inserted.Depth,
    inserted.ContinuedFromRunId, inserted.CreatedBy, inserted.Version, inserted.SubjectHead
INTO @t
WHERE RunId = @p1 AND Epoch = @p2 AND State = 1 AND (@p6 IS NULL OR LeasedUntil < @p6);
SELECT RunId, TenantId, SubjectHead,
    CASE WHEN EXISTS (SELECT 1 FROM dbo.Runs AS q WHERE q.TenantId = t.TenantId AND q.Subject = t.Subject AND q.State = 0)
        THEN CAST(1 AS bit) ELSE CAST(0 AS bit) END AS SubjectQueued
FROM @t AS t;`

func TestCollationRuleFailsOnTheOldEndLeased(t *testing.T) {
	t.Parallel()
	got := LintTSQL(endLeasedBefore, nil)
	var cols []string
	for _, f := range got {
		if strings.Contains(f.Msg, "declared without COLLATE") {
			cols = append(cols, f.Msg[:strings.Index(f.Msg, " ")])
		}
	}
	if strings.Join(cols, ",") != "t.TenantId,t.Subject" {
		t.Errorf("LintTSQL(old endLeased) flagged %q; want t.TenantId and t.Subject: %v", cols, got)
	}
	// ComparePair judges the whole statement of a query set, which the Go-source lint sees
	// only in pieces.
	sqlite := "UPDATE Runs SET State = 2 WHERE RunId = ?1 AND Epoch = ?2 AND Outcome = ?3 AND EndedAt = ?4 AND Attempt = ?5 AND ?6 IS NULL"
	if ps := ComparePair(endLeasedBefore, sqlite); len(ps) != 2 || !strings.Contains(ps[0], "COLLATE") {
		t.Errorf("ComparePair(old endLeased) = %q; want the two collation findings", ps)
	}
	fixed := strings.Replace(strings.Replace(endLeasedBefore, "TenantId nvarchar(64),", "TenantId nvarchar(64) COLLATE Latin1_General_100_BIN2,", 1),
		"Subject nvarchar(256),", "Subject nvarchar(256) COLLATE Latin1_General_100_BIN2,", 1)
	if got := LintTSQL(fixed, nil); len(got) != 0 {
		t.Errorf("LintTSQL(endLeased with collated columns) = %v; want none", got)
	}
}

func TestCollationRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, sql string
		want      int
	}{
		{"join on an uncollated column", "DECLARE @k TABLE (Id nvarchar(64)); SELECT r.RunId FROM dbo.Runs AS r JOIN @k AS k ON r.Kind = k.Id;", 1},
		{"alias without AS", "DECLARE @k TABLE (Id nvarchar(64)); SELECT r.RunId FROM dbo.Runs r JOIN @k k ON k.Id <> r.Kind;", 1},
		{"temp table qualified by its name", "CREATE TABLE #k (Id varchar(64) NOT NULL); SELECT 1 FROM dbo.Runs AS r WHERE r.Kind = #k.Id;", 1},
		{"COLLATE on the comparison", "DECLARE @k TABLE (Id nvarchar(64)); SELECT r.RunId FROM dbo.Runs AS r JOIN @k AS k ON r.Kind = k.Id COLLATE Latin1_General_100_BIN2;", 0},
		{"COLLATE on the table column side", "DECLARE @k TABLE (Id nvarchar(64)); SELECT r.RunId FROM dbo.Runs AS r JOIN @k AS k ON k.Id = r.Kind COLLATE Latin1_General_100_BIN2;", 0},
		{"COLLATE before the operator", "DECLARE @k TABLE (Id nvarchar(64)); SELECT r.RunId FROM dbo.Runs AS r JOIN @k AS k ON k.Id COLLATE Latin1_General_100_BIN2 = r.Kind;", 0},
		{"COLLATE on the left table column", "DECLARE @k TABLE (Id nvarchar(64)); SELECT r.RunId FROM dbo.Runs AS r JOIN @k AS k ON r.Kind COLLATE Latin1_General_100_BIN2 = k.Id;", 0},
		{"collated declaration", "DECLARE @k TABLE (Id nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL, N int); SELECT r.RunId FROM dbo.Runs AS r JOIN @k AS k ON r.Kind = k.Id;", 0},
		{"compared with a parameter", "DECLARE @k TABLE (Id nvarchar(64)); SELECT k.Id FROM @k AS k WHERE k.Id = @p1;", 0},
		{"not a string column", "DECLARE @k TABLE (Id uniqueidentifier, Name nvarchar(10)); SELECT r.RunId FROM dbo.Runs AS r JOIN @k AS k ON r.RunId = k.Id;", 0},
		{"two table variables", "DECLARE @a TABLE (Id nvarchar(64)); DECLARE @b TABLE (Id nvarchar(64)); SELECT a.Id FROM @a AS a JOIN @b AS b ON a.Id = b.Id;", 0},
	}
	for _, c := range cases {
		got := CollationFindings(mustLex(t, c.sql))
		if len(got) != c.want {
			t.Errorf("%s: CollationFindings = %v; want %d finding(s)", c.name, got, c.want)
		}
	}
}

func mustLex(t *testing.T, sql string) []Token {
	t.Helper()
	toks, err := Lex(sql, true)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}
