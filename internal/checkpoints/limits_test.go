package checkpoints_test

import (
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/web"
)

// TestDraftLimitsMatchTheWire keeps Draft.Validate's bounds equal to the api request's
// tags (which the decoder and the OpenAPI document read): each field at its length is taken
// by both, one unit more refused by both.
func TestDraftLimitsMatchTheWire(t *testing.T) {
	t.Parallel()
	v := web.NewValidator()
	seq, phase := int32(0), api.PhaseActing
	wire := func() api.CheckpointRequest {
		return api.CheckpointRequest{FencingToken: 1, Sequence: &seq, Phase: &phase, AdapterStateRef: "s", AdapterVersion: "v", Hash: "h"}
	}
	draft := func() checkpoints.Draft {
		return checkpoints.Draft{Phase: phase, AdapterStateRef: "s", AdapterVersion: "v", Hash: "h"}
	}
	for _, c := range []struct {
		field string
		limit int
		set   func(r *api.CheckpointRequest, d *checkpoints.Draft, s string)
	}{
		{"adapterStateRef", 512, func(r *api.CheckpointRequest, d *checkpoints.Draft, s string) {
			r.AdapterStateRef, d.AdapterStateRef = s, s
		}},
		{"adapterVersion", 32, func(r *api.CheckpointRequest, d *checkpoints.Draft, s string) {
			r.AdapterVersion, d.AdapterVersion = s, s
		}},
		{"hash", 128, func(r *api.CheckpointRequest, d *checkpoints.Draft, s string) { r.Hash, d.Hash = s, s }},
		{"contextSnapshotRef", 512, func(r *api.CheckpointRequest, d *checkpoints.Draft, s string) {
			r.ContextSnapshotRef, d.ContextSnapshotRef = &s, &s
		}},
	} {
		for _, n := range []int{c.limit, c.limit + 1} {
			r, d := wire(), draft()
			c.set(&r, &d, strings.Repeat("a", n))
			wireOK, draftOK := v.Validate(r) == nil, d.Validate() == nil
			if wireOK != draftOK || wireOK != (n <= c.limit) {
				t.Errorf("%s of %d units: the wire takes it %v, Draft.Validate %v; want both %v", c.field, n, wireOK, draftOK, n <= c.limit)
			}
		}
	}
}
