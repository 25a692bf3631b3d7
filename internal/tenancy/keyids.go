package tenancy

import (
	"context"
	"sync"
	"time"
)

// keyIDsRefresh is how often, at most, the ids of the live keys are read again to answer
// whether a key id exists while its client address is over its failed-authentication
// budget: the cost an attack can put on the database, whatever it sends, is one such read
// per keyIDsRefresh; a key created meanwhile waits at most that long (its Retry-After).
const keyIDsRefresh = time.Second

// keyIDsMax bounds the ids a replica adds to what it last read.
const keyIDsMax = 1_000_000

// keyIDs is what a replica knows of which key ids exist: the ids of the keys it admitted, and
// every live key's id as last read. A key whose id exists is always checked (DESIGN.md
// section 6): an attacker's failures at the same address must never lock a valid key out,
// before or after a restart, so while the address is over its budget this set, not the
// database, says whether a presented id deserves its read.
type keyIDs struct {
	mu     sync.Mutex
	ids    map[string]struct{}
	loaded time.Time // when ids last held every live key's id (zero: never)

	loadMu sync.Mutex // one read of the ids at a time
}

func newKeyIDs() *keyIDs { return &keyIDs{ids: map[string]struct{}{}} }

func (k *keyIDs) has(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.ids[id]
	return ok
}

func (k *keyIDs) add(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.ids) >= keyIDsMax {
		// Past the bound start again; the next refresh reads every live id.
		clear(k.ids)
		k.loaded = time.Time{}
	}
	k.ids[id] = struct{}{}
}

// refresh reads the live key ids again unless they were read less than keyIDsRefresh before
// now; concurrent callers share one read. A failed read changes nothing.
func (k *keyIDs) refresh(ctx context.Context, now func() time.Time, read func(context.Context) ([]string, error)) {
	k.loadMu.Lock()
	defer k.loadMu.Unlock()
	k.mu.Lock()
	recent := !k.loaded.IsZero() && now().Sub(k.loaded) < keyIDsRefresh
	k.mu.Unlock()
	if recent {
		return
	}
	ids, err := read(ctx)
	if err != nil {
		return
	}
	m := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	k.mu.Lock()
	k.ids, k.loaded = m, now()
	k.mu.Unlock()
}
