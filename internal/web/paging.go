package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Page is a collection response.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// Default and largest page sizes (DESIGN.md section 7).
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Limit reads ?limit= (1..500, default 50).
func Limit(c echo.Context) (int, error) {
	raw := c.QueryParam("limit")
	if raw == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, apperr.FieldsInvalid(apperr.FieldError{Field: "limit", Reason: "must be an integer from 1 to 500"})
	}
	return n, nil
}

// EncodeCursor makes an opaque, URL-safe cursor of a keyset position.
func EncodeCursor(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: cursor does not marshal: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads ?cursor= into dst; it reports false when there is none. A cursor that
// was not made by EncodeCursor is 400.
func DecodeCursor(c echo.Context, dst any) (bool, error) {
	raw := c.QueryParam("cursor")
	if raw == "" {
		return false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err == nil {
		err = decodeStrict(b, dst)
	}
	if err != nil {
		return false, apperr.FieldsInvalid(apperr.FieldError{Field: "cursor", Reason: "is not a cursor this service made"})
	}
	return true, nil
}

// IfMatch reads the If-Match header. required makes its absence 428; a malformed tag is 412
// since it cannot match any version.
func IfMatch(c echo.Context, required bool) (v sqldb.RowVersion, present bool, err error) {
	raw := c.Request().Header.Get("If-Match")
	if raw == "" {
		if required {
			return 0, false, apperr.New(apperr.PreconditionRequired, "this update needs an If-Match header with the resource's ETag")
		}
		return 0, false, nil
	}
	v, ok := sqldb.ParseETag(raw)
	if !ok {
		return 0, true, apperr.New(apperr.PreconditionFailed, "If-Match does not hold a current ETag of this resource")
	}
	return v, true, nil
}

// JSONWithETag writes a versioned resource with its ETag.
func JSONWithETag(c echo.Context, status int, v sqldb.RowVersion, body any) error {
	c.Response().Header().Set("ETag", v.ETag())
	return c.JSON(status, body)
}

// Created writes a 201 with Location.
func Created(c echo.Context, location string, v sqldb.RowVersion, body any) error {
	c.Response().Header().Set(echo.HeaderLocation, location)
	return JSONWithETag(c, http.StatusCreated, v, body)
}
