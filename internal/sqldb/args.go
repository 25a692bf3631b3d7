package sqldb

import "encoding/json"

// OptionalBit is an optional flag as a statement's argument: NULL when absent, else 0 or 1
// (a bit on SQL Server, an integer on SQLite), so one `?n IS NULL OR ...` test reads it in
// both dialects.
func OptionalBit(b *bool) any {
	switch {
	case b == nil:
		return nil
	case *b:
		return 1
	}
	return 0
}

// JSONList is a list filter's argument: a JSON array of xs, "[]" for none, so one
// `?n = '[]' OR ...` test reads it in both dialects (nvarchar(max) on SQL Server: one plan
// whatever the list's length).
func JSONList(d Dialect, xs []string) any {
	if len(xs) == 0 {
		return d.JSON("[]")
	}
	b, _ := json.Marshal(xs)
	return d.JSON(string(b))
}
