package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/ledger-dev/ledger/internal/tenancy"
)

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("say create, list or revoke")
	}
	verb := args[0]
	fs := newFlags("keys "+verb, stdout)
	var d dbFlags
	d.register(fs)
	tenant := fs.String("tenant", "", "tenant id (create: required; list: optional filter)")
	role := fs.String("role", "", "role of the new key: runtime or admin")
	if err := parse(fs, args[1:]); err != nil {
		return err
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
		token, k, err := store.CreateKey(ctx, *tenant, *role)
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
		fmt.Fprintln(tw, "KEY ID\tTENANT\tROLE\tCREATED\tREVOKED")
		for _, k := range keys {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.KeyID, k.TenantID, k.Role, k.CreatedAt.Format(time.RFC3339), revoked)
		}
		return tw.Flush()
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("revoke needs one key id (see ledger keys list)")
		}
		store, closeDB, err := open()
		if err != nil {
			return err
		}
		defer closeDB()
		if err := store.RevokeKey(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(0))
		return nil
	}
	return fmt.Errorf("unknown keys verb %q: say create, list or revoke", verb)
}

func runTenants(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "set" && args[0] != "list") {
		return fmt.Errorf("say set --tenant T --max-leased N, or list")
	}
	verb := args[0]
	fs := newFlags("tenants "+verb, stdout)
	var d dbFlags
	d.register(fs)
	var (
		tenant    *string
		maxLeased *int
	)
	if verb == "set" {
		tenant = fs.String("tenant", "", "tenant id")
		maxLeased = fs.Int("max-leased", -1, "the most runs the tenant may hold leased at once")
	}
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
