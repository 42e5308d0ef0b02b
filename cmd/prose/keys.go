package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/proserun/prose/names"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/store"
)

func init() {
	register("keys", command{summary: "create, list and delete API keys (operators, on the data directory)", run: keysCmd})
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

const keysUsage = `usage:
  prose keys create --name N [--workspace ID]... [--permission all|read-only] [--expires 7d|30d|60d|90d|180d|1y] [--json]
  prose keys list [--json]
  prose keys delete ID
common flags: --data DIR | --database URL, --organization ID (default: the only/oldest one), --user ID (default: its owner)`

func keysCmd(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, keysUsage)
		return 2
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var data, database, org, user, name, permission, expires string
	var workspaces stringList
	var asJSON bool
	fs.StringVar(&data, "data", "./prose-data", "data directory of the embedded SQLite database")
	fs.StringVar(&database, "database", "", "a postgres://… URL; overrides --data")
	fs.StringVar(&org, "organization", "", "organization id (default: the oldest organization)")
	fs.StringVar(&user, "user", "", "user id the key acts as (default: an owner of the organization)")
	switch sub {
	case "create":
		fs.StringVar(&name, "name", "", "descriptive name (required)")
		fs.Var(&workspaces, "workspace", "workspace id the key may use (repeat; default: all workspaces)")
		fs.StringVar(&permission, "permission", "all", "all or read-only")
		fs.StringVar(&expires, "expires", "90d", "lifetime: "+strings.Join(apikey.ExpirationChoices(), ", "))
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "list":
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "delete":
	default:
		fmt.Fprintf(stderr, "keys: unknown subcommand %q\n%s\n", sub, keysUsage)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	st, err := openStore(ctx, data, database)
	if err != nil {
		fmt.Fprintf(stderr, "keys: %v\n", err)
		return 1
	}
	defer func() { _ = st.Close() }()
	if org == "" {
		ids, err := organizationIDs(ctx, st, 1)
		if err != nil {
			fmt.Fprintf(stderr, "keys: %v\n", err)
			return 1
		}
		if len(ids) == 0 {
			fmt.Fprintln(stderr, "keys: the store has no organization; run `prose init` first")
			return 1
		}
		org = ids[0]
	}
	switch sub {
	case "create":
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "keys create: unexpected argument %q\n", fs.Arg(0))
			return 2
		}
		return keysCreate(ctx, st, org, user, name, permission, expires, workspaces, asJSON, stdout, stderr)
	case "list":
		return keysList(ctx, st, org, asJSON, stdout, stderr)
	default:
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "usage: prose keys delete ID")
			return 2
		}
		id := names.ID(fs.Arg(0))
		if err := st.DeleteAPIKey(ctx, org, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				fmt.Fprintf(stderr, "keys delete: no key %s in organization %s\n", id, org)
			} else {
				fmt.Fprintf(stderr, "keys delete: %v\n", err)
			}
			return 1
		}
		fmt.Fprintf(stdout, "deleted organizations/%s/apiKeys/%s\n", org, id)
		return 0
	}
}

func keysCreate(ctx context.Context, st store.Store, org, user, name, permission, expires string, workspaces []string,
	asJSON bool, stdout, stderr io.Writer,
) int {
	if strings.TrimSpace(name) == "" {
		fmt.Fprintln(stderr, "keys create: --name is required")
		return 2
	}
	d, err := apikey.ParseExpiration(expires)
	if err != nil {
		fmt.Fprintf(stderr, "keys create: --expires: %v\n", err)
		return 2
	}
	var level store.PermissionLevel
	switch permission {
	case "all":
		level = store.PermissionAll
	case "read-only", "read_only", "readonly":
		level = store.PermissionReadOnly
	default:
		fmt.Fprintf(stderr, "keys create: --permission must be all or read-only, got %q\n", permission)
		return 2
	}
	if user == "" {
		if user, err = organizationOwner(ctx, st, org); err != nil {
			fmt.Fprintf(stderr, "keys create: %v\n", err)
			return 1
		}
	}
	var ids []string
	for _, w := range workspaces {
		id := names.ID(w)
		if _, err := st.GetWorkspace(ctx, org, id); err != nil {
			fmt.Fprintf(stderr, "keys create: workspace %s: %v\n", id, err)
			return 1
		}
		ids = append(ids, id)
	}
	resp, err := server.CreateKey(ctx, st, store.APIKey{
		OrganizationID: org, UserID: names.ID(user), Name: name,
		AllWorkspaces: len(ids) == 0, WorkspaceIDs: ids, PermissionLevel: level,
	}, d, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "keys create: %v\n", err)
		return 1
	}
	if asJSON {
		b, _ := json.Marshal(map[string]string{"name": resp.GetApiKey().GetName(), "api_key": resp.GetKey()})
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintf(stdout, "%s\n%s\n", resp.GetApiKey().GetName(), resp.GetKey())
	fmt.Fprintln(stderr, "The key is shown once; keep it.")
	return 0
}

func keysList(ctx context.Context, st store.Store, org string, asJSON bool, stdout, stderr io.Writer) int {
	var keys []store.APIKey
	token := ""
	for {
		page, err := st.ListAPIKeys(ctx, org, "", 1000, token)
		if err != nil {
			fmt.Fprintf(stderr, "keys list: %v\n", err)
			return 1
		}
		keys = append(keys, page.Items...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if asJSON {
		type row struct {
			ID, Name, Prefix, User, Scope, Permission, Created, Expires string
		}
		out := []row{}
		for _, k := range keys {
			out = append(out, row{k.ID, k.Name, k.Prefix, k.UserID, scopeText(k), string(k.PermissionLevel), k.CreateTime.Format(time.RFC3339), expiresText(k)})
		}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPE\tPERMISSION\tCREATED\tEXPIRES")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, scopeText(k), k.PermissionLevel,
			k.CreateTime.Format(time.DateOnly), expiresText(k))
	}
	_ = tw.Flush()
	return 0
}

func scopeText(k store.APIKey) string {
	if k.AllWorkspaces {
		return "all workspaces"
	}
	return strings.Join(k.WorkspaceIDs, ",")
}

func expiresText(k store.APIKey) string {
	switch {
	case k.ExpireTime.IsZero():
		return "never"
	case k.Expired(time.Now()):
		return "expired " + k.ExpireTime.Format(time.DateOnly)
	}
	return k.ExpireTime.Format(time.DateOnly)
}
