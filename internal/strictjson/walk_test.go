package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The walk (walk.go) stands in for encoding/json's Decoder on well-formed bodies. These
// tests hold it to what the Decoder does: the same verdict on a body, the same duplicate
// names, and the same members and elements, in every object and array of the body.

// decoderMembers is each object member as encoding/json's Decoder reads it (the walk
// replaced this), repeated names included.
func decoderMembers(raw []byte) (names []string, values [][]byte) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, _ = dec.Token()
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return
		}
		var member json.RawMessage
		if err := dec.Decode(&member); err != nil {
			return
		}
		name, _ := kt.(string)
		names, values = append(names, name), append(values, member)
	}
	return names, values
}

// agreeWithDecoder fails t where the walk of raw (well-formed) differs from the Decoder's.
func agreeWithDecoder(t *testing.T, raw []byte) {
	t.Helper()
	switch raw[0] {
	case '{':
		wantNames, wantValues := decoderMembers(raw)
		var names []string
		var values [][]byte
		eachRawMember(raw, func(name string, value []byte) {
			names, values = append(names, name), append(values, value)
		})
		if !reflect.DeepEqual(names, wantNames) || len(values) != len(wantValues) {
			t.Fatalf("members of %q: %q, want %q", raw, names, wantNames)
		}
		for i := range values {
			if !bytes.Equal(values[i], wantValues[i]) {
				t.Fatalf("member %q of %q: %q, want %q", names[i], raw, values[i], wantValues[i])
			}
			agreeWithDecoder(t, values[i])
		}
	case '[':
		var want []json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		eachElement(raw, func(v []byte) { got = append(got, v) })
		if len(got) != len(want) {
			t.Fatalf("elements of %q: %d, want %d", raw, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("element %d of %q: %q, want %q", i, raw, got[i], want[i])
			}
			agreeWithDecoder(t, got[i])
		}
	}
}

// checkWalk compares the walk with the Decoder on body.
func checkWalk(t *testing.T, body []byte) {
	t.Helper()
	dups, err := scanBody(body)
	if !validShallow(body) {
		if err == nil && depthOf(body) <= shallowDepth {
			t.Fatalf("%q: scanBody accepts it, the quick check does not", body)
		}
		return
	}
	if err != nil {
		t.Fatalf("%q: the quick check accepts it, scanBody says %v", body, err)
	}
	if got := dupMembers(body); !reflect.DeepEqual(got, dups) {
		t.Fatalf("duplicates of %q: %+v, want %+v", body, got, dups)
	}
	agreeWithDecoder(t, trimSpace(body))
}

// depthOf is the nesting of a well-formed body.
func depthOf(body []byte) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

var walkSeeds = []string{
	`{}`, `[]`, ` { } `, "\t[\n]\r\n", `null`, `"s"`, `12`, `-0.5e+3`, `true`,
	`{"a":1,"b":[1,2,{"c":"d"}],"e":{"f":null}}`,
	`{"a":1,"a":2,"b":{"c":1,"c":{"c":3,"c":4}},"d":[{"x":1,"x":2},{"x":3}]}`,
	`{ "a" : [ 1 , "x" , { } , [ ] ] , "b" : "}]\"{[" }`,
	`{"\u0061":1,"a":2,"\"":3,"\\":4,"\ud83d\ude00":5,"\u00e9":6}`,
	"{\"\xff\xfe\":1,\"\xef\xbf\xbd\":2}",
	`{"a":"\\","b":"\\\"","c":"x\\\\"}`,
	`{"fencingToken":12,"sequence":3,"phase":"acting","adapterStateRef":"bench://state/1/3","adapterVersion":"1.0","hash":"h"}`,
	`{"a":1}{"b":2}`, `{"a":1,}`, `{"a"}`, `[1,]`, `{"a":1`, `"abc`, `{"a":tru}`, ``, ` `, `nul`,
	`{"a":01}`, `[1 2]`, `{"a":1 "b":2}`, "{\"a\":\"\x01\"}",
	// Past the 16 names compared as written, and a name escaped after plain ones.
	`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":0,"m11":1,"m12":2,"m13":3,"m14":4,"m15":5,"m3":6,"m16":7,"m0":8,"m16":9}`,
	`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":0,"m11":1,"m12":2,"m13":3,"m14":4,"m15":5,"m15":{"a":1,"a":2}}`,
	`{"b":1,"a":2,"\u0062":3,"c":{"\u0063":1,"c":2}}`,
	strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65),
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
}

// TestWalkAgreesWithDecoder runs the comparison over bodies chosen for their edges: white
// space everywhere, duplicates at every depth, escaped names (a name spelled two ways is
// one name), bytes that are not UTF-8, strings that hold brackets and quotes, malformed
// bodies and deep ones.
func TestWalkAgreesWithDecoder(t *testing.T) {
	t.Parallel()
	for i, s := range walkSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			checkWalk(t, []byte(s))
		})
	}
}

// FuzzWalkAgreesWithDecoder is the same comparison over bodies the fuzzer makes:
// go test -run '^$' -fuzz FuzzWalkAgreesWithDecoder ./internal/strictjson/
func FuzzWalkAgreesWithDecoder(f *testing.F) {
	for _, s := range walkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkWalk(t, body)
	})
}
