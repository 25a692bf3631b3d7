package runs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ledger-dev/ledger/api"
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
// so a reused idempotency key tells an exact repeat from another request. It is computed
// from Spec itself: every field, in declaration order under its json name, except the few
// unhashed lists with the reason (TestRequestHashCoversEverySpecField fails for a field
// that changes no hash and is not listed there). Values are taken after defaults (band,
// maxAttempts, maxCorrections), times in UTC milliseconds (what is stored), JSON documents
// compacted (white space does not make another run; member order does, as the stored
// document would differ), tags in their order, as stored. A field tagged omitempty is left
// out when empty, so the hashes of requests made before it existed stay as they were (a
// repeat of such a request still answers 200): a field added later must be omitempty.
// dueAt is hashed as given, so a request without it and one naming a time differ.
func (spec Spec) requestHash() string {
	b := make([]byte, 0, 512)
	b = append(b, '{')
	v := reflect.ValueOf(spec)
	for _, f := range specHashPlan {
		fv := v.FieldByIndex(f.index)
		if f.omitEmpty && isEmpty(fv) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, f.key...)
		m, err := json.Marshal(hashValue(fv))
		if err != nil {
			// Only a type json cannot encode gets here, and the plan refuses those.
			panic(fmt.Sprintf("request hash of %s: %v", f.name, err))
		}
		b = append(b, m...)
	}
	b = append(b, '}')
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// unhashed are the fields of Spec outside the request hash, each with the reason.
var unhashed = map[string]string{
	"IdempotencyKey": "the key itself: what the hash is compared under",
	"TraceParent":    "the caller's trace context, not the run's definition: a retry may carry a new one",
}

// hashedField is one field of Spec in the request hash.
type hashedField struct {
	index     []int
	name      string
	omitEmpty bool
	// key is the name quoted with its colon, as the hash writes it (quoted once, here).
	key []byte
}

// specHashPlan is the hashed fields of Spec, in order, worked out once.
var specHashPlan = func() []hashedField {
	var plan []hashedField
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(append([]int(nil), index...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if _, out := unhashed[f.Name]; out {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				panic("runs.Spec." + f.Name + " has no json name: give it one, or list it in unhashed with the reason")
			}
			plan = append(plan, hashedField{index: idx, name: name, omitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"),
				key: append(strconv.AppendQuote(nil, name), ':')})
		}
	}
	walk(reflect.TypeFor[Spec](), nil)
	return plan
}()

// hashValue is what the hash records of a field's value: times as stored, bands by number,
// JSON documents compacted (a document that does not parse as its quoted text).
func hashValue(v reflect.Value) any {
	switch x := v.Interface().(type) {
	case *time.Time:
		if x == nil {
			return nil
		}
		return sqldb.FormatTimeText(*x)
	case api.Band:
		return int(x)
	case JSONText:
		if len(x) == 0 {
			return json.RawMessage(nil)
		}
		var b bytes.Buffer
		if json.Compact(&b, x) != nil {
			return json.RawMessage(fmt.Sprintf("%q", string(x)))
		}
		return json.RawMessage(b.Bytes())
	default:
		return x
	}
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return v.Len() == 0
	default:
		return v.IsZero()
	}
}
