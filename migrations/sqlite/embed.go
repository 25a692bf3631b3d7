// Package sqlite embeds the SQLite migrations (the embedded default).
package sqlite

import "embed"

// FS holds the numbered golang-migrate files of the SQLite schema.
//
//go:embed *.sql
var FS embed.FS
