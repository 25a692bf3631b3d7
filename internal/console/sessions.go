package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// Sessions are server-side, in the database, so that every replica sees a sign-in and a
// sign-out at once (the service is stateless and runs several replicas). The cookie holds
// "<secret>.<tenant>": the tenant only says where to look (the row is read in that tenant's
// scope, so a forged tenant finds nothing), and only the secret's SHA-256 is stored, so a
// copy of the table opens no session. A session ends at its expiry, at sign-out, or as
// soon as its key is revoked (every request reads the key with the session).

// errNoSession: no, expired, revoked or malformed session; the same answer for all.
var errNoSession = errors.New("no console session")

type session struct {
	TenantID  string
	KeyID     string
	Role      string
	ExpiresAt time.Time
	secret    []byte
}

// csrf is the session's form token: an HMAC of a fixed label under the session's secret.
// A page from another site can neither read the cookie nor compute the token.
func (s session) csrf() string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("ledger console csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s session) checkCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf())) == 1
}

func (s session) principal() tenancy.Principal {
	return tenancy.Principal{TenantID: s.TenantID, Role: s.Role, KeyID: s.KeyID}
}

type sessionStore struct {
	db  *sqldb.DB
	q   *queries
	ttl time.Duration

	// good holds the hashes of the cookies this replica found a session for (or made one
	// for): they are read whatever their address's failed-authentication budget says.
	mu   sync.Mutex
	good map[[32]byte]struct{}
}

// goodMax bounds the cookies remembered; a full set starts again empty.
const goodMax = 10_000

func (st *sessionStore) seen(cookie string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.good[sha256.Sum256([]byte(cookie))]
	return ok
}

func (st *sessionStore) remember(cookie string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.good == nil || len(st.good) >= goodMax {
		st.good = map[[32]byte]struct{}{}
	}
	st.good[sha256.Sum256([]byte(cookie))] = struct{}{}
}

func (st *sessionStore) forget(cookie string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.good, sha256.Sum256([]byte(cookie)))
}

func hashSecret(secret []byte) []byte {
	h := sha256.Sum256(secret)
	return h[:]
}

// create starts a session for an admin principal and returns its cookie value.
func (st *sessionStore) create(ctx context.Context, p tenancy.Principal) (string, session, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", session{}, fmt.Errorf("create session: %w", err)
	}
	s := session{TenantID: p.TenantID, KeyID: p.KeyID, Role: p.Role, secret: secret}
	err := st.db.Write(ctx, sqldb.TenantScope(p.TenantID), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		s.ExpiresAt = now.Add(st.ttl)
		// Clean up a few of the tenant's expired sessions on the way in.
		if _, err := tx.ExecContext(ctx, st.q.deleteExpired, p.TenantID, tx.Dialect.Time(now)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, st.q.insert, p.TenantID, hashSecret(secret), p.KeyID, tx.Dialect.Time(now),
			tx.Dialect.Time(s.ExpiresAt))
		return err
	})
	if err != nil {
		return "", session{}, fmt.Errorf("create session: %w", err)
	}
	cookie := base64.RawURLEncoding.EncodeToString(secret) + "." + p.TenantID
	st.remember(cookie)
	return cookie, s, nil
}

func parseCookie(v string) (tenant string, secret []byte, ok bool) {
	enc, tenant, ok := strings.Cut(v, ".")
	if !ok || !tenancy.ValidTenantID(tenant) {
		return "", nil, false
	}
	secret, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(secret) != 32 {
		return "", nil, false
	}
	return tenant, secret, true
}

// lookup reads the session a cookie names.
func (st *sessionStore) lookup(ctx context.Context, cookie string) (session, error) {
	tenant, secret, ok := parseCookie(cookie)
	if !ok {
		return session{}, errNoSession
	}
	var row struct {
		KeyID     string     `db:"KeyId"`
		Role      string     `db:"Role"`
		ExpiresAt sqldb.Time `db:"ExpiresAt"`
	}
	err := st.db.Read(ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.GetContext(ctx, &row, st.q.get, tenant, hashSecret(secret), tx.Dialect.Time(now))
	})
	if errors.Is(err, sqldb.ErrNotFound) {
		return session{}, errNoSession
	}
	if err != nil {
		return session{}, fmt.Errorf("read session: %w", err)
	}
	if row.Role != tenancy.RoleAdmin {
		return session{}, errNoSession
	}
	return session{TenantID: tenant, KeyID: row.KeyID, Role: row.Role, ExpiresAt: row.ExpiresAt.Time, secret: secret}, nil
}

// end deletes the session a cookie names (nothing when there is none).
func (st *sessionStore) end(ctx context.Context, cookie string) error {
	tenant, secret, ok := parseCookie(cookie)
	if !ok {
		return nil
	}
	return st.db.Write(ctx, sqldb.TenantScope(tenant), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(ctx, st.q.delete, tenant, hashSecret(secret))
		return err
	})
}
