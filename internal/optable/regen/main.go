// Command regen rewrites api/operations.json from an OpenAPI document file (what `ledger
// openapi --out` writes) and api/retry.json; scripts/regenerate runs it.
//
//	go run ./internal/optable/regen openapi.json
package main

import (
	"fmt"
	"os"

	"github.com/ledger-dev/ledger/internal/optable"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: regen OPENAPI.json (run at the repository's root)")
	}
	doc, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	retry, err := os.ReadFile("api/retry.json")
	if err != nil {
		return err
	}
	out, err := optable.Build(doc, retry)
	if err != nil {
		return err
	}
	return os.WriteFile("api/operations.json", out, 0o644)
}
