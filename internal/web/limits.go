package web

import (
	"fmt"
	"net"
	"strings"

	"github.com/labstack/echo/v4"
)

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
