package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/app"
)

// TestFlagsFollowTheVerb: every subcommand takes its flags after its verb and arguments as
// well as before them (the docs' deploy step is `ledger migrate up --db X`); after "--"
// everything is an argument.
func TestFlagsFollowTheVerb(t *testing.T) {
	t.Parallel()
	n := latest(t)
	path := tempDB(t)
	if got := afterApplied(mustCLI(t, "migrate", "up", "--db", path)); got != versionLine(n, n) {
		t.Fatalf("migrate up --db: %q", got)
	}
	if got := mustCLI(t, "migrate", "version", "--db", path); got != versionLine(n, n) {
		t.Fatalf("migrate version --db: %q", got)
	}
	if got := mustCLI(t, "migrate", "down", "1", "--db", path); got != versionLine(n-1, n) {
		t.Fatalf("migrate down 1 --db: %q", got)
	}
	if got := mustCLI(t, "migrate", "force", "--db", path, itoa(n-1)); got != versionLine(n-1, n) {
		t.Fatalf("migrate force --db V: %q", got)
	}
	mustCLI(t, "migrate", "up", "--sqlite-sync", "full", "--db", path)
	token := lastLine(mustCLI(t, "keys", "create", "--db", path, "--tenant", "acme", "--role", "admin"))
	if out := mustCLI(t, "keys", "list", "--db", path, "--tenant", "acme"); !strings.Contains(out, keyID(token)) {
		t.Fatalf("keys list --db --tenant: %q", out)
	}
	mustCLI(t, "keys", "revoke", keyID(token), "--db", path)
	mustCLI(t, "tenants", "set", "--tenant", "acme", "--db", path, "--max-leased", "5")
	if out := mustCLI(t, "tenants", "list", "--db", path); !strings.Contains(out, "acme") {
		t.Fatalf("tenants list --db: %q", out)
	}
	mustCLI(t, "purge", "--db", path, "--dry-run")
	mustCLI(t, "check", "--db", path, "--json")
	out := filepath.Join(t.TempDir(), "openapi.json")
	mustCLI(t, "openapi", "--out", out)
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("openapi --out: %v", err)
	}
	// "--" ends the flags: what follows is an argument even if it looks like a flag.
	code, stdout, stderr := cli(t, "migrate", "--db", path, "--", "up", "--db")
	wantOneLineError(t, "migrate", code, stdout, stderr)
	if !strings.Contains(stderr, "up takes no argument") {
		t.Fatalf("after --, --db was not an argument: %q", stderr)
	}
	// serve refuses an argument instead of ignoring it.
	code, stdout, stderr = cli(t, "serve", "--db", tempDB(t), "extra")
	wantFatalLogLine(t, code, stdout, stderr)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestDBRefusesWhatIsNotADatabase: a --db that looks like a URL is sqlserver:// or refused
// with the accepted forms; nothing is created, and no message shows the password. It
// changes the working directory (where a mistyped scheme's directory would appear), so it
// does not run in parallel.
func TestDBRefusesWhatIsNotADatabase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, dsn := range []string{
		"sqlsrv://sa:secret@host?database=ledger",
		"mysql://root:secret@localhost/ledger",
		"postgres://u:secret@db:5432/ledger",
		"SQLSERVER://sa:secret@host?database=ledger",
		"sqlsrv:sa:secret@host",
		"file:led.db?mode=secret",
	} {
		for _, args := range [][]string{
			{"migrate", "up", "--db", dsn},
			{"serve", "--addr", "127.0.0.1:0", "--db", dsn},
			{"keys", "list", "--db", dsn},
			{"check", "--db", dsn},
		} {
			t.Run(args[0]+"_"+dsn, func(t *testing.T) {
				code, stdout, stderr := cli(t, args...)
				if code == 0 {
					t.Fatalf("exit 0 for --db %q; stdout %q", dsn, stdout)
				}
				if strings.Contains(stdout+stderr, "secret") {
					t.Fatalf("a message shows the password: %q %q", stdout, stderr)
				}
				if !strings.Contains(stderr, "sqlserver://") && !strings.Contains(stderr, "options") {
					t.Fatalf("the refusal does not name the accepted forms: %q", stderr)
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Fatalf("a refused --db created %v", entries[0].Name())
				}
			})
		}
	}
}

// TestDBTakesAPathOrAFileURI: a SQLite database is a path or a file: URI naming the same file.
func TestDBTakesAPathOrAFileURI(t *testing.T) {
	t.Parallel()
	n := latest(t)
	path := tempDB(t)
	mustCLI(t, "migrate", "up", "--db", path)
	for _, dsn := range []string{path, "file:" + path, "file://" + path, "sqlite://" + path} {
		if got := mustCLI(t, "migrate", "version", "--db", dsn); got != versionLine(n, n) {
			t.Fatalf("--db %s: %q", dsn, got)
		}
	}
}

// TestSQLServerErrorsHideThePassword: a SQL Server that cannot be reached is named by its
// host, never by the DSN with its password.
func TestSQLServerErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	dsn := "sqlserver://sa:s3cr3tpw@127.0.0.1:1?database=ledger&dial+timeout=1&connection+timeout=2"
	for _, args := range [][]string{{"migrate", "up", "--db", dsn}, {"check", "--db", dsn}, {"keys", "list", "--db", dsn}} {
		code, stdout, stderr := cli(t, args...)
		if code == 0 || strings.Contains(stdout+stderr, "s3cr3tpw") {
			t.Fatalf("ledger %v: exit %d, a message shows the password or it succeeded: %q %q", args[:2], code, stdout, stderr)
		}
	}
}

// TestOwnFlagsIgnoreTheEnvironment: only the service's settings read LEDGER_* variables; a
// subcommand's own flags do not, so a variable exported for one step of a pipeline changes
// no other. Each unknown LEDGER_* variable is a warning naming it (and the likely setting).
// It sets the environment, so it does not run in parallel.
func TestOwnFlagsIgnoreTheEnvironment(t *testing.T) {
	path := migratedDB(t)
	for _, kv := range [][2]string{
		{"LEDGER_JSON", "true"}, {"LEDGER_FOR", "bogus"}, {"LEDGER_DRY_RUN", "true"}, {"LEDGER_OUT", filepath.Join(t.TempDir(), "x")},
		{"LEDGER_BATCH", "0"}, {"LEDGER_ROLE", "admin"}, {"LEDGER_TENANT", "envtenant"}, {"LEDGER_ADRR", ":1"},
	} {
		t.Setenv(kv[0], kv[1])
	}
	t.Setenv("LEDGER_DB", path) // a service setting: read

	code, stdout, stderr := cli(t, "check")
	if code != 0 || strings.HasPrefix(strings.TrimSpace(stdout), "{") {
		t.Fatalf("check read LEDGER_JSON or LEDGER_FOR: exit %d, %q %q", code, stdout, stderr)
	}
	warned := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var e struct {
			Level, Variable string
			DidYouMean      string `json:"did_you_mean"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Level == "WARN" {
			warned[e.Variable] = e.DidYouMean
		}
	}
	for _, v := range []string{"LEDGER_JSON", "LEDGER_FOR", "LEDGER_DRY_RUN", "LEDGER_OUT", "LEDGER_BATCH", "LEDGER_ROLE", "LEDGER_TENANT", "LEDGER_ADRR"} {
		if _, ok := warned[v]; !ok {
			t.Errorf("no warning for %s: %q", v, stderr)
		}
	}
	if warned["LEDGER_ADRR"] != "LEDGER_ADDR" {
		t.Errorf("the warning for LEDGER_ADRR suggests %q, want LEDGER_ADDR", warned["LEDGER_ADRR"])
	}
	if _, ok := warned["LEDGER_DB"]; ok {
		t.Errorf("LEDGER_DB, a service setting, was warned about")
	}

	// keys create needs its own --tenant and --role: the variables do not supply them.
	code, _, stderr = cli(t, "keys", "create")
	if code == 0 || !strings.Contains(stderr, "needs --tenant and --role") {
		t.Fatalf("keys create took --tenant/--role from the environment: exit %d, %q", code, stderr)
	}
	// keys list lists every tenant, not LEDGER_TENANT's.
	mustCLI(t, "keys", "create", "--tenant", "other", "--role", "runtime")
	if out := mustCLI(t, "keys", "list"); !strings.Contains(out, "other") {
		t.Fatalf("keys list filtered by LEDGER_TENANT: %q", out)
	}
	// purge really runs (not LEDGER_DRY_RUN) with the default batch (not LEDGER_BATCH=0).
	if out := mustCLI(t, "purge"); strings.Contains(out, "dry run") {
		t.Fatalf("purge read LEDGER_DRY_RUN: %q", out)
	}
	// openapi writes to standard output, not LEDGER_OUT.
	if out := mustCLI(t, "openapi"); !strings.Contains(out, `"openapi"`) {
		t.Fatalf("openapi read LEDGER_OUT: %.100q", out)
	}
}

// TestBadEnvironmentValueNamesTheFormat: a service setting's variable that does not parse
// stops the command with the variable, its value and the format it needs.
func TestBadEnvironmentValueNamesTheFormat(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"LEDGER_LEASE_TTL", "30", "a duration such as"},
		{"LEDGER_MAX_DEPTH", "eight", "a whole number"},
		{"LEDGER_MIGRATE", "yes please", "true or false"},
		{"LEDGER_RATE_LIMIT", "fast", "a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			code, stdout, stderr := cli(t, "serve", "--db", tempDB(t), "--addr", "127.0.0.1:0")
			wantFatalLogLine(t, code, stdout, stderr)
			if !strings.Contains(stderr, c.name) || !strings.Contains(stderr, c.want) {
				t.Fatalf("the error does not name %s and %q: %q", c.name, c.want, stderr)
			}
		})
	}
	t.Setenv("LEDGER_SQLITE_BUSY_TIMEOUT", "5")
	code, stdout, stderr := cli(t, "migrate", "version")
	wantOneLineError(t, "migrate", code, stdout, stderr)
	if !strings.Contains(stderr, "LEDGER_SQLITE_BUSY_TIMEOUT") || !strings.Contains(stderr, "duration") {
		t.Fatalf("migrate: %q", stderr)
	}
}

// TestVersion: `ledger --version` and `ledger version` print the version and exit 0.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, stdout, stderr := cli(t, args...)
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if code != 0 || stderr != "" || len(lines) != 4 || lines[0] != "ledger "+app.Version ||
			!strings.HasPrefix(lines[1], "module github.com/ledger-dev/ledger ") || !strings.HasPrefix(lines[2], "commit ") ||
			lines[3] != "schema version "+itoa(latest(t)) {
			t.Fatalf("ledger %v: exit %d, %q %q; want the release, module version, commit and schema version", args, code, stdout, stderr)
		}
	}
}

// Flags before the command are the command's (`ledger --db X migrate version`); flags with
// no command after them are one line, not the whole usage.
func TestGlobalFlagsBeforeTheVerb(t *testing.T) {
	t.Parallel()
	path := migratedDB(t)
	n := latest(t)
	if got := mustCLI(t, "--db", path, "migrate", "version"); got != versionLine(n, n) {
		t.Fatalf("ledger --db X migrate version: %q", got)
	}
	code, stdout, stderr := cli(t, "--db", path)
	if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no command follows it") {
		t.Fatalf("ledger --db X: exit %d, stdout %q, stderr %q; want one line", code, stdout, stderr)
	}
}

// backup says it copies the embedded database only before it tries to connect to a SQL
// Server (the address below refuses connections, which would be the error otherwise).
func TestBackupRefusesSQLServerBeforeConnecting(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := cli(t, "backup", "--db", "sqlserver://u:secret@127.0.0.1:1?database=ledger", "--out", filepath.Join(t.TempDir(), "b.db"))
	wantOneLineError(t, "backup", code, stdout, stderr)
	if !strings.Contains(stderr, "embedded SQLite database only") || strings.Contains(stderr, "secret") {
		t.Fatalf("backup of a sqlserver:// URL: %q", stderr)
	}
}

// TestServeFatalErrorsAreLogLines: a serve that cannot start says why in a JSON log line,
// like every other line it logs, never with a plain-text line a log collector cannot parse.
func TestServeFatalErrorsAreLogLines(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--log-level", "loud"},
		{"--max-inflight", "8"},
		{"--lease-ttl", "soon"},
		{"--db", "mysql://x@y/z"},
	} {
		code, stdout, stderr := cli(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", tempDB(t)}, args...)...)
		wantFatalLogLine(t, code, stdout, stderr)
	}
}
