// Command ledger is the attempt-ledger service: serve, migrate, keys, tenants, purge, openapi, bench.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
	sqlitemigrations "github.com/ledger-dev/ledger/migrations/sqlite"
)

// defaultDB is the embedded default database.
const defaultDB = "./data/ledger.db"

type command struct {
	name, args, summary string
	run                 func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "[flags]", "run the HTTP service", runServe},
		{"migrate", "up | down N | version | force V", "change or show the schema version", runMigrate},
		{"check", "[--db D] [--for serve|migrate] [--json]", "check the database before service: exit 0 ready, 1 a required check failed, 2 cannot check", runCheck},
		{"keys", "create --tenant T --role runtime|admin | list [--tenant T] | revoke KEYID", "manage API keys", runKeys},
		{"tenants", "set --tenant T --max-leased N | list", "set a tenant's budget of leased runs; list tenants with budget and leased runs", runTenants},
		{"backup", "--out FILE [--db D]", "copy the embedded database consistently while it serves, and check the copy", runBackup},
		{"purge", "[--db D] [--batch N] [--dry-run]", "delete ended run chains past their project's retention", runPurge},
		{"openapi", "[--out FILE]", "write the OpenAPI 3.1 document the service serves at /openapi.json", runOpenAPI},
		{"bench", "[flags] | crash [flags]", "load-test the service and report throughput and latency; crash: kill -9 it under load and check nothing acknowledged is lost", runBench},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" || args[0] == "version" {
		printVersion(stdout)
		return 0
	}
	if strings.HasPrefix(args[0], "-") {
		// Global flags before the verb (`ledger --db X migrate version`): every flag belongs
		// to a command, so move them after its name, where the command reads them.
		moved, ok := commandFirst(args)
		if !ok {
			fmt.Fprintf(stderr, "ledger: %q is a flag, and no command follows it: flags go with a command (ledger <command> [flags]; ledger --help lists the commands)\n", args[0])
			return 2
		}
		args = moved
	}
	for _, c := range commands() {
		if c.name == args[0] {
			warnUnknownVariables(stderr)
			err := c.run(ctx, args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			}
			code := 1
			var ec *exitCode
			if errors.As(err, &ec) {
				code = ec.code
				if ec.err == nil {
					return code
				}
			}
			if c.name == "serve" {
				// serve's standard error is a log stream: its last word is a log line too.
				slog.New(slog.NewJSONHandler(stderr, nil)).Error("serve failed", "error", oneLine(err))
				return code
			}
			fmt.Fprintf(stderr, "ledger %s: %s\n", c.name, oneLine(err))
			return code
		}
	}
	fmt.Fprintf(stderr, "ledger: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// warnUnknownVariables logs a warning for each LEDGER_* variable nothing reads: a typo such
// as LEDGER_ADRR would otherwise leave the setting at its default without a word. The
// value is not logged (it may be a secret).
func warnUnknownVariables(stderr io.Writer) {
	unknown, closest := unknownVariables(os.Environ())
	if len(unknown) == 0 {
		return
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	for i, name := range unknown {
		attrs := []any{"variable", name}
		if closest[i] != "" {
			attrs = append(attrs, "did_you_mean", closest[i])
		}
		log.Warn("unknown LEDGER_ variable ignored: only the service's settings are read from the environment (ledger serve --help)", attrs...)
	}
}

// commandFirst moves the first argument that names a command to the front, the flags
// before it after it, or reports that no command is named.
func commandFirst(args []string) ([]string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, c := range commands() {
			if c.name == a {
				out := append([]string{a}, args[:i]...)
				return append(out, args[i+1:]...), true
			}
		}
	}
	return nil, false
}

// printVersion names the build: the release, the module version and VCS commit the Go
// toolchain recorded (debug.ReadBuildInfo), and the schema version this binary needs (its
// newest migration; a newer schema it serves when the newer migrations are additive).
func printVersion(w io.Writer) {
	module, commit := "unknown", "unknown (the build recorded no VCS information: -buildvcs=false, or no git)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		module = bi.Main.Path + " " + bi.Main.Version
		var rev, when, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			commit = rev
			if when != "" {
				commit += " (" + when + ")"
			}
			if modified == "true" {
				commit += " with local changes"
			}
		}
	}
	schema := "unknown"
	if migs, err := migrate.ReadMigrations(sqlitemigrations.FS); err == nil && len(migs) > 0 {
		schema = strconv.FormatUint(uint64(migs[len(migs)-1].Version), 10)
	}
	fmt.Fprintf(w, "ledger %s\nmodule %s\ncommit %s\nschema version %s\n", app.Version, module, commit, schema)
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ledger <command> [arguments]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", c.name, c.summary, c.args)
	}
	fmt.Fprintln(w, "  version  print the version (also ledger --version)")
	fmt.Fprintln(w, "\n'ledger <command> --help' lists a command's flags; flags may come before or after its verb.")
}

// newFlags returns a flag set whose --help lists every flag with its LEDGER_* variable and
// default, under the line "usage: ledger <name> [flags]".
func newFlags(name string, stdout io.Writer) *flag.FlagSet {
	return newFlagsArgs(name, "[flags]", stdout)
}

// required starts the usage text of a flag the command cannot do without: --help says
// "required" where other flags show their default.
const required = "(required) "

// newFlagsArgs is newFlags with the arguments the usage line shows after the command
// ("[flags] up | down N", "--tenant T --role runtime|admin [flags]").
func newFlagsArgs(name, args string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("ledger "+name, flag.ContinueOnError)
	fs.Usage = func() {
		shared := sharedSettings()
		fmt.Fprintf(stdout, "usage: ledger %s %s\n\nflags (a service setting, one with a variable, is also read from it):\n", name, args)
		fs.VisitAll(func(f *flag.Flag) {
			def, usage := "default "+f.DefValue, f.Usage
			if f.DefValue == "" {
				def = `default ""`
			}
			if rest, ok := strings.CutPrefix(usage, required); ok {
				def, usage = "required", rest
			}
			env := "-"
			if shared[f.Name] {
				env = envName(f.Name)
			}
			fmt.Fprintf(stdout, "  --%-24s %-30s %s\n      %s\n", f.Name, env, def, usage)
		})
	}
	return fs
}

func envName(flagName string) string {
	return "LEDGER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// sharedSettings are the flags that read LEDGER_* variables: the service's settings, the
// flags of serve (the database flags among them). A subcommand's own flags (--json, --for,
// --dry-run, --tenant, …) read none, so a variable exported for one command of a pipeline
// never changes another.
func sharedSettings() map[string]bool {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// otherVariables are LEDGER_* variables that other parts of the project read (the SDK's
// examples, the tests, the docs' deploy step), so their presence is not a typo; so are the
// tests' LEDGER_TEST_* variables.
var otherVariables = []string{"LEDGER_URL", "LEDGER_KEY", "LEDGER_ADMIN_KEY", "LEDGER_MIGRATE_DB",
	"LEDGER_CHROMIUM", "LEDGER_SCREENSHOTS", "LEDGER_DBTEST_CHILD"}

// unknownVariables returns the LEDGER_* names of environ that nothing reads, each with the
// known variable it most likely misspells ("" when none is close).
func unknownVariables(environ []string) (unknown, closest []string) {
	known := map[string]bool{}
	var names []string
	for name := range sharedSettings() {
		known[envName(name)] = true
		names = append(names, envName(name))
	}
	for _, v := range otherVariables {
		known[v] = true
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "LEDGER_") || known[name] || strings.HasPrefix(name, "LEDGER_TEST_") {
			continue
		}
		best, bestD := "", 3 // suggest only a name within two edits
		for _, k := range names {
			if d := editDistance(name, k); d < bestD {
				best, bestD = k, d
			}
		}
		unknown, closest = append(unknown, name), append(closest, best)
	}
	return unknown, closest
}

// editDistance is the Levenshtein distance of a and b (ASCII variable names).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// parse reads flags, which may come before or after the verb and other arguments
// (`ledger migrate up --db X` as `ledger migrate --db X up`; after "--" everything is an
// argument), then, for the service's settings not given as flags, their LEDGER_* variables.
// --help prints the usage on stdout; a bad flag prints nothing here, so the caller's
// one-line reason on stderr is the whole answer (the flag package would otherwise print the
// usage on stdout too).
func parse(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			usage()
		}
		if err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
	// Leave the arguments, and only them, in fs.Args().
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	shared := sharedSettings()
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || !shared[f.Name] {
			return
		}
		name := envName(f.Name)
		v := os.Getenv(name)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not %s", name, v, valueFormat(f)))
		}
	})
	return errors.Join(errs...)
}

// valueFormat says what a flag's value must look like, for a refused variable.
func valueFormat(f *flag.Flag) string {
	g, _ := f.Value.(flag.Getter)
	if g == nil {
		return "a valid value"
	}
	switch g.Get().(type) {
	case bool:
		return "true or false"
	case time.Duration:
		return "a duration such as 500ms, 30s, 5m or 1h30m"
	case int, int64, uint, uint64:
		return "a whole number"
	case float64:
		return "a number such as 10 or 2.5"
	}
	return "a valid value"
}

// dbFlags are the flags every command that opens the database shares.
type dbFlags struct {
	dsn  string
	sync string
	busy time.Duration
}

func (d *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.dsn, "db", defaultDB, "database: a SQLite file path (or file: URI), or sqlserver://user:pass@host:1433?database=ledger; any other scheme is refused")
	fs.StringVar(&d.sync, "sqlite-sync", "normal", "SQLite durability: normal (survives a process crash) or full (also an OS crash or power loss)")
	fs.DurationVar(&d.busy, "sqlite-busy-timeout", 5*time.Second, "SQLite: how long a write waits for another process's lock before the request gets 503")
}
