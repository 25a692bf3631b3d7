package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// recipeSections are the sections of contributors.md that list the files a kind of change
// touches.
var recipeSections = []string{"Adding a field to a run", "Adding a route", "Adding a table", "Adding a problem code", "Adding a dialect"}

// TestRecipesNameFilesThatExist: every repository path a recipe of contributors.md names
// exists (a placeholder such as <pkg> or 0000NN stands for files to be made; {a,b} names
// each), each recipe that states how many hand-edited files it touches numbers that many,
// and the route recipe's SDK test files still hold the not-in-SDK lists that make a new
// route's coverage follow from the operation table.
func TestRecipesNameFilesThatExist(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("contributors.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range recipeSections {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			body := section(t, string(page), name)
			n := 0
			for _, p := range repoPaths(body) {
				n++
				matches, err := filepath.Glob(filepath.Join("..", p))
				if err != nil || len(matches) == 0 {
					t.Errorf("the recipe names %s, which does not exist", p)
				}
			}
			if n == 0 {
				t.Fatal("the recipe names no file")
			}
			if m := countRE.FindStringSubmatch(body); m != nil {
				want := numbers[m[1]]
				got := 0
				for _, it := range itemRE.FindAllStringSubmatch(body, -1) {
					got++
					if it[2] != "" {
						got += atoi(it[2]) - atoi(it[1])
					}
				}
				if want == 0 || got != want {
					t.Errorf("the recipe says %s hand-edited files and numbers %d", m[1], got)
				}
			}
		})
	}
	route := section(t, string(page), "Adding a route")
	for file, list := range map[string]string{
		"client/retrytable_test.go":          "notInSDK",
		"sdk/typescript/test/retry.test.mjs": "notInSdk",
		"sdk/python/tests/test_retry.py":     "NOT_IN_SDK",
	} {
		b, err := os.ReadFile(filepath.Join("..", file))
		if err != nil || !strings.Contains(string(b), list) {
			t.Errorf("%s has no %s: the route recipe's coverage tests no longer iterate the operation table (%v)", file, list, err)
		}
		if !strings.Contains(route, filepath.Base(filepath.Dir(file))) {
			t.Errorf("the route recipe does not name %s's SDK", file)
		}
	}
}

var (
	codeRE  = regexp.MustCompile("`([^`\\s]+)`")
	countRE = regexp.MustCompile(`touches (\w+) hand-edited files`)
	// itemRE counts a numbered list's items, "1. to 4." as four.
	itemRE  = regexp.MustCompile(`(?m)^(\d+)\.(?: to (\d+)\.)? `)
	numbers = map[string]int{"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
	roots   = []string{"api/", "client/", "internal/", "sdk/", "migrations/", "scripts/", "cmd/", "docs/"}
)

// section is the text of the ## section of that title.
func section(t *testing.T, page, title string) string {
	t.Helper()
	i := strings.Index(page, "\n## "+title+"\n")
	if i < 0 {
		t.Fatalf("contributors.md has no section %q", title)
	}
	rest := page[i+len(title)+5:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// repoPaths are the repository paths in a section's code spans, braces expanded and
// placeholders left out.
func repoPaths(body string) []string {
	var out []string
	for _, m := range codeRE.FindAllStringSubmatch(body, -1) {
		p := strings.TrimRight(m[1], ":,.")
		if strings.ContainsAny(p, "<>") || strings.Contains(p, "NN") || !hasRoot(p) {
			continue
		}
		out = append(out, expand(p)...)
	}
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func hasRoot(p string) bool {
	for _, r := range roots {
		if strings.HasPrefix(p, r) {
			return true
		}
	}
	return false
}

// expand names each alternative of the first {a,b} in p, recursively.
func expand(p string) []string {
	i := strings.Index(p, "{")
	j := strings.Index(p, "}")
	if i < 0 || j < i {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[i+1:j], ",") {
		out = append(out, expand(p[:i]+alt+p[j+1:])...)
	}
	return out
}
