package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/web"
)

// Route registers GET /openapi.json on s: the document of every route s has when it is
// asked, built once per set of routes (the routes are all registered at start-up, so in
// practice once).
func Route(s *web.Server) { route(s) }

func route(s *web.Server) *cache {
	c := &cache{s: s}
	s.Route(http.MethodGet, "/openapi.json", web.Op{ID: "getOpenAPI", Tag: "System", Summary: "This OpenAPI 3.1 document",
		Description: "The exact wire of this service: every route, body, parameter, header and problem code.", Public: true, Status: http.StatusOK, RawResponse: "application/json"},
		c.serve)
	return c
}

// cache holds the encoded document of the first routes routes of s: routes are only ever
// added, so a longer list is a new set.
type cache struct {
	s      *web.Server
	mu     sync.Mutex
	routes int
	doc    []byte
	builds int // how many times doc was built (tests)
}

// serve answers the document from the cache, as c.JSON encodes it (a query string,
// ?pretty included, is refused before this runs).
func (c *cache) serve(ec echo.Context) error {
	b, err := c.encoded()
	if err != nil {
		return err
	}
	return ec.JSONBlob(http.StatusOK, append(b, '\n'))
}

// encoded is the encoded document, built once per set of routes.
func (c *cache) encoded() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.s.Documented()); c.doc == nil || n != c.routes {
		b, err := json.Marshal(Document(c.s))
		if err != nil {
			return nil, fmt.Errorf("encode the OpenAPI document: %w", err)
		}
		c.doc, c.routes, c.builds = b, n, c.builds+1
	}
	return slices.Clip(c.doc), nil
}
