// Command regen rewrites the generated client (../models.gen.go, ../client.gen.go, ../responses.gen.go) from the document the
// service serves:
//
//	cd internal/apitest/genclient && go run ./regen
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/ledger-dev/ledger/internal/apitest/genclient/generator"
	"github.com/ledger-dev/ledger/internal/app"
)

func main() {
	doc, err := app.Document(context.Background())
	if err == nil {
		var files map[string][]byte
		if files, err = generator.Generate(doc, generator.Operations...); err == nil {
			_, self, _, _ := runtime.Caller(0)
			for _, name := range generator.Files {
				if err = os.WriteFile(filepath.Join(filepath.Dir(self), "..", name), files[name], 0o644); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "regen:", err)
		os.Exit(1)
	}
}
