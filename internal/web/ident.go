package web

import (
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/validate"
)

// PathIdent reads an identifier path parameter, whose longest length is its rule's in
// pathParamRules; one that breaks the identifier rule is 400 naming the parameter.
func PathIdent(c echo.Context, name string) (string, error) {
	rule, ok := pathParamRules[name]
	if !ok || rule.UUID {
		panic("web: " + name + " is not an identifier path parameter")
	}
	// Echo routes on URL.RawPath when the path holds an escape that decoding would change
	// (such as %2F), and then hands the parameters over still escaped.
	raw := c.Param(name)
	if c.Request().URL.RawPath != "" {
		var err error
		if raw, err = url.PathUnescape(raw); err != nil {
			return "", apperr.FieldsInvalid(api.FieldError{Field: name, Reason: "is not a well-formed path segment"})
		}
	}
	if why := validate.IdentProblem(raw, rule.Max, true); why != "" {
		return "", apperr.FieldsInvalid(api.FieldError{Field: name, Reason: why})
	}
	return raw, nil
}

// Path joins segments into an absolute path, escaping each one, so that an identifier
// holding "?", "#", "%" or a space still names exactly its resource in a Location header.
func Path(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// checkPath checks every path parameter of a route by its rule, before the handler runs:
// the handler's own reading of a parameter then cannot apply another limit, or none.
func checkPath(c echo.Context, names []string) error {
	for _, name := range names {
		var err error
		if pathParamRules[name].UUID {
			_, err = PathUUID(c, name)
		} else {
			_, err = PathIdent(c, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
