package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// errRefusedTarget is a delivery's dial to an address the configuration refuses.
var errRefusedTarget = errors.New("target address refused: private, loopback, link-local or unique-local")

// refused reports whether a is an address no endpoint may reach without AllowPrivate.
func refused(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsValid()
}

// checkURL is the rule of an endpoint URL at create and update: absolute, https (http only
// with AllowHTTP), a host, no user info, and a host that resolves only to allowed addresses.
func (s *Store) checkURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return apperr.FieldsInvalid(api.FieldError{Field: "url", Reason: "is not an absolute URL with a host"})
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !s.cfg.AllowHTTP) {
		return apperr.FieldsInvalid(api.FieldError{Field: "url", Reason: "must be https:// (http:// only where the server allows it)"})
	}
	if u.User != nil || u.Fragment != "" {
		return apperr.FieldsInvalid(api.FieldError{Field: "url", Reason: "must have no user info and no fragment"})
	}
	if s.cfg.AllowPrivate {
		return nil
	}
	addrs, err := s.resolve(ctx, u.Hostname())
	if err != nil {
		return apperr.New(api.CodeWebhookTarget, "the url's host %q does not resolve", u.Hostname())
	}
	for _, a := range addrs {
		if refused(a) {
			return apperr.New(api.CodeWebhookTarget, "the url's host %q resolves to %s, a private, loopback, link-local or unique-local address", u.Hostname(), a)
		}
	}
	return nil
}

func (s *Store) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	return s.cfg.lookup(ctx, host)
}

// dialer dials endpoint hosts: it resolves with the configured resolver and, unless
// AllowPrivate, refuses in the socket's Control hook any address it is about to connect
// to, so a name that resolved to a public address at create and to a private one now
// (DNS rebinding) is refused at the address actually dialled.
type dialer struct {
	s *Store
	d net.Dialer
}

func (s *Store) newDialer() *dialer {
	dl := &dialer{s: s}
	if !s.cfg.AllowPrivate {
		dl.d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || refused(ap.Addr()) {
				return errRefusedTarget
			}
			return nil
		}
	}
	return dl
}

// DialContext dials each address of the host in turn, as net.Dialer would.
func (dl *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs, err := dl.s.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var first error
	for _, a := range addrs {
		c, err := dl.d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("%s has no address", host)
	}
	return nil, first
}
