package genclient_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest/genclient/generator"
	"github.com/ledger-dev/ledger/internal/app"
)

// TestGeneratedClientIsFresh generates a client from the whole served document (the
// generator must accept every operation), then the committed one (Operations only), and
// fails when that differs from client.gen.go.
// maxLines bounds a committed generated file, so that review and the editor stay usable.
const maxLines = 8000

func TestGeneratedClientIsFresh(t *testing.T) {
	t.Parallel()
	doc, err := app.Document(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generator.Generate(doc); err != nil {
		t.Fatalf("the whole document: %v", err)
	}
	files, err := generator.Generate(doc, generator.Operations...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range generator.Files {
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, files[name]) {
			t.Errorf("%s is stale: the OpenAPI document changed. Regenerate it (and every other generated file) with\n  scripts/regenerate", name)
		}
		if lines := bytes.Count(committed, []byte("\n")); lines > maxLines {
			t.Errorf("%s has %d lines, more than the %d a committed generated file may have", name, lines, maxLines)
		}
	}
}
