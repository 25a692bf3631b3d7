package delegations

// InsertQuery is the store's delegation insert, which a fault test's statement hook plays
// a concurrent create's part with.
func InsertQuery(s *Store) string { return s.q.insert }
