package traces

import (
	"testing"

	"github.com/ledger-dev/ledger/internal/sqllint"
)

// TestQuerySetsAgree compares the two dialects' statements name by name.
func TestQuerySetsAgree(t *testing.T) {
	t.Parallel()
	sqllint.CompareQuerySets(t, querySets.All())
}
