package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	"github.com/ledger-dev/ledger/internal/tenancy"
	sqlitemigrations "github.com/ledger-dev/ledger/migrations/sqlite"
)

// cli runs the command in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// mustCLI runs the command and fails the test unless it exits 0.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := cli(t, args...)
	if code != 0 {
		t.Fatalf("ledger %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// wantOneLineError checks a failed command: non-zero exit, one line on stderr naming the
// command, nothing on stdout.
func wantOneLineError(t *testing.T, cmd string, code int, stdout, stderr string) {
	t.Helper()
	if code == 0 {
		t.Fatalf("exit 0, want a failure; stdout %q", stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Fatalf("stderr is not exactly one line: %q", stderr)
	}
	if !strings.HasPrefix(stderr, "ledger "+cmd+": ") {
		t.Fatalf("stderr %q does not start with %q", stderr, "ledger "+cmd+": ")
	}
	if stdout != "" {
		t.Fatalf("a failed command wrote stdout %q", stdout)
	}
}

// latest is the newest embedded SQLite migration, read from the files so the tests follow
// new migrations.
func latest(t *testing.T) int {
	t.Helper()
	names, err := fs.Glob(sqlitemigrations.FS, "*.up.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no embedded migrations: %v", err)
	}
	top := 0
	for _, n := range names {
		digits, _, _ := strings.Cut(n, "_")
		v, err := strconv.Atoi(digits)
		if err != nil {
			t.Fatalf("migration %s is not numbered: %v", n, err)
		}
		top = max(top, v)
	}
	return top
}

// afterApplied is migrate's output without the "applied N title: kind" lines of migrate up.
func afterApplied(out string) string {
	var keep []string
	for _, line := range strings.SplitAfter(out, "\n") {
		if !strings.HasPrefix(line, "applied ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}

func versionLine(v, of int) string { return fmt.Sprintf("version %d of %d, dirty false\n", v, of) }

func tempDB(t *testing.T) string { return filepath.Join(t.TempDir(), "ledger.db") }

// emptyDB is an empty SQLite file (a database without a schema): only serve and migrate up
// create a database, so the commands that read one need a file to be there.
func emptyDB(t *testing.T) string {
	t.Helper()
	path := tempDB(t)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func openTestDB(t *testing.T, path string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), sqldb.Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMigrateRoundTrip(t *testing.T) {
	t.Parallel()
	n := latest(t)
	if n < 3 {
		t.Fatalf("round trip needs at least 3 migrations, have %d", n)
	}
	db := emptyDB(t)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"version"}, versionLine(0, n)},
		{[]string{"up"}, versionLine(n, n)},
		{[]string{"version"}, versionLine(n, n)},
		{[]string{"up"}, versionLine(n, n)}, // nothing to do is success
		{[]string{"down", "2"}, versionLine(n-2, n)},
		{[]string{"version"}, versionLine(n-2, n)},
		{[]string{"up"}, versionLine(n, n)},
		{[]string{"down", strconv.Itoa(n)}, versionLine(0, n)},
		{[]string{"up"}, versionLine(n, n)},
		// force sets the version without running anything (migrations that move data need
		// the tables they read, so forcing an empty database forward would not be real).
		{[]string{"force", strconv.Itoa(n - 1)}, versionLine(n-1, n)},
		{[]string{"force", strconv.Itoa(n)}, versionLine(n, n)},
	}
	for _, s := range steps {
		args := append([]string{"migrate", "--db", db}, s.args...)
		if got := afterApplied(mustCLI(t, args...)); got != s.want {
			t.Fatalf("migrate %v printed %q, want %q", s.args, got, s.want)
		}
	}
	st, err := migrate.ReadState(context.Background(), openTestDB(t, db))
	if err != nil || !st.Current() {
		t.Fatalf("schema after the round trip: %+v %v", st, err)
	}
}

func TestMigrateRefusesBadArguments(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
	}{
		{"NoVerb", nil},
		{"UnknownVerb", []string{"sideways"}},
		{"DownZero", []string{"down", "0"}},
		{"DownNegative", []string{"down", "-1"}},
		{"DownWithoutN", []string{"down"}},
		{"DownNotANumber", []string{"down", "two"}},
		{"ForceNotANumber", []string{"force", "x"}},
		{"ForceWithoutV", []string{"force"}},
		{"UpWithArgument", []string{"up", "3"}},
		{"VersionWithArgument", []string{"version", "1"}},
		{"UnknownFlag", []string{"--nope", "up"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := tempDB(t)
			code, out, errs := cli(t, append([]string{"migrate", "--db", db}, c.args...)...)
			wantOneLineError(t, "migrate", code, out, errs)
			if _, err := os.Stat(db); err == nil {
				t.Fatalf("a refused command created the database")
			}
		})
	}
}

func TestMigrateOnABrokenDatabaseFailsWithOneLine(t *testing.T) {
	t.Parallel()
	path := tempDB(t)
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "migrate", "--db", path, "up")
	// The logger may say more on stderr; the last line is the one-line reason.
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code == 0 || !strings.HasPrefix(lines[len(lines)-1], "ledger migrate: ") || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestCommandsReadLEDGERVariables sets the environment, so it does not run in parallel.
func TestCommandsReadLEDGERVariables(t *testing.T) {
	path := tempDB(t)
	t.Setenv("LEDGER_DB", path)
	n := latest(t)
	if got := afterApplied(mustCLI(t, "migrate", "up")); got != versionLine(n, n) {
		t.Fatalf("migrate up with LEDGER_DB: %q", got)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("LEDGER_DB was not used: %v", err)
	}
	// A flag wins over the variable.
	other := emptyDB(t)
	if got := mustCLI(t, "migrate", "--db", other, "version"); got != versionLine(0, n) {
		t.Fatalf("migrate version with --db: %q", got)
	}
	out := mustCLI(t, "keys", "create", "--tenant", "env", "--role", "runtime")
	token := lastLine(out)
	if _, err := tenancy.NewStore(openTestDB(t, path)).Authenticate(context.Background(), token); err != nil {
		t.Fatalf("key made through LEDGER_DB does not authenticate there: %v", err)
	}
	// serve reads its variables too: a bad level stops it before it opens anything.
	t.Setenv("LEDGER_LOG_LEVEL", "loud")
	t.Setenv("LEDGER_ADDR", "127.0.0.1:0")
	code, stdout, stderr := cli(t, "serve")
	wantFatalLogLine(t, code, stdout, stderr)
	if !strings.Contains(stderr, "loud") {
		t.Fatalf("serve did not read LEDGER_LOG_LEVEL: %q", stderr)
	}
}

// wantFatalLogLine checks serve's failed start: non-zero exit, nothing on stdout, and one
// JSON log line at level ERROR on stderr, as every other line serve logs.
func wantFatalLogLine(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if code == 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q: want a failure", code, stdout)
	}
	if strings.Count(stderr, "\n") != 1 {
		t.Fatalf("stderr is not one line: %q", stderr)
	}
	var entry struct {
		Level, Msg, Error string
	}
	if err := json.Unmarshal([]byte(stderr), &entry); err != nil || entry.Level != "ERROR" || entry.Error == "" {
		t.Fatalf("stderr is not a JSON log line at level ERROR with the error (%v): %q", err, stderr)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

var tokenPattern = regexp.MustCompile(`^ldg_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$`)

// migratedDB is a temporary database brought up to date by ledger migrate up: keys and
// tenants refuse a database that does not exist.
func migratedDB(t *testing.T) string {
	t.Helper()
	path := tempDB(t)
	mustCLI(t, "migrate", "--db", path, "up")
	return path
}

func TestKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := migratedDB(t)

	out := mustCLI(t, "keys", "create", "--db", path, "--tenant", "acme", "--role", "admin")
	admin := lastLine(out)
	if !tokenPattern.MatchString(admin) {
		t.Fatalf("last stdout line %q is not a key alone; stdout:\n%s", admin, out)
	}
	runtime := lastLine(mustCLI(t, "keys", "create", "--db", path, "--tenant", "acme", "--role", "runtime"))
	other := lastLine(mustCLI(t, "keys", "create", "--db", path, "--tenant", "other", "--role", "admin"))

	store := tenancy.NewStore(openTestDB(t, path))
	for _, c := range []struct{ token, tenant, role string }{
		{admin, "acme", tenancy.RoleAdmin}, {runtime, "acme", tenancy.RoleRuntime}, {other, "other", tenancy.RoleAdmin},
	} {
		p, err := store.Authenticate(ctx, c.token)
		if err != nil || p.TenantID != c.tenant || p.Role != c.role {
			t.Fatalf("key of %s/%s authenticates as %+v, %v", c.tenant, c.role, p, err)
		}
	}

	list := mustCLI(t, "keys", "list", "--db", path)
	rows := strings.Split(strings.TrimSpace(list), "\n")
	if len(rows) != 4 || !strings.HasPrefix(rows[0], "KEY ID") {
		t.Fatalf("keys list:\n%s", list)
	}
	for _, token := range []string{admin, runtime, other} {
		if !strings.Contains(list, keyID(token)) {
			t.Fatalf("keys list lacks %s:\n%s", keyID(token), list)
		}
		if strings.Contains(list, token) {
			t.Fatalf("keys list shows a secret:\n%s", list)
		}
	}
	acme := mustCLI(t, "keys", "list", "--db", path, "--tenant", "acme")
	if rows := strings.Split(strings.TrimSpace(acme), "\n"); len(rows) != 3 || strings.Contains(acme, keyID(other)) {
		t.Fatalf("keys list --tenant acme:\n%s", acme)
	}

	if got := mustCLI(t, "keys", "revoke", "--db", path, keyID(runtime)); got != "revoked "+keyID(runtime)+"\n" {
		t.Fatalf("keys revoke printed %q", got)
	}
	if _, err := store.Authenticate(ctx, runtime); !apperr.Is(err, api.CodeUnauthorized) {
		t.Fatalf("revoked key authenticates: %v", err)
	}
	if _, err := store.Authenticate(ctx, admin); err != nil {
		t.Fatalf("revoking one key revoked another: %v", err)
	}
	for _, row := range strings.Split(mustCLI(t, "keys", "list", "--db", path, "--tenant", "acme"), "\n") {
		fields := strings.Fields(row)
		if len(fields) == 5 && fields[0] == keyID(runtime) && fields[4] == "-" {
			t.Fatalf("revoked key listed as not revoked: %q", row)
		}
		if len(fields) == 5 && fields[0] == keyID(admin) && fields[4] != "-" {
			t.Fatalf("live key listed as revoked: %q", row)
		}
	}
	// Revoking again is not an error.
	mustCLI(t, "keys", "revoke", "--db", path, keyID(runtime))

	bad := []struct {
		name string
		args []string
	}{
		{"BadRole", []string{"create", "--db", path, "--tenant", "acme", "--role", "owner"}},
		{"NoRole", []string{"create", "--db", path, "--tenant", "acme"}},
		{"NoTenant", []string{"create", "--db", path, "--role", "admin"}},
		{"BadTenant", []string{"create", "--db", path, "--tenant", "a b", "--role", "admin"}},
		{"RevokeUnknown", []string{"revoke", "--db", path, "0123456789abcdef"}},
		{"RevokeWithoutID", []string{"revoke", "--db", path}},
		{"UnknownVerb", []string{"rotate", "--db", path}},
		{"UnknownFlag", []string{"create", "--db", path, "--tenant", "acme", "--role", "admin", "--colour", "red"}},
		{"NoVerb", nil},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := cli(t, append([]string{"keys"}, c.args...)...)
			wantOneLineError(t, "keys", code, out, errs)
		})
	}
	keys, err := store.ListKeys(ctx, "")
	if err != nil || len(keys) != 3 {
		t.Fatalf("refused commands changed the keys: %d keys, %v", len(keys), err)
	}
}

func keyID(token string) string { return strings.Split(token, "_")[1] }

func TestTenantsSet(t *testing.T) {
	t.Parallel()
	path := migratedDB(t)
	if got := mustCLI(t, "tenants", "set", "--db", path, "--tenant", "acme", "--max-leased", "5"); !strings.Contains(got, "acme") {
		t.Fatalf("tenants set printed %q", got)
	}
	store := tenancy.NewStore(openTestDB(t, path))
	ten, err := store.Tenant(context.Background(), "acme")
	if err != nil || ten.MaxLeasedRuns != 5 {
		t.Fatalf("tenant after set: %+v %v", ten, err)
	}
	mustCLI(t, "tenants", "set", "--db", path, "--tenant", "acme", "--max-leased", "0")
	if ten, err := store.Tenant(context.Background(), "acme"); err != nil || ten.MaxLeasedRuns != 0 {
		t.Fatalf("tenant after set 0: %+v %v", ten, err)
	}
	for _, args := range [][]string{
		{"set", "--db", path, "--tenant", "acme", "--max-leased", "-1"},
		{"set", "--db", path, "--tenant", "acme"},
		{"set", "--db", path, "--max-leased", "3"},
		{"set", "--db", path, "--tenant", "no/slash", "--max-leased", "3"},
		{"set", "--db", path, "--tenant", "acme", "--max-leased", "many"},
		{"get", "--db", path},
		nil,
	} {
		code, out, errs := cli(t, append([]string{"tenants"}, args...)...)
		wantOneLineError(t, "tenants", code, out, errs)
	}
	if ten, err := store.Tenant(context.Background(), "acme"); err != nil || ten.MaxLeasedRuns != 0 {
		t.Fatalf("refused commands changed the tenant: %+v %v", ten, err)
	}
}

var helpLine = regexp.MustCompile(`^  --(\S+)\s+(\S+)\s+(?:default (.*)|(required))$`)

// TestHelpListsFlagsWithVariablesAndDefaults checks --help of every command that takes
// flags: each flag with its LEDGER_* variable and default, exit 0.
func TestHelpListsFlagsWithVariablesAndDefaults(t *testing.T) {
	t.Parallel()
	// DESIGN.md section 8 names these serve settings and their defaults.
	wantServe := map[string]string{
		"addr": ":8080", "db": "./data/ledger.db", "lease-ttl": "30s", "reaper-interval": "5s",
		"band-aging": "10m0s", "max-depth": "8", "max-body": "1048576", "sqlite-sync": "normal",
		"migrate": "false",
	}
	cases := []struct {
		args []string
		want map[string]string
	}{
		{[]string{"serve", "--help"}, wantServe},
		{[]string{"serve", "-h"}, wantServe},
		{[]string{"migrate", "--help"}, map[string]string{"db": "./data/ledger.db", "sqlite-sync": "normal"}},
		{[]string{"keys", "create", "--help"}, map[string]string{"db": "./data/ledger.db", "tenant": "required", "role": "required"}},
		{[]string{"keys", "list", "--help"}, map[string]string{"db": "./data/ledger.db", "tenant": `""`}},
		{[]string{"keys", "revoke", "--help"}, map[string]string{"db": "./data/ledger.db"}},
		{[]string{"tenants", "set", "--help"}, map[string]string{"db": "./data/ledger.db", "tenant": "required", "max-leased": "required"}},
		{[]string{"tenants", "list", "--help"}, map[string]string{"db": "./data/ledger.db"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, "_"), func(t *testing.T) {
			t.Parallel()
			code, out, errs := cli(t, c.args...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if n := strings.Count(out, "usage: "); n != 1 {
				t.Errorf("the help has %d usage lines, want 1:\n%s", n, out)
			}
			seen := map[string]string{}
			lines := strings.Split(out, "\n")
			for i, l := range lines {
				m := helpLine.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				flag, env, def := m[1], m[2], m[3]+m[4]
				// Only the service's settings (serve's flags) read a variable.
				wantEnv := "-"
				if _, shared := wantServe[flag]; shared || c.args[0] == "serve" || flag == "sqlite-busy-timeout" {
					wantEnv = "LEDGER_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
				}
				if env != wantEnv {
					t.Errorf("--%s lists variable %s, want %s", flag, env, wantEnv)
				}
				if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) == "" {
					t.Errorf("--%s has no description", flag)
				}
				seen[flag] = def
			}
			for flag, def := range c.want {
				got, ok := seen[flag]
				if !ok {
					t.Errorf("--%s is not listed:\n%s", flag, out)
				} else if got != def {
					t.Errorf("--%s default %q, want %q", flag, got, def)
				}
			}
		})
	}
}

func TestTopLevelUsage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args     []string
		code     int
		inStdout bool
	}{
		{nil, 2, true},
		{[]string{"help"}, 0, true},
		{[]string{"--help"}, 0, true},
		{[]string{"frobnicate"}, 2, false},
	}
	for _, c := range cases {
		code, out, errs := cli(t, c.args...)
		where := errs
		if c.inStdout {
			where = out
		}
		if code != c.code || !strings.Contains(where, "usage: ledger") {
			t.Fatalf("ledger %v: exit %d (want %d), stdout %q, stderr %q", c.args, code, c.code, out, errs)
		}
		for _, cmd := range []string{"serve", "migrate", "keys", "tenants"} {
			if !strings.Contains(where, cmd) {
				t.Fatalf("usage does not name %s: %q", cmd, where)
			}
		}
	}
}

// TestVerbUsage: `ledger keys --help` and `ledger tenants --help` list the verbs on stdout
// and exit 0, as the top-level usage promises for every command; they name no database.
func TestVerbUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd   string
		verbs []string
	}{
		{"keys", []string{"create --tenant T --role runtime|admin", "list [--tenant T]", "revoke KEYID"}},
		{"tenants", []string{"set --tenant T --max-leased N", "list"}},
	} {
		for _, help := range []string{"--help", "-h", "help"} {
			code, out, errs := cli(t, c.cmd, help)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: ledger "+c.cmd+" <verb>") {
				t.Fatalf("ledger %s %s: exit %d, stdout %q, stderr %q", c.cmd, help, code, out, errs)
			}
			for _, v := range c.verbs {
				if !strings.Contains(out, "  "+v+" ") {
					t.Errorf("ledger %s %s does not show %q:\n%s", c.cmd, help, v, out)
				}
			}
		}
		// Without a verb the answer is one line that says where the verbs are listed.
		code, out, errs := cli(t, c.cmd)
		wantOneLineError(t, c.cmd, code, out, errs)
		if !strings.Contains(errs, "ledger "+c.cmd+" --help") {
			t.Errorf("ledger %s without a verb: %q does not point at --help", c.cmd, errs)
		}
	}
}

var readmeRow = regexp.MustCompile("^\\| `--([^`]+)` \\| `([^`]+)` \\| `([^`]*)` \\|")

// TestREADMEConfigurationMatchesHelp keeps the configuration table of docs/operators.md equal to
// `ledger serve --help`: every flag, its variable and its default, and nothing else.
func TestREADMEConfigurationMatchesHelp(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "operators.md"))
	if err != nil {
		t.Fatalf("read docs/operators.md: %v", err)
	}
	documented := map[string]string{}
	for _, l := range strings.Split(string(readme), "\n") {
		if m := readmeRow.FindStringSubmatch(l); m != nil {
			documented[m[1]] = m[2] + " " + m[3]
		}
	}
	code, out, _ := cli(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	help := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if m := helpLine.FindStringSubmatch(l); m != nil {
			help[m[1]] = m[2] + " " + m[3]
		}
	}
	if len(help) == 0 {
		t.Fatal("serve --help lists no flags")
	}
	for flag, want := range help {
		if got, ok := documented[flag]; !ok {
			t.Errorf("docs/operators.md does not document --%s (%s)", flag, want)
		} else if got != want {
			t.Errorf("docs/operators.md documents --%s as %q, serve --help says %q", flag, got, want)
		}
	}
	for flag := range documented {
		if _, ok := help[flag]; !ok {
			t.Errorf("docs/operators.md documents --%s, which serve does not have", flag)
		}
	}
}

// TestKeysAndTenantsRefuseAMissingDatabase: an operator command never creates the embedded
// database; it names the path it would have used and how to choose one.
// TestKeysAndTenantsRefuseAMissingDatabase: every command but serve and migrate up refuses
// a database that does not exist, naming the path and --db, and creates nothing.
func TestKeysAndTenantsRefuseAMissingDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "ledger.db")
	for _, args := range [][]string{
		{"keys", "create", "--db", path, "--tenant", "acme", "--role", "admin"},
		{"keys", "list", "--db", path},
		{"keys", "revoke", "--db", path, "0123456789abcdef"},
		{"tenants", "set", "--db", path, "--tenant", "acme", "--max-leased", "3"},
		{"tenants", "list", "--db", "sqlite://" + path},
		{"purge", "--db", path},
		{"purge", "--db", path, "--dry-run"},
		{"migrate", "--db", path, "version"},
		{"migrate", "--db", path, "down", "1"},
		{"migrate", "--db", path, "force", "3"},
	} {
		code, out, errs := cli(t, args...)
		wantOneLineError(t, args[0], code, out, errs)
		if !strings.Contains(errs, path) || !strings.Contains(errs, "--db") {
			t.Errorf("ledger %s: %q does not name the path and --db", strings.Join(args, " "), errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Fatalf("a refused command created the database's directory: %v", err)
	}
}

// TestOperatorCommandsNameTheDefaultPath runs where ./data does not exist; it changes the
// working directory, so it does not run in parallel.
func TestOperatorCommandsNameTheDefaultPath(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"tenants", "list"}, {"keys", "list"}, {"purge"}, {"migrate", "version"}} {
		code, out, errs := cli(t, args...)
		wantOneLineError(t, args[0], code, out, errs)
		if !strings.Contains(errs, defaultDB) {
			t.Fatalf("stderr %q does not name %s", errs, defaultDB)
		}
	}
	if _, err := os.Stat("data"); !os.IsNotExist(err) {
		t.Fatalf("an operator command created ./data: %v", err)
	}
}

// TestTenantsList shows every tenant with its budget and the runs it holds leased.
func TestTenantsList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := migratedDB(t)
	mustCLI(t, "tenants", "set", "--db", path, "--tenant", "acme", "--max-leased", "7")
	mustCLI(t, "tenants", "set", "--db", path, "--tenant", "zeta", "--max-leased", "0")
	mustCLI(t, "keys", "create", "--db", path, "--tenant", "beta", "--role", "admin")

	db := openTestDB(t, path)
	if _, _, err := projects.NewStore(db).Put(ctx, "acme", "p1", projects.Change{}); err != nil {
		t.Fatal(err)
	}
	svc := runs.NewService(db, runs.DefaultConfig(), nil)
	acme := runs.Caller{TenantID: "acme", KeyID: "k"}
	for i := range 3 {
		spec := runs.Spec{ProjectID: "p1", Subject: fmt.Sprintf("s%d", i), Kind: "k", AgentID: "a", StepID: uuid.New(), SnapshotID: uuid.New(), MaxAttempts: 3, MaxCorrections: 3}
		if _, _, err := svc.Enqueue(ctx, acme, spec); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // two leased, one still queued
		if _, err := svc.Claim(ctx, acme, runs.ClaimRequest{HolderID: "h", ReleaseID: "r", AdapterVersion: "1", ModelProfileID: "m"}); err != nil {
			t.Fatal(err)
		}
	}

	out := mustCLI(t, "tenants", "list", "--db", path)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 4 || strings.Join(strings.Fields(rows[0]), " ") != "TENANT MAX LEASED LEASED CREATED" {
		t.Fatalf("tenants list:\n%s", out)
	}
	want := [][]string{{"acme", "7", "2"}, {"beta", strconv.Itoa(tenancy.DefaultMaxLeasedRuns), "0"}, {"zeta", "0", "0"}}
	for i, w := range want {
		f := strings.Fields(rows[i+1])
		if len(f) != 4 || f[0] != w[0] || f[1] != w[1] || f[2] != w[2] {
			t.Fatalf("row %d %q, want %v", i+1, rows[i+1], w)
		}
		if _, err := time.Parse(time.RFC3339, f[3]); err != nil {
			t.Fatalf("row %d created %q: %v", i+1, f[3], err)
		}
	}
	code, stdout, errs := cli(t, "tenants", "list", "--db", path, "extra")
	wantOneLineError(t, "tenants", code, stdout, errs)
}

// TestServeRefusesLimitsOneTenantCouldFill: serve refuses, before opening anything, a
// tenant share of requests in flight that would let one tenant fill the replica, and bad
// limit values; each with a one-line reason naming the flag.
func TestServeRefusesLimitsOneTenantCouldFill(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"TenantShareAtTheServerCap", []string{"--max-inflight", "8"}, "--tenant-max-inflight"},
		{"TenantShareEqualsTheServerCap", []string{"--max-inflight", "8", "--tenant-max-inflight", "8"}, "--tenant-max-inflight"},
		{"NoTenantShareUnderAServerCap", []string{"--tenant-max-inflight", "0"}, "--tenant-max-inflight"},
		{"NegativeLongPolls", []string{"--tenant-max-long-polls", "-1"}, "negative"},
		{"NoFailureWindow", []string{"--auth-failure-window", "0s"}, "--auth-failure-window"},
		{"NegativeKeyCacheTTL", []string{"--key-cache-ttl", "-1s"}, "--key-cache-ttl"},
		{"NegativeLogFlush", []string{"--log-flush", "-1s"}, "--log-flush"},
		{"NegativeGCPercent", []string{"--gc-percent", "-1"}, "--gc-percent"},
		{"BadTrustedProxy", []string{"--trusted-proxies", "10.0.0.0/8,not-an-address"}, "--trusted-proxies"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "ledger.db")
			code, _, errs := cli(t, append([]string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, c.args...)...)
			if code != 1 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q: want exit 1 with one line naming %s", code, errs, c.want)
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Fatalf("serve opened the database before refusing its flags: %v", err)
			}
		})
	}
}

// migrate up prints each migration it applies with its declared kind, and a breaking one
// with why (issue 30 item 8).
func TestMigrateUpPrintsEachKind(t *testing.T) {
	t.Parallel()
	path := tempDB(t)
	db := openTestDB(t, path)
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	err = mg.Goto(10)
	mg.Close()
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, "migrate", "up", "--db", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "applied 11 write_path: breaking (drops the Projects lease counters") ||
		lines[2] != "applied 13 maintenance_role: additive" {
		t.Fatalf("migrate up from 10 printed %q", out)
	}
}

// keys revoke never repeats a whole key (a secret) pasted for an id, in its answer or its
// errors, and says when a key was already revoked (issue 30 item 10).
func TestKeysRevokeNeverEchoesASecret(t *testing.T) {
	t.Parallel()
	path := migratedDB(t)
	token := lastLine(mustCLI(t, "keys", "create", "--db", path, "--tenant", "acme", "--role", "admin"))
	secret := strings.SplitN(token, "_", 3)[2]
	id := keyID(token)

	code, out, errOut := cli(t, "keys", "revoke", "--db", path, token)
	if code != 0 || strings.Contains(out+errOut, secret) || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("revoke <whole key>: exit %d, stdout %q, stderr %q; want it revoked by id, the secret never shown", code, out, errOut)
	}
	code, out, errOut = cli(t, "keys", "revoke", "--db", path, id)
	if code != 0 || !strings.Contains(out, id+" was already revoked at ") || strings.Contains(out, "\nrevoked ") {
		t.Fatalf("second revoke: exit %d, stdout %q, stderr %q; want it to say already revoked", code, out, errOut)
	}
	// Not shaped like a key or an id: refused without repeating it.
	code, out, errOut = cli(t, "keys", "revoke", "--db", path, "ldg_"+secret)
	if code == 0 || strings.Contains(out+errOut, secret) {
		t.Fatalf("revoke of a malformed key: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Only migrate up and serve change the schema: keys, tenants and purge against a database
// whose schema is behind refuse, naming how to migrate, and leave the version as it was
// (issue 30 item 9).
func TestOperatorCommandsNeverMigrate(t *testing.T) {
	t.Parallel()
	path := tempDB(t)
	db := openTestDB(t, path)
	mg, err := migrate.New(db)
	if err != nil {
		t.Fatal(err)
	}
	err = mg.Goto(17)
	mg.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"keys", "list"}, {"keys", "create", "--tenant", "acme", "--role", "admin"}, {"tenants", "list"}, {"purge", "--dry-run"},
	} {
		code, out, errOut := cli(t, append(args, "--db", path)...)
		if code == 0 || !strings.Contains(errOut, "schema is at version 17") || !strings.Contains(errOut, "ledger migrate up") {
			t.Errorf("%v on a schema behind: exit %d, stdout %q, stderr %q; want a refusal naming migrate up", args, code, out, errOut)
		}
		if st, err := migrate.ReadState(context.Background(), db); err != nil || st.Version != 17 {
			t.Fatalf("after %v the schema is at %+v (%v); want 17, untouched", args, st, err)
		}
	}
}

// On a fresh SQLite path `check --for migrate` exits 0 when `migrate up` would create the
// database, so a `set -e` pipeline following docs/operators.md goes on; it creates
// nothing itself (issue 30 item 10).
func TestCheckForMigrateOnAFreshPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new", "ledger.db")
	code, out, errOut := cli(t, "check", "--for", "migrate", "--db", path)
	if code != 0 || !strings.Contains(out, "ledger migrate up` creates it") {
		t.Fatalf("check --for migrate on a fresh path: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("check created %s (%v)", filepath.Dir(path), err)
	}
	mustCLI(t, "migrate", "up", "--db", path)
	// --for serve still wants the database.
	if code, _, _ := cli(t, "check", "--db", filepath.Join(t.TempDir(), "other.db")); code == 0 {
		t.Fatal("check --for serve passed on a path with no database")
	}
}

// serve --db in a directory that does not exist refuses, naming --create-dir, and creates
// nothing (it created the directories, a database and keys).
func TestServeRefusesAMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "typo", "dir")
	code, stdout, stderr := cli(t, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "x.db"))
	if code == 0 || !strings.Contains(stderr, "--create-dir") || strings.Contains(stdout, "key") {
		t.Fatalf("serve in a missing directory: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Fatalf("serve created %s (%v)", filepath.Dir(dir), err)
	}
}
