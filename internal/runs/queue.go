package runs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// A subject's queue is its runs in queue order (QueuedAt, then RunId); its head is the
// oldest queued run while it has no leased run, and carries SubjectHead = 1 (the marker the
// claim seeks). Every transaction that changes a subject's queue (inserts a run, leases,
// requeues or ends one) takes the subject lock first and recomputes the marker (syncHead)
// before it commits: queries_mssql.go's syncHead says why that is enough under SQL Server's
// concurrency; SQLite has one writer, so the lock is no statement there.

// lockSubject takes the subject lock of tenant's subject until the transaction ends.
func (s *Service) lockSubject(ctx context.Context, tx *sqldb.Tx, tenantID, subject string) error {
	if s.q.lockSubject == "" {
		return nil
	}
	var code int
	if err := tx.GetContext(ctx, &code, s.q.lockSubject, subjectLockName(tenantID, subject)); err != nil {
		return fmt.Errorf("lock subject: %w", err)
	}
	switch {
	case code == -999:
		// A parameter or call error (sp_getapplock's own "anything else"): a bug to log,
		// not contention to retry.
		return fmt.Errorf("lock subject: sp_getapplock refused the call (%d)", code)
	case code < 0:
		// -1 timed out, -2 cancelled, -3 chosen as a deadlock victim: the transaction was not
		// rolled back for it, so it is run again from the start.
		return fmt.Errorf("lock subject: not granted (%d): %w", code, sqldb.ErrRetryable)
	}
	return nil
}

// subjectLockName names the lock of a tenant's subject: a fixed-length hash, since the two
// together can be longer than a lock name may be, and a lock name compares byte for byte.
func subjectLockName(tenantID, subject string) string {
	sum := sha256.Sum256([]byte(tenantID + "\x00" + subject))
	return "ledger/subject/" + hex.EncodeToString(sum[:])
}

// syncHead makes the subject's head marker its definition again, after a change of its
// queue in this transaction. The caller holds the subject lock. It reports whether a marker
// moved, by the count of rows the statements changed: after a run of the subject ends, that
// its next queued run became the head, which is work for waiting claimers. That is a hint
// only: on SQL Server go-mssqldb sums the counts of every statement the batch runs, a
// trigger's included, so it may say moved when nothing did. A wrong hint costs a claimer a
// look, or leaves the run to the next poll, never more.
func (s *Service) syncHead(ctx context.Context, tx *sqldb.Tx, tenantID, subject string) (moved bool, err error) {
	res, err := tx.ExecContext(ctx, s.q.syncHead, tenantID, subject)
	if err != nil {
		return false, fmt.Errorf("mark the head of subject: %w", err)
	}
	n, err := res.RowsAffected()
	return err == nil && n > 0, nil
}

// countLease moves the tenant's and the project's leased counts by delta (+1 at a claim,
// -1 when a run leaves its lease), tenant first (the lock order).
func (s *Service) countLease(ctx context.Context, tx *sqldb.Tx, run Run, delta int) error {
	tenant, project := s.q.tenantLeased, s.q.projectLeased
	if delta < 0 {
		tenant, project = s.q.tenantUnleased, s.q.projectUnleased
	}
	if _, err := tx.ExecContext(ctx, tenant, run.TenantID); err != nil {
		return fmt.Errorf("count tenant lease: %w", err)
	}
	if _, err := tx.ExecContext(ctx, project, run.TenantID, run.ProjectID); err != nil {
		return fmt.Errorf("count project lease: %w", err)
	}
	return nil
}

// requestHash is the SHA-256 (hex) of the fields that define the run an enqueue asks for,
// so a reused idempotency key tells an exact repeat from another request: every field of
// the request but the key itself, after defaults (band, maxAttempts, maxCorrections), with
// times in UTC milliseconds (what is stored) and the input JSON compacted (white space does
// not make another run; member order does, as the stored input would differ; metadata is
// compacted before it gets here, and tags keep their order, as stored). dueAt is
// hashed as given, so a request without it and one naming a time differ.
func (spec Spec) requestHash() string {
	input := json.RawMessage(nil)
	if len(spec.Input) > 0 {
		var b bytes.Buffer
		if json.Compact(&b, spec.Input) == nil {
			input = b.Bytes()
		} else {
			input = json.RawMessage(fmt.Sprintf("%q", string(spec.Input)))
		}
	}
	ms := func(t *time.Time) *string {
		if t == nil {
			return nil
		}
		s := sqldb.Truncate(*t).Format(sqldb.TimeLayout)
		return &s
	}
	b, _ := json.Marshal(struct {
		ProjectID      string          `json:"projectId"`
		EnvironmentID  *string         `json:"environmentId"`
		Subject        string          `json:"subject"`
		Kind           string          `json:"kind"`
		AgentID        string          `json:"agentId"`
		StepID         uuid.UUID       `json:"stepId"`
		SnapshotID     uuid.UUID       `json:"snapshotId"`
		Input          json.RawMessage `json:"input"`
		Band           int             `json:"band"`
		MaxAttempts    int             `json:"maxAttempts"`
		MaxCorrections int             `json:"maxCorrections"`
		DueAt          *string         `json:"dueAt"`
		DeadlineAt     *string         `json:"deadlineAt"`
		ParentRunID    *uuid.UUID      `json:"parentRunId"`
		// Tags and metadata are left out when absent, so the hashes of requests made before
		// they existed stay as they were (a repeat of such a request still answers 200).
		Tags     []string        `json:"tags,omitempty"`
		Metadata json.RawMessage `json:"metadata,omitempty"`
	}{spec.ProjectID, spec.EnvironmentID, spec.Subject, spec.Kind, spec.AgentID, spec.StepID, spec.SnapshotID, input,
		int(spec.Band), spec.MaxAttempts, spec.MaxCorrections, ms(spec.DueAt), ms(spec.DeadlineAt), spec.ParentRunID,
		spec.Tags, json.RawMessage(spec.Metadata)})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
