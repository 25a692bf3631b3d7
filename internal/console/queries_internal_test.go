package console

import (
	"testing"

	"github.com/ledger-dev/ledger/internal/sqllint"
)

// The two query sets agree statement by statement: placeholders, bounds, serial plans.
func TestQuerySetsAgree(t *testing.T) {
	t.Parallel()
	sqllint.CompareQuerySets(t, querySets.All())
}
