package tenancy

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultKeyCacheTTL is how long a replica trusts a key it has read, unless configured.
const DefaultKeyCacheTTL = 5 * time.Second

// keyCacheMax bounds the keys remembered; a full cache starts again empty.
const keyCacheMax = 10_000

// keyCache remembers the keys this replica admitted, by the SHA-256 of the token: for ttl a
// remembered key is admitted without reading it again (so a revoked key keeps working that
// long here), and past ttl it is read again. With ttl 0 every request reads its key. (What
// spares a key the failed-authentication limit is that its id exists: keyIDs.)
//
// Concurrent reads of one key share one database read while the cache is on (a cold key
// under load costs one read, not one per request).
type keyCache struct {
	ttl time.Duration

	mu      sync.Mutex
	entries map[[32]byte]cached
	flights map[[32]byte]*flight
}

type cached struct {
	p       Principal
	expires time.Time
}

// flight is one database read of a key that concurrent requests wait for.
type flight struct {
	done    chan struct{}
	waiters int // requests waiting for it besides the one reading (under keyCache.mu)
	p       Principal
	err     error
}

func newKeyCache(ttl time.Duration) *keyCache {
	return &keyCache{ttl: max(ttl, 0), entries: map[[32]byte]cached{}, flights: map[[32]byte]*flight{}}
}

// get returns the principal of a key read less than ttl ago (fresh).
func (k *keyCache) get(h [32]byte, now time.Time) (p Principal, fresh bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.entries[h]
	if !ok {
		return Principal{}, false
	}
	return e.p, now.Before(e.expires)
}

// load reads the key with read, sharing the read with concurrent loads of the same key when
// the cache is on, and remembers the outcome: a good key is cached, a bad one forgotten.
func (k *keyCache) load(ctx context.Context, h [32]byte, now func() time.Time, read func(context.Context) (Principal, error)) (Principal, error) {
	if k.ttl == 0 {
		p, err := read(ctx)
		k.remember(h, p, err, now())
		return p, err
	}
	k.mu.Lock()
	if f, ok := k.flights[h]; ok {
		f.waiters++
		k.mu.Unlock()
		select {
		case <-f.done:
			return f.p, f.err
		case <-ctx.Done():
			return Principal{}, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	k.flights[h] = f
	k.mu.Unlock()
	// The read is not cut short by this request going away: others may be waiting for it.
	f.p, f.err = read(context.WithoutCancel(ctx))
	k.remember(h, f.p, f.err, now())
	k.mu.Lock()
	delete(k.flights, h)
	k.mu.Unlock()
	close(f.done)
	return f.p, f.err
}

// remember caches a good key read at now and forgets a key the store refused. Other errors
// (the database was unavailable) say nothing of the key and change nothing.
func (k *keyCache) remember(h [32]byte, p Principal, err error, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil:
		if len(k.entries) >= keyCacheMax {
			clear(k.entries)
		}
		k.entries[h] = cached{p: p, expires: now.Add(k.ttl)}
	case errors.Is(err, errBadKey):
		delete(k.entries, h)
	}
}
