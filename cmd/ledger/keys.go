package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/ledger-dev/ledger/internal/tenancy"
)

// keysUsage is `ledger keys --help`: the verbs, each with what it needs.
const keysUsage = `usage: ledger keys <verb> [flags]

  create --tenant T --role runtime|admin   make a key (and the tenant, if new); the key is shown once,
         [--label L]                       alone on the last line of standard output; the label
                                           (up to 100 characters) says who or what uses it
  list [--tenant T]                        key ids, tenants, roles, labels, when created, last
                                           used (to the minute) and revoked
  revoke KEYID                             revoke a key by its id (the hex after "ldg_"; see list)

Every verb also takes the database flags (--db, --sqlite-sync, --sqlite-busy-timeout);
'ledger keys <verb> --help' lists them with their LEDGER_* variables.
`

// isHelp reports whether arg asks for help instead of naming a verb.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("say create, list or revoke (ledger keys --help)")
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, keysUsage)
		return nil
	}
	verb := args[0]
	var (
		fs     *flag.FlagSet
		tenant = new(string)
		role   = new(string)
		label  = new(string)
	)
	switch verb {
	case "create":
		fs = newFlagsArgs("keys create", "--tenant T --role runtime|admin [flags]", stdout)
		fs.StringVar(tenant, "tenant", "", required+"the key's tenant (created if it does not exist)")
		fs.StringVar(role, "role", "", required+"the key's role: runtime or admin")
		fs.StringVar(label, "label", "", "who or what uses the key (shown by keys list; 1 to 100 characters)")
	case "list":
		fs = newFlagsArgs("keys list", "[--tenant T] [flags]", stdout)
		fs.StringVar(tenant, "tenant", "", "list this tenant's keys only")
	case "revoke":
		fs = newFlagsArgs("keys revoke", "[flags] KEYID", stdout)
	default:
		return fmt.Errorf("unknown keys verb %q: say create, list or revoke (ledger keys --help)", verb)
	}
	var d dbFlags
	d.register(fs)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if verb != "revoke" && fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q (see ledger keys %s --help)", fs.Arg(0), verb)
	}
	open := func() (*tenancy.Store, func(), error) {
		db, err := openExisting(ctx, d, slog.New(slog.NewJSONHandler(stderr, nil)))
		if err != nil {
			return nil, nil, err
		}
		if err := requireCurrentSchema(ctx, db); err != nil {
			db.Close()
			return nil, nil, err
		}
		return tenancy.NewStore(db), func() { db.Close() }, nil
	}
	switch verb {
	case "create":
		if *tenant == "" || *role == "" {
			return fmt.Errorf("create needs --tenant and --role")
		}
		store, closeDB, err := open()
		if err != nil {
			return err
		}
		defer closeDB()
		token, k, err := store.CreateLabeledKey(ctx, *tenant, *role, *label)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created %s key %s for tenant %s; it is shown once:\n", k.Role, k.KeyID, k.TenantID)
		fmt.Fprintln(stdout, token)
		return nil
	case "list":
		store, closeDB, err := open()
		if err != nil {
			return err
		}
		defer closeDB()
		keys, err := store.ListKeys(ctx, *tenant)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY ID\tTENANT\tROLE\tLABEL\tCREATED\tLAST USED\tREVOKED")
		when := func(t *time.Time) string {
			if t == nil {
				return "-"
			}
			return t.UTC().Format(time.RFC3339)
		}
		for _, k := range keys {
			label := string(k.Label)
			if label == "" {
				label = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.KeyID, k.TenantID, k.Role, label,
				k.CreatedAt.UTC().Format(time.RFC3339), when(k.LastUsedAt), when(k.RevokedAt))
		}
		return tw.Flush()
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("revoke needs one key id (see ledger keys list)")
		}
		// The argument may be a whole key (its secret) pasted by mistake: it is never
		// repeated, in an answer or an error; only its id is.
		keyID, whole := fs.Arg(0), false
		if id := tenancy.KeyIDOf(keyID); id != "" {
			keyID, whole = id, true
		} else if !validKeyID(keyID) {
			return fmt.Errorf("revoke needs a key id: the 16 hex digits after \"ldg_\" (see ledger keys list); the argument is not repeated here, as it may be a secret")
		}
		store, closeDB, err := open()
		if err != nil {
			return err
		}
		defer closeDB()
		before, err := store.Revoke(ctx, keyID)
		if err != nil {
			return err
		}
		if whole {
			fmt.Fprintf(stdout, "given a whole key, revoking it by its id %s (the secret is not shown)\n", keyID)
		}
		if before != nil {
			fmt.Fprintf(stdout, "%s was already revoked at %s; nothing changed\n", keyID, before.UTC().Format(time.RFC3339))
			return nil
		}
		fmt.Fprintf(stdout, "revoked %s\n", keyID)
		return nil
	}
	return nil
}

// tenantsUsage is `ledger tenants --help`.
const tenantsUsage = `usage: ledger tenants <verb> [flags]

  set --tenant T --max-leased N   the most runs tenant T may hold leased at once (default 1000;
                                  0 holds every claim); creates the tenant if it does not exist
  list                            every tenant with its budget and the runs it holds leased now

Both verbs also take the database flags (--db, --sqlite-sync, --sqlite-busy-timeout);
'ledger tenants <verb> --help' lists them with their LEDGER_* variables.
`

func runTenants(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, tenantsUsage)
		return nil
	}
	if len(args) == 0 || (args[0] != "set" && args[0] != "list") {
		return fmt.Errorf("say set --tenant T --max-leased N, or list (ledger tenants --help)")
	}
	verb := args[0]
	var (
		fs        = newFlags("tenants list", stdout)
		tenant    *string
		maxLeased *int
	)
	if verb == "set" {
		fs = newFlagsArgs("tenants set", "--tenant T --max-leased N [flags]", stdout)
		tenant = fs.String("tenant", "", required+"tenant id")
		maxLeased = fs.Int("max-leased", -1, required+"the most runs the tenant may hold leased at once (0 or more)")
	}
	var d dbFlags
	d.register(fs)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if verb == "set" && (*tenant == "" || *maxLeased < 0) {
		return fmt.Errorf("set needs --tenant and --max-leased (0 or more)")
	}
	db, err := openExisting(ctx, d, slog.New(slog.NewJSONHandler(stderr, nil)))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := requireCurrentSchema(ctx, db); err != nil {
		return err
	}
	store := tenancy.NewStore(db)
	if verb == "list" {
		ts, err := store.ListTenants(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TENANT\tMAX LEASED\tLEASED\tCREATED")
		for _, t := range ts {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.TenantID, t.MaxLeasedRuns, t.LeasedRuns, t.CreatedAt.UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	}
	if err := store.SetMaxLeased(ctx, *tenant, *maxLeased); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tenant %s may hold %d leased runs\n", *tenant, *maxLeased)
	return nil
}

// validKeyID reports whether s is shaped like a key id (16 lower-case hex digits).
func validKeyID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
