package strictjson

import (
	"testing"

	"github.com/ledger-dev/ledger/api"
)

// BenchmarkDecode decodes the bodies of the busiest routes: a fenced checkpoint and
// an enqueue with a small input.
//
//	go test -run '^$' -bench Decode ./internal/strictjson/
func BenchmarkDecode(b *testing.B) {
	bodies := []struct {
		name string
		body string
		dst  func() any
	}{
		{"checkpoint", `{"fencingToken":12,"sequence":3,"phase":"acting","adapterStateRef":"bench://state/1/3","adapterVersion":"1.0","hash":"000000000000000c0000000000000003"}`,
			func() any { return new(api.CheckpointRequest) }},
		{"enqueue", `{"subject":"bench-1a2b3c4d-17","kind":"bench","projectId":"p7","agentId":"bench-agent-1","stepId":"6f1c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f","snapshotId":"7f1c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f","band":"batch","input":{"a":[1,2,{"b":"c"}]}}`,
			func() any { return new(api.EnqueueRequest) }},
	}
	for _, c := range bodies {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				if err := Decode(body, c.dst()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
