package genclient_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest/genclient"
	"github.com/ledger-dev/ledger/internal/app"
)

// TestGeneratedClientIsFresh regenerates the client from the served document and fails when
// it differs from the committed one.
func TestGeneratedClientIsFresh(t *testing.T) {
	t.Parallel()
	doc, err := app.Document(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	code, err := genclient.Generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, code) {
		t.Fatal("client.gen.go is stale: the OpenAPI document changed. Regenerate it with\n  go run ./internal/apitest/genclient/regen")
	}
}
