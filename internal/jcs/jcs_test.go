package jcs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/jcs"
)

func TestCanonicalizeVectors(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil || len(inputs) < 9 {
		t.Fatalf("want the JCS vectors under testdata/jcs/input, found %d (%v)", len(inputs), err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			t.Parallel()
			src := mustRead(t, in)
			want := mustRead(t, filepath.Join("testdata/jcs/output", name))
			got, err := jcs.Canonicalize(src)
			if err != nil {
				t.Fatalf("canonicalize: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("canonical form differs\n got: %q\nwant: %q", got, want)
			}
			// The canonical form is its own canonical form.
			again, err := jcs.Canonicalize(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not a fixed point: %q (%v)", again, err)
			}
		})
	}
}

func TestCanonicalizeRefusesNonIJSON(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/jcs/invalid/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("want the invalid vectors under testdata/jcs/invalid, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		src := mustRead(t, f)
		out, err := jcs.Canonicalize(src)
		var ce *jcs.CanonicalError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %q, %v; want a *CanonicalError", filepath.Base(f), out, err)
		}
	}
}

func TestFormatNumberAppendixB(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/jcs/numbers.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		hexBits, want, ok := strings.Cut(line, ",")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		v := math.Float64frombits(bits)
		if got := jcs.FormatNumber(v); got != want {
			t.Errorf("%s (%v): got %s, want %s", hexBits, v, got, want)
		}
		// Through the parser too: the expected text must read back as the same double and
		// canonicalize to itself.
		got, err := jcs.Canonicalize([]byte(want))
		if err != nil || string(got) != want {
			t.Errorf("canonicalize %s: got %s, %v", want, got, err)
		}
		n++
	}
	if n < 24 {
		t.Fatalf("only %d number vectors read", n)
	}
}

func TestFormatNumberThresholds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   float64
		want string
	}{
		{1e21, "1e+21"}, {1e20, "100000000000000000000"}, {123e18, "123000000000000000000"},
		{1e-7, "1e-7"}, {1e-6, "0.000001"}, {1.5e-7, "1.5e-7"}, {0.1, "0.1"}, {-0.5, "-0.5"},
		{math.Copysign(0, -1), "0"}, {5, "5"}, {-1e21, "-1e+21"}, {1.25e-6, "0.00000125"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {123.456, "123.456"},
	} {
		if got := jcs.FormatNumber(c.in); got != c.want {
			t.Errorf("FormatNumber(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestCanonicalizeDetails(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		// Sorting is by UTF-16 code units: U+FB33 (one unit) after U+1F600 (D83D DE00),
		// although its code point is lower.
		{`{"\ufb33":1,"😀":2}`, `{"😀":2,"דּ":1}`},
		{"\t[ 1 ,\r\n2 ]\n", `[1,2]`},
		{`"\u007f\u2028/<>&"`, "\"\u007f\u2028/<>&\""},
		{`"\u0000\u001f\b"`, `"\u0000\u001f\b"`},
		{`[1E2, -0, 0.0, 1e-400, -1e-400]`, `[100,0,0,0,0]`},
		{`{"b":{"d":1,"c":[{"z":1,"y":2}]},"a":null}`, `{"a":null,"b":{"c":[{"y":2,"z":1}],"d":1}}`},
		{`"\uD83D\uDE00"`, `"😀"`},
		{`"\uFFFF"`, "\"\uffff\""},
	} {
		got, err := jcs.Canonicalize([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("Canonicalize(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	deep := strings.Repeat("[", jcs.MaxJSONDepth) + strings.Repeat("]", jcs.MaxJSONDepth)
	if _, err := jcs.Canonicalize([]byte(deep)); err != nil {
		t.Errorf("depth %d refused: %v", jcs.MaxJSONDepth, err)
	}
	if _, err := jcs.Canonicalize([]byte("[" + deep + "]")); err == nil {
		t.Errorf("depth %d accepted", jcs.MaxJSONDepth+1)
	}
}

// FuzzCanonicalize checks that the canonical form is valid JSON, is its own canonical form
// (canonicalize(parse(canonicalize(x))) == canonicalize(x)), means the same as the input,
// and that nothing but valid JSON is accepted.
func FuzzCanonicalize(f *testing.F) {
	for _, dir := range []string{"testdata/jcs/input", "testdata/jcs/invalid"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := jcs.Canonicalize(in)
		if err != nil {
			var ce *jcs.CanonicalError
			if !errors.As(err, &ce) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted invalid JSON %q", in)
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form %q of %q is not valid JSON", out, in)
		}
		again, err := jcs.Canonicalize(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("canonical form is not a fixed point:\n in: %q\nout: %q\nagain: %q (%v)", in, out, again, err)
		}
		var a, b any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatalf("input does not decode: %v", err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("canonical form does not decode: %v", err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("canonical form means something else:\n in: %q\nout: %q", in, out)
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
