package sqldb

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
