package sqldb

import (
	"fmt"
	"strings"
	"testing"
)

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

// thirdDialect is a dialect no store has statements for: SQLite's behaviour under a name
// of its own.
type thirdDialect struct{ sqliteDialect }

func (thirdDialect) Name() string { return "third" }

// TestQueriesForRefusesADialectWithoutASet: a dialect added without its statement sets
// fails at the store's construction, naming itself, instead of running SQLite's.
func TestQueriesForRefusesADialectWithoutASet(t *testing.T) {
	t.Parallel()
	type set struct{ get string }
	defer func() {
		msg := fmt.Sprint(recover())
		if !strings.Contains(msg, `"third"`) || !strings.Contains(msg, "set") {
			t.Fatalf("QueriesFor for a dialect with no set: panic %q, want one naming the dialect", msg)
		}
	}()
	got := QueriesFor[set](thirdDialect{}, &set{"mssql"}, &set{"sqlite"})
	t.Fatalf("a dialect with no set got the %s set", got.get)
}
