// The layout section of contributors.md is generated from the packages' doc comments, so
// that it lists every package and says what each one's own comment says.
package docs

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	layoutBegin = "<!-- layout: generated from the packages' doc comments; LEDGER_WRITE_LAYOUT=1 go test ./docs/ rewrites it -->\n"
	layoutEnd   = "<!-- layout end -->\n"
	layoutWidth = 96 // the column past which a line wraps
	layoutPath  = 22 // the column where a package's synopsis starts
)

// TestLayoutIsCurrent fails when contributors.md's layout is not what the packages' doc
// comments say (a package added, moved, removed or redescribed);
// LEDGER_WRITE_LAYOUT=1 rewrites it.
func TestLayoutIsCurrent(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("contributors.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	i, j := strings.Index(text, layoutBegin), strings.Index(text, layoutEnd)
	if i < 0 || j < i {
		t.Fatalf("contributors.md has no layout block (%q ... %q)", layoutBegin, layoutEnd)
	}
	want := layout(t, "..")
	got := text[i+len(layoutBegin) : j]
	if got == want {
		return
	}
	if os.Getenv("LEDGER_WRITE_LAYOUT") != "" {
		if err := os.WriteFile("contributors.md", []byte(text[:i+len(layoutBegin)]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("contributors.md's layout is not the packages' doc comments (scripts/regenerate, or LEDGER_WRITE_LAYOUT=1 go test ./docs/, rewrites it); want:\n%s", want)
}

// layout is the fenced block listing every Go package under root with the first sentence
// of its doc comment.
func layout(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		synopsis, ok := packageSynopsis(t, path)
		if ok {
			rel, _ := filepath.Rel(root, path)
			lines = append(lines, entry(filepath.ToSlash(rel), synopsis)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return "```\n" + strings.Join(lines, "\n") + "\n```\n"
}

// packageSynopsis is the first sentence of the doc comment of the package in dir, if dir
// holds one (test files aside).
func packageSynopsis(t *testing.T, dir string) (string, bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	found, comment := false, ""
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		found = true
		if af.Doc != nil && comment == "" {
			comment = af.Doc.Text()
		}
	}
	if !found {
		return "", false
	}
	if comment == "" {
		t.Errorf("package %s has no doc comment", dir)
	}
	return new(doc.Package).Synopsis(comment), true
}

// entry is one package's lines: its path, then the synopsis wrapped at layoutWidth.
func entry(path, synopsis string) []string {
	var out []string
	line := path + strings.Repeat(" ", max(1, layoutPath-len(path)))
	if len(path) >= layoutPath {
		out, line = append(out, path), strings.Repeat(" ", layoutPath)
	}
	fresh := true
	for _, w := range strings.Fields(synopsis) {
		if !fresh && len(line)+1+len(w) > layoutWidth {
			out, line, fresh = append(out, line), strings.Repeat(" ", layoutPath), true
		}
		if !fresh {
			line += " "
		}
		line, fresh = line+w, false
	}
	return slices.Clip(append(out, line))
}
