package sqldb

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlySqldbCanSetTheBypassKey reads every Go file of the module (tests aside): the only
// string that names the LedgerMaintenance session key is SetScope's statement here, and
// MaintenanceScope is never called from HTTP handler code, so no request's input can reach
// the bypass. (SetScope itself sends a tenant's id only as a parameter value: see
// TestScopeArgsNeverLetATenantSetTheBypass.)
func TestOnlySqldbCanSetTheBypassKey(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	literals, calls := 0, 0
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if name := e.Name(); name == ".git" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING && strings.Contains(n.Value, "LedgerMaintenance") {
					literals++
					if rel != "internal/sqldb/dialect_mssql.go" {
						t.Errorf("%s: a string names the LedgerMaintenance session key: only sqldb's SetScope may", fset.Position(n.Pos()))
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "MaintenanceScope" {
					calls++
					if strings.HasSuffix(rel, "/http.go") || strings.HasPrefix(rel, "internal/web/") || strings.HasPrefix(rel, "api/") {
						t.Errorf("%s: HTTP code opens a maintenance transaction", fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if literals != 1 || calls == 0 {
		t.Fatalf("found %d bypass key literals and %d MaintenanceScope calls: the scan is broken", literals, calls)
	}
}
