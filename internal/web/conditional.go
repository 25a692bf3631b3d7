package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Conditional requests (RFC 9110 section 13), in one place for every route.

// Precondition is a request's If-Match header: "*" (any current version of an existing
// resource) or a list of entity tags, any one of which may be current. Weak tags never
// match (If-Match uses the strong comparison). It is a sqldb.VersionMatcher, so stores ask
// it about the version they read under lock.
type Precondition struct {
	any  bool
	tags []sqldb.RowVersion
}

// Matches reports whether current satisfies the precondition.
func (p *Precondition) Matches(current sqldb.RowVersion) bool {
	if p.any {
		return true
	}
	for _, t := range p.tags {
		if t == current {
			return true
		}
	}
	return false
}

// opKey is where Route leaves the route's Op in the request's context.
const opKey = "web.op"

// IfMatch reads the If-Match header as the condition a store checks (a *Precondition). It
// returns nil when there is none, or 428 when the route's Op says ifmatch.Required (the
// mode that documents the header is the one rule; under ifmatch.ToUpdate the store applies
// it with ifmatch.Update once it knows the request updates). A header that cannot match
// any version (only weak or malformed tags) is 412 at once. Only a route whose Op takes
// If-Match reads it.
func IfMatch(c echo.Context) (sqldb.VersionMatcher, error) {
	op, _ := c.Get(opKey).(*Op)
	if op == nil || !op.IfMatch.Takes() {
		panic("web: IfMatch read on a route whose Op does not take If-Match")
	}
	raw, present := headerList(c.Request().Header, "If-Match")
	if !present {
		return nil, ifmatch.Absent(op.IfMatch)
	}
	p := &Precondition{}
	for _, tag := range raw {
		if tag == "*" {
			p.any = true
			continue
		}
		if v, ok := sqldb.ParseETag(tag); ok {
			p.tags = append(p.tags, v)
		}
	}
	if !p.any && len(p.tags) == 0 {
		return nil, apperr.New(api.CodePreconditionFailed, "If-Match does not hold a current ETag of this resource (weak tags never match)")
	}
	return p, nil
}

// headerList splits every field line of a list-valued header on commas (entity tags hold
// no comma) and reports whether the header was sent at all.
func headerList(h http.Header, name string) ([]string, bool) {
	lines, present := h[http.CanonicalHeaderKey(name)]
	var out []string
	for _, line := range lines {
		for _, item := range strings.Split(line, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out, present
}

// noneMatch reports whether an If-None-Match list matches etag by the weak comparison
// (RFC 9110 section 13.1.2): "*" matches any current representation, W/"x" matches "x".
func noneMatch(list []string, etag string) bool {
	if etag == "" {
		return false
	}
	strip := func(t string) string { return strings.TrimPrefix(t, "W/") }
	for _, t := range list {
		if t == "*" || strip(t) == strip(etag) {
			return true
		}
	}
	return false
}

// notModified turns a GET's 200 carrying an ETag that If-None-Match names into a 304 with
// no body: the ETag stays, the content's own headers go.
func notModified(c echo.Context) {
	list, present := headerList(c.Request().Header, "If-None-Match")
	if !present {
		return
	}
	res := c.Response()
	res.Before(func() {
		if res.Status != http.StatusOK || !noneMatch(list, res.Header().Get("ETag")) {
			return
		}
		res.Status = http.StatusNotModified
		res.Header().Del(echo.HeaderContentType)
		res.Header().Del(echo.HeaderContentLength)
		res.Writer = bodyless{res.Writer}
	})
}

// bodyless passes the status and headers on and drops the content: the answer to HEAD,
// and a 304.
type bodyless struct{ http.ResponseWriter }

func (b bodyless) Write(p []byte) (int, error) { return len(p), nil }

// Unwrap lets http.ResponseController reach the connection's writer.
func (b bodyless) Unwrap() http.ResponseWriter { return b.ResponseWriter }
