package sqldb

import (
	"fmt"
	"strings"
	"testing"
)

type set struct{ get string }

// sets is a registry as a store package fills it from its queries_<dialect>.go files.
func sets() *QuerySets[set] {
	var s QuerySets[set]
	s.Register(SQLServerName, &set{"mssql"})
	s.Register(SQLiteName, &set{"sqlite"})
	return &s
}

func TestQueriesForPicksTheDialectsSet(t *testing.T) {
	t.Parallel()
	s := sets()
	if got := QueriesFor(mssqlDialect{}, s); got.get != "mssql" {
		t.Errorf("SQL Server got the %s set", got.get)
	}
	if got := QueriesFor(sqliteDialect{}, s); got.get != "sqlite" {
		t.Errorf("SQLite got the %s set", got.get)
	}
}

// thirdDialect is a dialect no store has statements for: SQLite's behaviour under a name
// of its own.
type thirdDialect struct{ sqliteDialect }

func (thirdDialect) Name() string { return "third" }

// mustPanic runs f and returns its panic's message, failing the test when it returns.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() { msg = fmt.Sprint(recover()) }()
	f()
	t.Fatal("no panic")
	return ""
}

// TestQueriesForRefusesADialectWithoutASet: a dialect added without its statement sets
// fails at the store's construction, naming itself, instead of running SQLite's.
func TestQueriesForRefusesADialectWithoutASet(t *testing.T) {
	t.Parallel()
	msg := mustPanic(t, func() { QueriesFor(thirdDialect{}, sets()) })
	if !strings.Contains(msg, `"third"`) || !strings.Contains(msg, "set") {
		t.Fatalf("QueriesFor for a dialect with no set: panic %q, want one naming the dialect", msg)
	}
}

// TestQueriesForTakesARegisteredThirdDialect: a third dialect's set, registered beside the
// others, is what QueriesFor picks for it, with no edit to the other registrations.
func TestQueriesForTakesARegisteredThirdDialect(t *testing.T) {
	t.Parallel()
	s := sets()
	s.Register("third", &set{"third"})
	if got := QueriesFor(thirdDialect{}, s); got.get != "third" {
		t.Errorf("the third dialect got the %s set", got.get)
	}
	if n := len(s.All()); n != 3 {
		t.Errorf("All has %d sets, want 3", n)
	}
}

// TestQuerySetsAreWriteOnce: the registry is global state made safe by being written only
// while packages initialise; a second set for a dialect, or a registration after the sets
// were read, is a defect that panics rather than swapping statements under a running store.
func TestQuerySetsAreWriteOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, want string
		f          func(s *QuerySets[set])
	}{
		{"duplicate", "second", func(s *QuerySets[set]) { s.Register(SQLiteName, &set{"again"}) }},
		{"after a read", "after", func(s *QuerySets[set]) {
			QueriesFor(sqliteDialect{}, s)
			s.Register("third", &set{"third"})
		}},
		{"after All", "after", func(s *QuerySets[set]) {
			s.All()
			s.Register("third", &set{"third"})
		}},
		{"nil", "nil", func(s *QuerySets[set]) { s.Register("third", nil) }},
	}
	for _, c := range cases {
		s := sets()
		if msg := mustPanic(t, func() { c.f(s) }); !strings.Contains(msg, c.want) {
			t.Errorf("%s: panic %q, want one containing %q", c.name, msg, c.want)
		}
	}
}
