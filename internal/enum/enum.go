// Package enum carries the service's enumerations over the wire: stored as the position in
// a fixed list (DESIGN.md section 7a), sent as lowercase snake_case strings.
package enum

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Names is an enumeration's wire names in stored order.
type Names []string

// Name returns v's wire name, or "" when v is out of range.
func (n Names) Name(v int) string {
	if v < 0 || v >= len(n) {
		return ""
	}
	return n[v]
}

// Parse returns the position of name.
func (n Names) Parse(name string) (int, bool) {
	for i, s := range n {
		if s == name {
			return i, true
		}
	}
	return 0, false
}

// Marshal encodes v as its JSON string.
func (n Names) Marshal(v int) ([]byte, error) {
	s := n.Name(v)
	if s == "" {
		return nil, fmt.Errorf("enum value %d out of range", v)
	}
	return json.Marshal(s)
}

// Unmarshal decodes a JSON string into its position; an unknown name is an error that
// lists the allowed ones.
func (n Names) Unmarshal(data []byte) (int, error) {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return 0, fmt.Errorf("must be one of: %s", strings.Join(n, ", "))
	}
	v, ok := n.Parse(s)
	if !ok {
		return 0, fmt.Errorf("must be one of: %s", strings.Join(n, ", "))
	}
	return v, nil
}
