package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/strictjson"
)

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
		err = strictjson.Decode(b, dst)
	}
	if err != nil {
		return false, apperr.FieldsInvalid(api.FieldError{Field: "cursor", Reason: "is not a cursor this service made"})
	}
	return true, nil
}

// FilterKey is a short digest of the request's query parameters other than cursor and
// limit (every value of a repeated one, in its order), in a canonical order of names, or "" when there are none. A listing puts it in the cursors
// it makes, so a cursor presented with other filters is refused instead of silently
// applied to them (DESIGN.md section 7).
func FilterKey(c echo.Context) string {
	q := c.QueryParams()
	names := make([]string, 0, len(q))
	for name, vs := range q {
		if name != "cursor" && name != "limit" && len(vs) > 0 && vs[0] != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	h := sha256.New()
	// Every value of a name counts, in the order given: a list parameter's items are part of
	// the filter (the same items in another order are another key, and start a new listing).
	// A single value hashes as it always did, so cursors made before lists keep working.
	for _, name := range names {
		if vs := q[name]; len(vs) == 1 {
			fmt.Fprintf(h, "%q=%q;", name, vs[0])
		} else {
			fmt.Fprintf(h, "%q=%q;", name, vs)
		}
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// CursorOfOtherFilters is the 400 for a cursor made with other filters than the request's.
func CursorOfOtherFilters() error {
	return apperr.FieldsInvalid(api.FieldError{Field: "cursor",
		Reason: "was made by a listing with other filters; start again without it, or repeat those filters"})
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

// MaxPageBytes bounds a list page in bytes as sent: the items of one page stop before the
// one that would take the page past it (a page always holds at least one item, so an item
// that alone is larger still travels, one to a page). Items may each hold up to a request
// body of free JSON (a run's input, a decision's options), so a page of MaxLimit of them
// could otherwise reach hundreds of megabytes.
const MaxPageBytes = 1 << 20

// pageFrame is what a page holds besides its items: the braces, the member names, and a
// cursor (EncodeCursor of a keyset position: well under a kilobyte).
const pageFrame = 1 << 10

// WritePage writes the page of a listing that fetched up to limit+1 rows: the wire forms
// of at most limit of them, fewer when the next would take the page past MaxPageBytes,
// and, while rows remain, a nextCursor of the keyset position cursorOf gives for the last
// row sent.
//
// The page is written as counted. Its JSON is not HTML-escaped (an API answer is not
// embedded in HTML, and \u003c for every < made an item of a run's input six times the
// size it was counted at and stored at).
func WritePage[T, W any](c echo.Context, rows []T, limit int, cursorOf func(last T) any, wire func(T) W) error {
	var page, item bytes.Buffer
	enc := json.NewEncoder(&item)
	enc.SetEscapeHTML(false)
	page.WriteString(`{"items":[`)
	n := 0
	for _, row := range rows[:min(len(rows), limit)] {
		item.Reset()
		if err := enc.Encode(wire(row)); err != nil {
			return err
		}
		b := bytes.TrimSuffix(item.Bytes(), []byte("\n"))
		if n > 0 && page.Len()+1+len(b)+pageFrame > MaxPageBytes {
			break
		}
		if n > 0 {
			page.WriteByte(',')
		}
		page.Write(b)
		n++
	}
	page.WriteByte(']')
	if n < len(rows) {
		cursor, _ := json.Marshal(EncodeCursor(cursorOf(rows[n-1]))) // base64url: no escapes
		page.WriteString(`,"nextCursor":`)
		page.Write(cursor)
	}
	page.WriteString("}\n")
	return c.JSONBlob(http.StatusOK, page.Bytes())
}

// sequenceCursor is the keyset position of a listing in sequence order: the last sequence
// sent. int32 bounds it like the column, so a forged cursor out of range is a 400.
type sequenceCursor struct {
	After int32 `json:"s"`
}

// ListBySequence answers GET of an attempt's rows in sequence order (calls, checkpoints):
// it reads the attemptId path parameter, ?limit= and ?cursor=, asks list for up to limit+1
// rows after a sequence (start on the first page) and writes the page of their wire forms,
// its cursor the sequence seq gives of the last row sent.
func ListBySequence[T, W any](c echo.Context, start int, seq func(T) int, wire func(T) W,
	list func(ctx context.Context, attemptID uuid.UUID, after, limit int) ([]T, error),
) error {
	attemptID, err := PathUUID(c, "attemptId")
	if err != nil {
		return err
	}
	var q api.PageParams
	if err := BindQuery(c, &q); err != nil {
		return err
	}
	limit := LimitOf(q)
	cur := sequenceCursor{After: int32(start)}
	if _, err := DecodeCursor(c, &cur); err != nil {
		return err
	}
	rows, err := list(c.Request().Context(), attemptID, int(cur.After), limit+1)
	if err != nil {
		return err
	}
	return WritePage(c, rows, limit, func(last T) any {
		return sequenceCursor{After: int32(seq(last))}
	}, wire)
}
