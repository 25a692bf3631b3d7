// Command ledger is the attempt-ledger service: serve, migrate, keys, tenants, purge, openapi, bench.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/peterbourgon/ff/v3"
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
	for _, c := range commands() {
		if c.name == args[0] {
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
			fmt.Fprintf(stderr, "ledger %s: %s\n", c.name, oneLine(err))
			return code
		}
	}
	fmt.Fprintf(stderr, "ledger: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ledger <command> [arguments]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", c.name, c.summary, c.args)
	}
	fmt.Fprintln(w, "\n'ledger <command> --help' lists a command's flags and LEDGER_* variables.")
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
		fmt.Fprintf(stdout, "usage: ledger %s %s\n\nflags (each also read from its environment variable):\n", name, args)
		fs.VisitAll(func(f *flag.Flag) {
			def, usage := "default "+f.DefValue, f.Usage
			if f.DefValue == "" {
				def = `default ""`
			}
			if rest, ok := strings.CutPrefix(usage, required); ok {
				def, usage = "required", rest
			}
			fmt.Fprintf(stdout, "  --%-24s %-30s %s\n      %s\n", f.Name, envName(f.Name), def, usage)
		})
	}
	return fs
}

func envName(flagName string) string {
	return "LEDGER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse reads flags, then LEDGER_* variables for flags not given. --help prints the usage
// on stdout; a bad flag prints nothing here, so the caller's one-line reason on stderr is the
// whole answer (the flag package would otherwise print the usage on stdout too).
func parse(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := ff.Parse(fs, args, ff.WithEnvVarPrefix("LEDGER"))
	if errors.Is(err, flag.ErrHelp) {
		usage()
	}
	return err
}

// dbFlags are the flags every command that opens the database shares.
type dbFlags struct {
	dsn  string
	sync string
	busy time.Duration
}

func (d *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.dsn, "db", defaultDB, "database: a SQLite file path, or sqlserver://user:pass@host:1433?database=ledger")
	fs.StringVar(&d.sync, "sqlite-sync", "normal", "SQLite durability: normal (survives a process crash) or full (also an OS crash or power loss)")
	fs.DurationVar(&d.busy, "sqlite-busy-timeout", 5*time.Second, "SQLite: how long a write waits for another process's lock before the request gets 503")
}
