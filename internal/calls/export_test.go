package calls

// InsertQuery and FinishQuery are the store's statements a fault test's statement hook
// recognises, to play a concurrent writer's part just before them.
func InsertQuery(s *Store) string { return s.q.insert }

func FinishQuery(s *Store) string { return s.q.finish }
