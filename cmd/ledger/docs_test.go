package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	ledgerInvocation = regexp.MustCompile(`(?:^|[\s($])ledger\s`)
	optionalArgs     = regexp.MustCompile(`\[([^\]]*)\]`)
	exampleKeyID     = regexp.MustCompile(`\b[0-9a-f]{16}\b`)
	sqlServerExport  = regexp.MustCompile(`^export LEDGER_DB='sqlserver://[^']*'$`)
)

// docsScript is the shell the docs show: every command of README.md that runs ledger, and
// every sh block of docs/operators.md that does, in order, with what a reader fills in
// filled in (an existing key id for the example one, the optional arguments given, the
// embedded database for the SQL Server DSN).
func docsScript(t *testing.T) (script string, invocations int) {
	t.Helper()
	var b strings.Builder
	add := func(text string) {
		text = strings.ReplaceAll(text, "go run ./cmd/ledger", "ledger")
		text = optionalArgs.ReplaceAllString(text, "$1")
		text = exampleKeyID.ReplaceAllString(text, `"$$(cat "$$WORK/lastkey")"`)
		if sqlServerExport.MatchString(text) {
			text = "export LEDGER_DB=./data/ledger.db"
		}
		invocations += len(ledgerInvocation.FindAllString(text, -1))
		b.WriteString(text + "\n")
	}
	for _, doc := range []string{"README.md", filepath.Join("docs", "operators.md")} {
		src, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		blocks := strings.Split(string(src), "```")
		for i := 1; i < len(blocks); i += 2 {
			lang, body, _ := strings.Cut(blocks[i], "\n")
			if lang != "sh" {
				continue
			}
			cmds := splitShell(body)
			runsLedger := false
			for _, c := range cmds {
				runsLedger = runsLedger || ledgerInvocation.MatchString(strings.ReplaceAll(c.text, "go run ./cmd/ledger", "ledger"))
			}
			for _, c := range cmds {
				switch {
				case c.text == "":
				case doc == "README.md":
					// The README's other commands are its curl session (TestREADMECurlSession).
					if strings.Contains(c.text, "go run ./cmd/ledger") {
						add(c.text)
					}
				case runsLedger:
					add(c.text)
				}
			}
		}
	}
	return b.String(), invocations
}

// TestDocsCommandsRun runs, with bash, every ledger command README.md and docs/operators.md
// show, against a temporary SQLite database: each must parse and succeed. serve runs until
// it is stopped, so only its flags are checked (serve … --help). It changes the working
// directory (the docs use ./data), so it does not run in parallel.
func TestDocsCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the docs' commands (bash processes) are skipped")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed: the docs' commands are not run")
	}
	body, invocations := docsScript(t)
	if invocations < 15 {
		t.Fatalf("found %d ledger commands in the docs, want them all:\n%s", invocations, body)
	}
	for _, want := range []string{"ledger migrate up", "ledger backup", "ledger keys revoke", "ledger serve"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the docs no longer show %q; update this test:\n%s", want, body)
		}
	}
	work := t.TempDir()
	script := `set -euo pipefail
ledger() {
	echo "$*" >> "$WORK/calls"
	case "$1" in
	serve|bench) LEDGER_TEST_CHILD_ARGV=1 "$BIN" "$@" --help > /dev/null ;;
	*)
		LEDGER_TEST_CHILD_ARGV=1 "$BIN" "$@" > "$WORK/out"
		cat "$WORK/out"
		if [ "$1 ${2-}" = "keys create" ]; then tail -n 1 "$WORK/out" | cut -d_ -f2 > "$WORK/lastkey"; fi ;;
	esac
}
# The SQL Server database the deploy step checks exists already; a SQLite file stands for it.
ledger migrate up --db "$LEDGER_MIGRATE_DB" > /dev/null
` + body
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = work
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEDGER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "WORK="+work, "BIN="+os.Args[0], "LEDGER_MIGRATE_DB=./data/ledger.db", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	calls, _ := os.ReadFile(filepath.Join(work, "calls"))
	if err != nil {
		t.Fatalf("a command the docs show failed: %v\nlast command: %s\noutput:\n%s\nscript:\n%s", err,
			lastLine(string(calls)), out, body)
	}
	t.Logf("ran:\n%s", calls)
	if n := strings.Count(string(calls), "\n"); n < invocations+1 {
		t.Fatalf("%d ledger commands ran, the docs show %d:\n%s", n-1, invocations, calls)
	}
}
