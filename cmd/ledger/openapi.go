package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ledger-dev/ledger/internal/app"
)

// runOpenAPI writes the OpenAPI document the service serves at /openapi.json, so that tools
// (linters, generators) can read it without a running server.
func runOpenAPI(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("openapi", stdout)
	out := fs.String("out", "", "write the document to this file instead of standard output")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q (see ledger openapi --help)", fs.Arg(0))
	}
	doc, err := app.Document(ctx)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(doc)
		return err
	}
	return os.WriteFile(*out, doc, 0o644)
}
