package strictjson

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ledger-dev/ledger/api"
)

// TestPlainLeafAgreesWithEncodingJSON: where plainLeaf stores a value it is the one
// encoding/json stores, and it leaves to encoding/json everything it would refuse or read
// differently (escapes, invalid UTF-8, overflow, exponents, types that decode themselves).
func TestPlainLeafAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	type named string
	targets := []func() any{
		func() any { return new(string) }, func() any { return new(named) }, func() any { return new(int) },
		func() any { return new(int8) }, func() any { return new(int32) }, func() any { return new(int64) },
		func() any { return new(bool) }, func() any { return new(api.Phase) }, func() any { return new(float64) },
	}
	for _, raw := range []string{`"abc"`, `""`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", `"é"`, `0`, `-0`, `127`, `128`, `-129`,
		`2147483648`, `9223372036854775807`, `9223372036854775808`, `1e3`, `1.5`, `true`, `false`, `"acting"`, `"true"`, `"12"`} {
		for _, mk := range targets {
			fast, slow := mk(), mk()
			took := plainLeaf([]byte(raw), reflect.ValueOf(fast).Elem())
			err := json.Unmarshal([]byte(raw), slow)
			if !took {
				continue
			}
			if err != nil {
				t.Fatalf("%s into %T: plainLeaf stored what encoding/json refuses (%v)", raw, fast, err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%s into %T: plainLeaf stored %v, encoding/json %v", raw, fast, reflect.ValueOf(fast).Elem(), reflect.ValueOf(slow).Elem())
			}
		}
	}
}

// TestDecodeAllocations bounds the allocations of the busiest body, a fenced checkpoint:
// a string per member name (twice), a set per object and an encoding/json decoder per
// scalar made 32 allocations; 11 remain.
func TestDecodeAllocations(t *testing.T) {
	body := []byte(`{"fencingToken":12,"sequence":3,"phase":"acting","adapterStateRef":"bench://state/1/3","adapterVersion":"1.0","hash":"000000000000000c0000000000000003"}`)
	got := testing.AllocsPerRun(200, func() {
		if err := Decode(body, new(api.CheckpointRequest)); err != nil {
			t.Fatal(err)
		}
	})
	if got > 12 {
		t.Fatalf("%v allocations per checkpoint body, want at most 12", got)
	}
}
