package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// TestREADMECurlSession runs the README's "A session with curl" as a new user would: every
// command of its sh blocks, in order, with bash and curl, against a service on a new
// database, and holds each curl command to what the README says it answers (the status in
// its comment or in the output block after it, and the problem code it names). What the
// test changes is only what a reader fills in: the keys the service printed, the address,
// the attemptId pasted from the claim, and the other tenant's key (made here rather than
// with `go run ./cmd/ledger keys create`, which would build the binary).
func TestREADMECurlSession(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the README's curl session (bash and curl processes) is skipped")
	}
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the README's curl session is not run", tool)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeSession(t, string(readme))

	s := apitest.New(t, apitest.Config{Serve: true})
	ctx := context.Background()
	token := func(tenant, role string) string {
		tok, _, err := s.Keys.CreateKey(ctx, tenant, role)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	admin, runtime, other := token("default", "admin"), token("default", "runtime"), token("other", "admin")

	out := t.TempDir()
	var script strings.Builder
	// Each curl writes its output, then its status on a line of its own, to a numbered file.
	fmt.Fprintf(&script, "set -u\nn=0\ncurl() { n=$((n+1)); command curl -w '\\n%%{http_code}\\n' \"$@\" > %q/$n 2> %q/$n.err; }\n", out, out)
	assigned := map[string]bool{}
	var curls []readmeCommand
	for _, c := range cmds {
		line := c.text
		switch {
		case strings.HasPrefix(line, "ADMIN="):
			line = "ADMIN=" + admin
		case strings.HasPrefix(line, "RUNTIME="):
			line = "RUNTIME=" + runtime
		case strings.HasPrefix(line, "B="):
			line = "B=" + s.URL
		case strings.HasPrefix(line, "OTHER=") && strings.Contains(line, "keys create --tenant other --role admin"):
			line = "OTHER=" + other
		case strings.HasPrefix(line, "A="):
			// The reader pastes the attemptId of the claim's answer.
			line = fmt.Sprintf(`A=$(sed -n 's/.*"attempt":{"attemptId":"\([^"]*\)".*/\1/p' %q/$n)`, out)
		case strings.HasPrefix(line, "curl "):
			curls = append(curls, c)
		}
		if name, _, ok := strings.Cut(line, "="); ok && regexp.MustCompile(`^[A-Z]+$`).MatchString(name) {
			assigned[name] = true
		}
		script.WriteString(line + "\n")
	}
	for _, name := range []string{"ADMIN", "RUNTIME", "B", "JSON", "OTHER", "A"} {
		if !assigned[name] {
			t.Fatalf("the README's session no longer sets %s; update this test with it", name)
		}
	}
	if len(curls) < 10 {
		t.Fatalf("found %d curl commands in the README's session, want the whole session", len(curls))
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the session's script failed: %v\n%s\nscript:\n%s", err, b, script.String())
	}

	for i, c := range curls {
		b, err := os.ReadFile(filepath.Join(out, strconv.Itoa(i+1)))
		if err != nil {
			t.Fatalf("curl %d (%s) did not run: %v", i+1, c.text, err)
		}
		text := strings.TrimRight(string(b), "\n")
		cut := strings.LastIndex(text, "\n")
		got, answer := text[cut+1:], text[:max(cut, 0)]
		want := c.wantStatus()
		switch {
		case want != "" && got != want:
			t.Errorf("README: %s\nanswered %s, the README says %s:\n%s", c.text, got, want, answer)
		case want == "" && !strings.HasPrefix(got, "2"):
			t.Errorf("README: %s\nanswered %s, the README shows success:\n%s", c.text, got, answer)
		}
		if code := c.wantCode(); code != "" && !strings.Contains(answer, `"code":"`+code+`"`) {
			t.Errorf("README: %s\nanswered without code %s, which the README names:\n%s", c.text, code, answer)
		}
	}
}

// readmeCommand is one shell command of the README's session, with the comments and the
// output block that say what it answers.
type readmeCommand struct {
	text   string // the command, continuation lines joined
	expect string // its trailing comments and the output block after it
}

var (
	statusInText  = regexp.MustCompile(`(?:^|[\s#,(])([1-5][0-9][0-9])(?:[\s,:)]|$)`)
	statusInJSON  = regexp.MustCompile(`"status":([1-5][0-9][0-9])`)
	statusInHTTP  = regexp.MustCompile(`HTTP/1\.1 ([1-5][0-9][0-9])`)
	codeInComment = regexp.MustCompile(`"code":"([a-z_]+)"|\b([a-z]+_[a-z_]+)\b`)
)

// wantStatus is the status the README gives the command ("" when it gives none).
func (c readmeCommand) wantStatus() string {
	for _, re := range []*regexp.Regexp{statusInHTTP, statusInJSON, statusInText} {
		if m := re.FindStringSubmatch(c.expect); m != nil {
			return m[1]
		}
	}
	return ""
}

// wantCode is the problem code the README's comment names for the command, if any.
func (c readmeCommand) wantCode() string {
	if c.wantStatus() == "" || c.wantStatus()[0] != '4' {
		return ""
	}
	m := codeInComment.FindStringSubmatch(c.expect)
	if m == nil {
		return ""
	}
	return m[1] + m[2]
}

// readmeSession reads the commands of the sh blocks of the README's "A session with curl",
// each with what the README says it answers.
func readmeSession(t *testing.T, readme string) []readmeCommand {
	t.Helper()
	start := strings.Index(readme, "\n## A session with curl")
	if start < 0 {
		t.Fatal(`README.md has no "## A session with curl"`)
	}
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var cmds []readmeCommand
	blocks := strings.Split(section, "```")
	for i := 1; i < len(blocks); i += 2 {
		block := blocks[i]
		lang, body, _ := strings.Cut(block, "\n")
		if lang != "sh" {
			if len(cmds) > 0 {
				cmds[len(cmds)-1].expect += "\n" + body // an answer as the README prints it
			}
			continue
		}
		for _, c := range splitShell(body) {
			if c.text == "" {
				if len(cmds) > 0 {
					cmds[len(cmds)-1].expect += "\n" + c.expect // a comment line under a command
				}
				continue
			}
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// splitShell splits shell text into commands: a newline ends one unless it is quoted or
// escaped, and a # that starts a word begins a comment (kept as the command's expect).
func splitShell(src string) []readmeCommand {
	var (
		out          []readmeCommand
		cur, comment strings.Builder
		quote        byte
		inComment    bool
	)
	flush := func() {
		out = append(out, readmeCommand{text: strings.TrimSpace(cur.String()), expect: strings.TrimSpace(comment.String())})
		cur.Reset()
		comment.Reset()
	}
	for i := 0; i < len(src); i++ {
		ch := src[i]
		switch {
		case inComment:
			if ch == '\n' {
				inComment = false
				flush()
			} else {
				comment.WriteByte(ch)
			}
		case quote != 0:
			cur.WriteByte(ch)
			if ch == quote {
				quote = 0
			}
		case ch == '\\' && i+1 < len(src) && src[i+1] == '\n':
			cur.WriteByte(' ')
			i++
		case ch == '\'' || ch == '"':
			quote = ch
			cur.WriteByte(ch)
		case ch == '#' && (cur.Len() == 0 || strings.ContainsRune(" \t", rune(cur.String()[cur.Len()-1]))):
			inComment = true
		case ch == '\n':
			flush()
		default:
			cur.WriteByte(ch)
		}
	}
	if cur.Len() > 0 || comment.Len() > 0 {
		flush()
	}
	var kept []readmeCommand
	for _, c := range out {
		if c.text != "" || c.expect != "" {
			kept = append(kept, c)
		}
	}
	return kept
}
