package calls_test

import (
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/calls"
	"github.com/ledger-dev/ledger/internal/web"
)

// TestDraftLimitsMatchTheWire keeps Draft.Validate's bounds equal to the api request's
// tags (which the decoder and the OpenAPI document read): each field at its length is taken
// by both, one unit more refused by both.
func TestDraftLimitsMatchTheWire(t *testing.T) {
	t.Parallel()
	v := web.NewValidator()
	seq, kind := int32(0), api.CallTool
	for _, c := range []struct {
		field string
		limit int
		set   func(r *api.CallRequest, d *calls.Draft, s string)
	}{
		{"target", 256, func(r *api.CallRequest, d *calls.Draft, s string) { r.Target, d.Target = s, s }},
		{"requestHash", 128, func(r *api.CallRequest, d *calls.Draft, s string) { r.RequestHash, d.RequestHash = s, s }},
	} {
		for _, n := range []int{c.limit, c.limit + 1} {
			r := api.CallRequest{FencingToken: 1, Sequence: &seq, Kind: &kind, Target: "t", RequestHash: "h"}
			d := calls.Draft{Kind: kind, Target: "t", RequestHash: "h"}
			c.set(&r, &d, strings.Repeat("a", n))
			wireOK, draftOK := v.Validate(r) == nil, d.Validate() == nil
			if wireOK != draftOK || wireOK != (n <= c.limit) {
				t.Errorf("%s of %d units: the wire takes it %v, Draft.Validate %v; want both %v", c.field, n, wireOK, draftOK, n <= c.limit)
			}
		}
	}
}
