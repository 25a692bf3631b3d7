// Command regen rewrites the generated client (../client.gen.go) from the document the
// service serves:
//
//	go run ./internal/apitest/genclient/regen
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/ledger-dev/ledger/internal/apitest/genclient"
	"github.com/ledger-dev/ledger/internal/app"
)

func main() {
	doc, err := app.Document(context.Background())
	if err == nil {
		var code []byte
		if code, err = genclient.Generate(doc, genclient.Operations...); err == nil {
			_, self, _, _ := runtime.Caller(0)
			err = os.WriteFile(filepath.Join(filepath.Dir(self), "..", "client.gen.go"), code, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "regen:", err)
		os.Exit(1)
	}
}
