package checkpoints

// InsertQuery is the store's insert, which a fault test's statement hook recognises to
// play a concurrent writer's part just before it.
func InsertQuery(s *Store) string { return s.q.insert }
