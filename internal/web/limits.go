package web

import (
	"fmt"
	"net"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
)

// limitInFlight refuses requests beyond max running at once with 429 rate_limited and a
// Retry-After, so an overloaded replica sheds load instead of queueing it until clients
// time out. It protects the process, not one tenant from another: it runs after the
// authenticator, so a request counts here only once its tenant's own limits (which keep any
// one tenant below this cap) have admitted it, and a tenant's refused requests never take
// a slot another tenant could have had. The health, metrics and document routes need no key
// and are never refused.
func limitInFlight(max int) echo.MiddlewareFunc {
	slots := make(chan struct{}, max)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			select {
			case slots <- struct{}{}:
			default:
				return &apperr.Error{Code: apperr.RateLimited, Detail: "the server is at its limit of requests in flight; retry later", RetryAfter: 1e9}
			}
			defer func() { <-slots }()
			return next(c)
		}
	}
}

// ipExtractor says which address a request comes from (the key of the failed-authentication
// limit): the TCP peer, or, when that peer is one of the trusted proxies, the nearest address
// in X-Forwarded-For that is not. Headers from anyone else are ignored, since a client can
// write any X-Forwarded-For it likes.
func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// ParseCIDRs parses a comma-separated list of CIDR ranges (a bare address is its own /32 or
// /128).
func ParseCIDRs(list string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			ip := net.ParseIP(s)
			if ip == nil {
				return nil, fmt.Errorf("bad address %q", s)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("bad CIDR range %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}
