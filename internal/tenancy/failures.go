package tenancy

import (
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// maxAddresses bounds the failure budgets remembered at once. Budgets that are full again
// are forgotten first; past that (a spread-out attack), all are.
const maxAddresses = 100_000

// addrBudget is the failed-authentication budget of each client address.
type addrBudget struct {
	rate  rate.Limit
	burst int
	mu    sync.Mutex
	m     map[string]*rate.Limiter
}

func newAddrBudget(failures int, window time.Duration) *addrBudget {
	if failures <= 0 || window <= 0 {
		return nil
	}
	return &addrBudget{rate: rate.Limit(float64(failures) / window.Seconds()), burst: failures, m: map[string]*rate.Limiter{}}
}

// spent reports how long until addr may fail once more (0: it may now).
func (b *addrBudget) spent(addr string, now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	l := b.m[addr]
	b.mu.Unlock()
	if l == nil {
		return 0
	}
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(b.rate) * float64(time.Second))
}

// fail spends one failure of addr's budget.
func (b *addrBudget) fail(addr string, now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	l := b.m[addr]
	if l == nil {
		if len(b.m) >= maxAddresses {
			b.sweep(now)
		}
		l = rate.NewLimiter(b.rate, b.burst)
		b.m[addr] = l
	}
	b.mu.Unlock()
	l.AllowN(now, 1)
}

// sweep forgets the budgets that are full again, or every budget when none is. b.mu is held.
func (b *addrBudget) sweep(now time.Time) {
	for a, l := range b.m {
		if l.TokensAt(now) >= float64(b.burst) {
			delete(b.m, a)
		}
	}
	if len(b.m) >= maxAddresses {
		clear(b.m)
	}
}

// clientAddress is the key of a client's failure budget: its IP address, and for IPv6 its
// /64 network, which one client usually holds whole. The address is what the HTTP layer's
// IP extractor says: the TCP peer, or behind trusted proxies the nearest untrusted address
// of X-Forwarded-For.
func clientAddress(ip string) string {
	parsed := net.ParseIP(ip)
	if parsed == nil {
		return ip
	}
	if parsed.To4() != nil {
		return parsed.String()
	}
	return parsed.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func errAuthFailures(wait time.Duration) error {
	return &apperr.Error{Code: api.CodeRateLimited, RetryAfter: max(wait, time.Second),
		Detail: "too many failed authentications from this address; retry later"}
}
