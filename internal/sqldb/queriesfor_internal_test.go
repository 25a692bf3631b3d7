package sqldb

import "testing"

func TestQueriesForPicksTheDialectsSet(t *testing.T) {
	t.Parallel()
	type set struct{ get string }
	mssql, sqlite := &set{"mssql"}, &set{"sqlite"}
	if got := QueriesFor[set](mssqlDialect{}, mssql, sqlite); got != mssql {
		t.Errorf("SQL Server got the %s set", got.get)
	}
	if got := QueriesFor[set](sqliteDialect{}, mssql, sqlite); got != sqlite {
		t.Errorf("SQLite got the %s set", got.get)
	}
}
