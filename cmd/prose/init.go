package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
)

// organizationOwner returns a member holding the owner role in org, the
// earliest to join.
func organizationOwner(ctx context.Context, st store.Store, org string) (string, error) {
	p, err := st.ListOrganizationUsers(ctx, store.ListOrganizationUsersRequest{
		OrganizationID: org, Filter: store.Cond{Field: "role", Op: store.OpEq, Value: "owner"},
		OrderBy: store.OrderBy{{Field: "created_time"}}, PageSize: 1,
	})
	if err != nil {
		return "", err
	}
	if len(p.Items) == 0 {
		return "", fmt.Errorf("organization %s has no owner", org)
	}
	return p.Items[0].User.ID, nil
}

// dataFlags are --data and --database, the store of the commands that
// work on a data directory.
type dataFlags struct{ data, database string }

func (d *dataFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&d.data, "data", defaultData, "data directory of the embedded SQLite database (the default of 'prose serve' too)")
	fs.StringVar(&d.database, "database", "", "a postgres://… URL; overrides --data")
}

func (d *dataFlags) target() string { return app.Target(d.data, d.database) }

func newInitCmd() *cobra.Command {
	var d dataFlags
	var expires string
	var o app.InitOptions
	var asJSON, force, login bool
	var address string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create an organization, its owner, a workspace and an API key in a data directory",
		Long: `Create the first organization of a data directory (or PostgreSQL database), its
owner, a first workspace and an API key of level all, and print them; the key is
shown once. 'prose serve' does the same on an empty store by itself.

--json prints one object with the resource names (organization, workspace,
user), the ids the other commands take (organization_id, workspace_id,
user_id) and the api_key.

It prints the 'prose login' line of the key, and the 'prose serve' line that
prints a one-time sign-in link to the web console (--print-login-link), each
with the store and the address when they are not the defaults.

--login also keeps the key, the workspace and the server's address (--address,
default ` + defaultAddress + `, where 'prose serve' listens) in the default
profile, as 'prose login' would: the client commands then need no flags.`,
		Example: `  prose init --data ./prose-data --organization Acme --email me@acme.test
  prose init --login && prose serve
  prose init --json | jq -r .api_key`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr := firstNonEmpty(address, os.Getenv("PROSE_ADDRESS"), defaultAddress)
			r, code := initRun(cmd.Context(), d, o, expires, asJSON, force, addr, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code != 0 || !login {
				return exitCode(code)
			}
			pf, path, err := readProfiles()
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			pf.Profiles["default"] = profile{Address: clientAddress(addr), APIKey: r.APIKey, Workspace: r.Workspace}
			if err := writeProfiles(pf, path); err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if !asJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "The key and workspace are kept in the default profile (%s).\n", path)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	d.register(fs)
	fs.StringVar(&o.Organization, "organization", "My organization", "title of the organization")
	fs.StringVar(&o.Email, "email", "owner@localhost", "e-mail address of the owner")
	fs.StringVar(&o.Workspace, "workspace", "Default", "title of the first workspace")
	fs.StringVar(&expires, "expires", "1y", "lifetime of the API key: "+strings.Join(apikey.ExpirationChoices(), ", "))
	fs.BoolVar(&asJSON, "json", false, `print one JSON object {"organization","workspace","user","api_key","organization_id","workspace_id","user_id"}`)
	fs.BoolVar(&force, "force", false, "create another organization even if the store has one")
	fs.BoolVar(&login, "login", false, "keep the key and workspace in the default profile of the client commands")
	fs.StringVar(&address, "address", "", "the server's address, for --login and the printed command lines (env PROSE_ADDRESS; default "+defaultAddress+")")
	return cmd
}

// noArgs refuses positional arguments as a usage mistake.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return unknownCommand(cmd, args[0])
		}
		return usageErr("unexpected argument %q", args[0])
	}
	return nil
}

// exitCode turns a command's exit code into RunE's error.
func exitCode(code int) error {
	if code == 0 {
		return nil
	}
	return exit(code)
}

// initCmd runs `prose init` with args (tests call it).
func initCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runArgs(ctx, "init", args, stdin, stdout, stderr)
}

func initRun(ctx context.Context, df dataFlags, o app.InitOptions, expires string, asJSON, force bool, address string, stdout, stderr io.Writer) (app.InitResult, int) {
	d, err := apikey.ParseExpiration(expires)
	if err != nil {
		fmt.Fprintf(stderr, "init: --expires: %v\n", err)
		return app.InitResult{}, 2
	}
	o.Expires = d
	st, err := app.OpenStore(ctx, df.data, df.database)
	if err != nil {
		fmt.Fprintf(stderr, "init: %v\n", err)
		return app.InitResult{}, 1
	}
	defer func() { _ = st.Close() }()
	if !force {
		ids, err := app.OrganizationIDs(ctx, st, 1)
		if err != nil {
			fmt.Fprintf(stderr, "init: %v\n", err)
			return app.InitResult{}, 1
		}
		if len(ids) > 0 {
			fmt.Fprintf(stderr, "init: the store already has organization %s; for a new key: prose keys create --name NAME%s (or init --force)\n", ids[0], dataArgs(df.data, df.database))
			return app.InitResult{}, 1
		}
	}
	r, err := app.Bootstrap(ctx, st, o)
	if err != nil {
		fmt.Fprintf(stderr, "init: %v\n", err)
		return app.InitResult{}, 1
	}
	app.PrintInit(stdout, r, asJSON, app.LoginHint(clientAddress(address), r))
	if !asJSON {
		fmt.Fprintf(stdout, "Sign in to the web console with the link that prints: %s\n", serveHint(df, address))
	}
	return r, 0
}

// serveHint is the `prose serve` command line of the store df on address
// (when it is a host:port to listen on) that prints a sign-in link.
func serveHint(df dataFlags, address string) string {
	addr := ""
	if address != defaultAddress && !strings.Contains(address, "://") {
		addr = " --addr " + shellWord(address)
	}
	return "prose serve" + dataArgs(df.data, df.database) + addr + " --print-login-link"
}
