// Package mssql embeds the SQL Server migrations (production).
package mssql

import "embed"

// FS holds the numbered golang-migrate files of the SQL Server schema.
//
//go:embed *.sql
var FS embed.FS
