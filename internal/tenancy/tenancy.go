// Package tenancy turns API keys into a tenant and a role, keeps the tenants and their keys,
// and guards routes by role. The tenant of a request comes only from its key; what the
// tenant's request may then take of the replica is package admission's to say.
package tenancy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/validate"
)

// Roles a key can have (DESIGN.md section 6).
const (
	RoleRuntime = "runtime"
	RoleAdmin   = "admin"
)

// DefaultMaxLeasedRuns is a new tenant's budget of leased runs.
const DefaultMaxLeasedRuns = 1000

// Principal is who is calling: the tenant and role of the key presented.
type Principal struct {
	TenantID string
	Role     string
	KeyID    string
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// From returns the request's principal. Handlers behind the authenticator always have one.
func From(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Key is an API key's stored description (never its secret).
type Key struct {
	KeyID     string     `db:"KeyId" json:"keyId"`
	TenantID  string     `db:"TenantId" json:"tenantId"`
	Role      string     `db:"Role" json:"role"`
	CreatedAt time.Time  `db:"CreatedAt" json:"createdAt"`
	RevokedAt *time.Time `db:"RevokedAt" json:"revokedAt,omitempty"`
	// Label is the operator's name for the key ("" when none was given).
	Label sqlNullString `db:"Label" json:"label,omitempty"`
	// LastUsedAt is when the key last authenticated, to within LastUsedResolution (nil: never).
	LastUsedAt *time.Time `db:"LastUsedAt" json:"lastUsedAt,omitempty"`
}

// sqlNullString reads a nullable text column as "" for NULL.
type sqlNullString string

// Scan implements sql.Scanner.
func (n *sqlNullString) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*n = ""
	case string:
		*n = sqlNullString(x)
	case []byte:
		*n = sqlNullString(x)
	default:
		return fmt.Errorf("label: unexpected %T", v)
	}
	return nil
}

// LastUsedResolution is how stale a key's LastUsedAt may be: authentication records a use
// only when the stored one is older, so a busy key costs one write a minute, not one a
// request.
const LastUsedResolution = time.Minute

// MaxLabelLen is the longest key label, in UTF-16 code units: the unit of the column's
// nvarchar(100) on SQL Server, where a character outside the basic plane takes two (a
// label counted in characters could pass and then overflow the column, Msg 2628).
const MaxLabelLen = 100

// ValidLabel reports whether label may name a key: 1 to MaxLabelLen UTF-16 code units of
// printable characters, no control or invisible (format) characters, no leading or
// trailing space.
func ValidLabel(label string) bool {
	if label == "" || !utf8.ValidString(label) || validate.UTF16Len(label) > MaxLabelLen ||
		strings.TrimSpace(label) != label {
		return false
	}
	for _, r := range label {
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

// Tenant is a tenant and its leased-run budget.
type Tenant struct {
	TenantID      string    `db:"TenantId"`
	MaxLeasedRuns int       `db:"MaxLeasedRuns"`
	CreatedAt     time.Time `db:"CreatedAt"`
}

// Store keeps tenants and keys. Its methods work across tenants: they are operator and
// authentication business, so they run with the maintenance scope.
type Store struct {
	db *sqldb.DB
	q  *queries
	// touching holds the keys whose last use is being written (recordUse).
	touchMu  sync.Mutex
	touching map[string]bool
}

// NewStore returns the tenancy store of db.
func NewStore(db *sqldb.DB) *Store {
	return &Store{db: db, q: queriesFor(db.Dialect), touching: map[string]bool{}}
}

// keyPrefix marks the service's keys so they are recognisable in logs and secret scanners.
const keyPrefix = "ldg_"

// ValidTenantID reports whether id can name a tenant.
func ValidTenantID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// CreateKey makes a key for tenant with role, creating the tenant if it does not exist, and
// returns the key's secret form. The secret is shown once: only its hash is stored.
func (s *Store) CreateKey(ctx context.Context, tenantID, role string) (string, Key, error) {
	return s.CreateLabeledKey(ctx, tenantID, role, "")
}

// CreateLabeledKey is CreateKey with an operator's label for the key ("" for none).
func (s *Store) CreateLabeledKey(ctx context.Context, tenantID, role, label string) (string, Key, error) {
	if label != "" && !ValidLabel(label) {
		return "", Key{}, apperr.New(api.CodeInvalidRequest, "label must be 1 to %d printable characters (UTF-16 code units: a character outside the basic plane counts two) without leading or trailing spaces", MaxLabelLen)
	}
	if !ValidTenantID(tenantID) {
		return "", Key{}, apperr.New(api.CodeInvalidRequest, "tenant must be 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if role != RoleRuntime && role != RoleAdmin {
		return "", Key{}, apperr.New(api.CodeInvalidRequest, "role must be runtime or admin")
	}
	var idb [8]byte
	var secret [32]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return "", Key{}, fmt.Errorf("create key: %w", err)
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", Key{}, fmt.Errorf("create key: %w", err)
	}
	k := Key{KeyID: hex.EncodeToString(idb[:]), TenantID: tenantID, Role: role, Label: sqlNullString(label)}
	token := keyPrefix + k.KeyID + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	hash := sha256.Sum256([]byte(token))
	err := s.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if err := s.ensureTenant(ctx, tx, tenantID, now); err != nil {
			return err
		}
		k.CreatedAt = now
		var lbl any // NULL without a label
		if label != "" {
			lbl = label
		}
		_, err = tx.ExecContext(ctx, s.q.insertKey, k.KeyID, k.TenantID, k.Role, hash[:], tx.Dialect.Time(now), lbl)
		return err
	})
	if err != nil {
		return "", Key{}, fmt.Errorf("create key: %w", err)
	}
	return token, k, nil
}

func (s *Store) ensureTenant(ctx context.Context, tx *sqldb.Tx, tenantID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, s.q.ensureTenant, tenantID, DefaultMaxLeasedRuns, tx.Dialect.Time(now))
	return err
}

// EnsureTenant creates the tenant if it does not exist.
func (s *Store) EnsureTenant(ctx context.Context, tenantID string) error {
	if !ValidTenantID(tenantID) {
		return apperr.New(api.CodeInvalidRequest, "tenant must be 1 to 64 letters, digits, '-', '_' or '.'")
	}
	return s.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return s.ensureTenant(ctx, tx, tenantID, now)
	})
}

// ListKeys lists the keys of one tenant, or of all tenants when tenantID is empty.
func (s *Store) ListKeys(ctx context.Context, tenantID string) ([]Key, error) {
	var keys []Key
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.SelectContext(ctx, &keys, s.q.listKeys, tenantID)
	})
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}

// RevokeKey revokes a key at once (api.CodeNotFound if there is no such key). Revoking a
// revoked key is not an error.
func (s *Store) RevokeKey(ctx context.Context, keyID string) error {
	_, err := s.Revoke(ctx, keyID)
	return err
}

// Revoke revokes a key by its id and returns when it was revoked before, or nil when this
// call revoked it (a second revoke keeps the first time).
func (s *Store) Revoke(ctx context.Context, keyID string) (*time.Time, error) {
	var before *time.Time
	err := s.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		var row struct {
			Key
			SecretHash []byte `db:"SecretHash"`
		}
		if err := tx.GetContext(ctx, &row, s.q.getKey, keyID); errors.Is(err, sqldb.ErrNotFound) {
			return apperr.New(api.CodeNotFound, "no key %q", keyID)
		} else if err != nil {
			return err
		}
		before = row.RevokedAt
		if before != nil {
			return nil
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q.revokeKey, keyID, tx.Dialect.Time(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.New(api.CodeNotFound, "no key %q", keyID)
		}
		return nil
	})
	return before, err
}

// SetMaxLeased sets a tenant's budget of leased runs, creating the tenant if needed.
func (s *Store) SetMaxLeased(ctx context.Context, tenantID string, n int) error {
	if n < 0 {
		return apperr.New(api.CodeInvalidRequest, "max-leased must not be negative")
	}
	if !ValidTenantID(tenantID) {
		return apperr.New(api.CodeInvalidRequest, "tenant must be 1 to 64 letters, digits, '-', '_' or '.'")
	}
	return s.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if err := s.ensureTenant(ctx, tx, tenantID, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q.setMaxLeased, tenantID, n)
		return err
	})
}

// Tenant reads one tenant (api.CodeNotFound if missing).
func (s *Store) Tenant(ctx context.Context, tenantID string) (Tenant, error) {
	var t Tenant
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(ctx, &t, s.q.getTenant, tenantID)
	})
	if errors.Is(err, sqldb.ErrNotFound) {
		return Tenant{}, apperr.New(api.CodeNotFound, "no tenant %q", tenantID)
	}
	return t, err
}

// TenantUsage is a tenant, its leased-run budget and the runs it holds leased now.
type TenantUsage struct {
	Tenant
	LeasedRuns int `db:"LeasedRuns"`
}

// ListTenants lists every tenant with its budget and its leased runs, by tenant id.
func (s *Store) ListTenants(ctx context.Context) ([]TenantUsage, error) {
	var out []TenantUsage
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.SelectContext(ctx, &out, s.q.listTenants)
	})
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return out, nil
}

// HasTenants reports whether any tenant exists (bootstrap runs only when none does).
func (s *Store) HasTenants(ctx context.Context) (bool, error) {
	var n int
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(ctx, &n, s.q.countTenants)
	})
	return n > 0, err
}

// recordUse stores, in the background, that a key authenticated, when its stored last use
// is older than LastUsedResolution. Authentication never waits for it (a request must not
// queue behind the database's writer to prove who it is), and it is best effort: a key that
// works is never refused because its use could not be written; the failure is logged. One
// write per key is in flight at most.
func (s *Store) recordUse(ctx context.Context, keyID string, last *time.Time) {
	// The replica's clock only decides whether to write at all; the row gets the database's.
	if last != nil && time.Since(*last) < LastUsedResolution {
		return
	}
	s.touchMu.Lock()
	if s.touching[keyID] {
		s.touchMu.Unlock()
		return
	}
	s.touching[keyID] = true
	s.touchMu.Unlock()
	go func() {
		defer func() {
			s.touchMu.Lock()
			delete(s.touching, keyID)
			s.touchMu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := s.db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			now, err := tx.Now(ctx)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, s.q.touchKey, keyID, tx.Dialect.Time(now), tx.Dialect.Time(now.Add(-LastUsedResolution)))
			return err
		})
		if err != nil && !errors.Is(err, sqldb.ErrClosed) {
			s.db.Logger().WarnContext(ctx, "recording a key's last use failed", "key_id", keyID, "err", err)
		}
	}()
}

// errBadKey is the one answer for every bad key, so a caller learns nothing of which part
// was wrong.
var errBadKey = apperr.New(api.CodeUnauthorized, "missing, malformed, revoked or unknown API key")

// KeyIDOf is the key id a whole key names (the part after "ldg_", before the secret), or
// "" when token is not shaped like a key.
func KeyIDOf(token string) string { return keyIDOf(token) }

// keyIDOf is the key id a token names (the part after the prefix, before the secret), or ""
// when the token is not shaped like a key.
func keyIDOf(token string) string {
	rest, ok := strings.CutPrefix(token, keyPrefix)
	if !ok {
		return ""
	}
	keyID, _, ok := strings.Cut(rest, "_")
	if !ok || len(keyID) != 16 {
		return ""
	}
	return keyID
}

// Authenticate resolves a bearer token to its principal.
func (s *Store) Authenticate(ctx context.Context, token string) (Principal, error) {
	p, _, err := s.authenticate(ctx, token)
	return p, err
}

// authenticate resolves a bearer token to its principal, and reports whether the key id it
// names exists (also when the secret is wrong or the key revoked).
func (s *Store) authenticate(ctx context.Context, token string) (Principal, bool, error) {
	keyID := keyIDOf(token)
	if keyID == "" {
		return Principal{}, false, errBadKey
	}
	var row struct {
		Key
		SecretHash []byte `db:"SecretHash"`
	}
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.GetContext(ctx, &row, s.q.getKey, keyID)
	})
	if errors.Is(err, sqldb.ErrNotFound) {
		return Principal{}, false, errBadKey
	}
	if err != nil {
		return Principal{}, false, fmt.Errorf("authenticate: %w", err)
	}
	hash := sha256.Sum256([]byte(token))
	// Constant time: the stored hash is found by the public key id, and the comparison must
	// not tell how much of the secret was right.
	if subtle.ConstantTimeCompare(hash[:], row.SecretHash) != 1 || row.RevokedAt != nil {
		return Principal{}, true, errBadKey
	}
	s.recordUse(ctx, row.KeyID, row.LastUsedAt)
	return Principal{TenantID: row.TenantID, Role: row.Role, KeyID: row.KeyID}, true, nil
}

// liveKeyIDs lists the ids of the keys not revoked.
func (s *Store) liveKeyIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		return tx.SelectContext(ctx, &ids, s.q.liveKeyIDs)
	})
	if err != nil {
		return nil, fmt.Errorf("list key ids: %w", err)
	}
	return ids, nil
}
