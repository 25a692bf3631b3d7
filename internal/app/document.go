package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/web/openapi"
)

// Document returns the OpenAPI document the service serves at /openapi.json, without a
// database of its own: the routes are assembled over a scratch SQLite file that is removed
// again (nothing is read from it). ledger openapi and the generated client's freshness
// check write it.
func Document(ctx context.Context) ([]byte, error) {
	dir, err := os.MkdirTemp("", "ledger-openapi-")
	if err != nil {
		return nil, fmt.Errorf("build the OpenAPI document: %w", err)
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: filepath.Join(dir, "scratch.db"), Logger: quiet})
	if err != nil {
		return nil, fmt.Errorf("build the OpenAPI document: %w", err)
	}
	defer db.Close()
	doc, err := json.MarshalIndent(openapi.Document(New(db, Config{Logger: quiet}).Server), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("build the OpenAPI document: %w", err)
	}
	return append(doc, '\n'), nil
}
