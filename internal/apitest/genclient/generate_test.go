package genclient_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest/genclient"
	"github.com/ledger-dev/ledger/internal/app"
)

// TestGeneratedClientIsFresh generates a client from the whole served document (the
// generator must accept every operation), then the committed one (Operations only), and
// fails when that differs from client.gen.go.
func TestGeneratedClientIsFresh(t *testing.T) {
	t.Parallel()
	doc, err := app.Document(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := genclient.Generate(doc); err != nil {
		t.Fatalf("the whole document: %v", err)
	}
	code, err := genclient.Generate(doc, genclient.Operations...)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, code) {
		t.Fatal("client.gen.go is stale: the OpenAPI document changed. Regenerate it (and every other generated file) with\n  scripts/regenerate")
	}
}
