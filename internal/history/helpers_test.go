package history_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/history"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

var epoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// env is one case's world: its own database with an injected clock, the run core (which
// makes real attempts by claims), the history store and a tenant.
type env struct {
	t      *testing.T
	ctx    context.Context
	db     *sqldb.DB
	clock  *dbtest.Clock
	svc    *runs.Service
	store  *history.Store
	tenant string
	caller runs.Caller
	n      int
}

func newEnv(t *testing.T, tgt dbtest.Target) *env {
	t.Helper()
	clock := dbtest.NewClock(epoch)
	db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
	e := &env{t: t, ctx: context.Background(), db: db, clock: clock, svc: runs.NewService(db, runs.DefaultConfig(), nil),
		store: history.NewStore(db)}
	e.tenant = e.newTenant()
	e.caller = runs.Caller{TenantID: e.tenant, KeyID: "test-key"}
	return e
}

// newTenant makes a tenant with projects p1 and p2.
func (e *env) newTenant() string {
	e.t.Helper()
	tenant := dbtest.NewTenant(e.t, e.db)
	for _, p := range []string{"p1", "p2"} {
		if _, _, err := projects.NewStore(e.db).Put(e.ctx, tenant, p, projects.Change{}); err != nil {
			e.t.Fatal(err)
		}
	}
	return tenant
}

type attemptOpt func(*runs.Spec)

func agent(id string) attemptOpt   { return func(s *runs.Spec) { s.AgentID = id } }
func project(id string) attemptOpt { return func(s *runs.Spec) { s.ProjectID = id } }

// attempt enqueues a run on a fresh subject and claims it: one running attempt, started at
// the clock's time.
func (e *env) attempt(opts ...attemptOpt) runs.Claimed {
	e.t.Helper()
	return e.attemptFor(e.caller, opts...)
}

func (e *env) attemptFor(c runs.Caller, opts ...attemptOpt) runs.Claimed {
	e.t.Helper()
	e.n++
	s := runs.Spec{ProjectID: "p1", Subject: fmt.Sprintf("subject-%d", e.n), Kind: "review", AgentID: "agent-1",
		StepID: uuid.New(), SnapshotID: uuid.New(), Band: api.BandBatch, MaxAttempts: 5, MaxCorrections: 3}
	for _, o := range opts {
		o(&s)
	}
	if _, _, err := e.svc.Enqueue(e.ctx, c, s); err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	cl, err := e.svc.Claim(e.ctx, c, runs.ClaimRequest{HolderID: "h", ReleaseID: "rel", AdapterVersion: "1", ModelProfileID: "m"})
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	return cl
}

// Child rows of an attempt, written with plain SQL: the packages that own these tables are
// not needed to read them back.
var childSQL = map[string]map[string]string{
	"sqlite": {
		"checkpoint": `INSERT INTO Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef,
    AdapterVersion, ContextSnapshotRef, Hash, CreatedAt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)`,
		"call": `INSERT INTO CallRecords (CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, PolicyDecisionId,
    ReceiptRef, Status, StartedAt, EndedAt, Version)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, (SELECT Value + 1 FROM RowVersionCounter))`,
		"decision": `INSERT INTO DecisionRequests (DecisionId, AttemptId, TenantId, Kind, ApprovalId, ProposalHash, OptionsJson,
    Recommendation, Status, RequestedAt, AnsweredAt, AnswerJson, AnsweredBy, ExpiresAt, Version)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, (SELECT Value + 1 FROM RowVersionCounter))`,
		"delegation": `INSERT INTO SubAgentDelegations (DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth,
    Status, CreatedAt, Version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, (SELECT Value + 1 FROM RowVersionCounter))`,
	},
	"sqlserver": {
		"checkpoint": `INSERT INTO dbo.Checkpoints (CheckpointId, AttemptId, TenantId, Sequence, Phase, AdapterStateRef,
    AdapterVersion, ContextSnapshotRef, Hash, CreatedAt) VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10);`,
		"call": `INSERT INTO dbo.CallRecords (CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, PolicyDecisionId,
    ReceiptRef, Status, StartedAt, EndedAt) VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11, @p12);`,
		"decision": `INSERT INTO dbo.DecisionRequests (DecisionId, AttemptId, TenantId, Kind, ApprovalId, ProposalHash, OptionsJson,
    Recommendation, Status, RequestedAt, AnsweredAt, AnswerJson, AnsweredBy, ExpiresAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11, @p12, @p13, @p14);`,
		"delegation": `INSERT INTO dbo.SubAgentDelegations (DelegationId, AttemptId, TenantId, ChildRunId, ChildAgentId, Purpose, Depth,
    Status, CreatedAt) VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9);`,
	},
}

func (e *env) exec(tenant, kind string, args ...any) {
	e.t.Helper()
	err := e.db.Write(e.ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(e.ctx, childSQL[tx.Dialect.Name()][kind], args...)
		return err
	})
	if err != nil {
		e.t.Fatalf("insert %s: %v", kind, err)
	}
}

func (e *env) checkpoint(a runs.Claimed, seq int, at time.Time) uuid.UUID {
	e.t.Helper()
	id := ids.New()
	e.exec(a.Attempt.TenantID, "checkpoint", id, a.Attempt.AttemptID, a.Attempt.TenantID, seq, 2, "state://"+id.String(),
		"1.0", nil, fmt.Sprintf("hash-%d", seq), e.time(at))
	return id
}

func (e *env) call(a runs.Claimed, seq int, at time.Time) uuid.UUID {
	e.t.Helper()
	id := ids.New()
	e.exec(a.Attempt.TenantID, "call", id, a.Attempt.AttemptID, a.Attempt.TenantID, seq, 1, "tool:search",
		fmt.Sprintf("req-%d", seq), nil, "receipt://x", "succeeded", e.time(at), e.time(at.Add(time.Second)))
	return id
}

func (e *env) decision(a runs.Claimed, at time.Time) uuid.UUID {
	e.t.Helper()
	id := ids.New()
	e.exec(a.Attempt.TenantID, "decision", id, a.Attempt.AttemptID, a.Attempt.TenantID, 1, nil, "ph", `{"options":["a","b"]}`,
		"a", "approved", e.time(at), e.time(at.Add(time.Minute)), `{"pick":"a"}`, "admin-key", nil)
	return id
}

func (e *env) delegation(a runs.Claimed, at time.Time) uuid.UUID {
	e.t.Helper()
	id := ids.New()
	e.exec(a.Attempt.TenantID, "delegation", id, a.Attempt.AttemptID, a.Attempt.TenantID, ids.New(), "child-agent",
		"summarise", 1, "pending", e.time(at))
	return id
}

func (e *env) time(t time.Time) any { return e.db.Dialect.Time(t) }
