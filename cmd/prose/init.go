package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/proserun/prose/names"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/backend"
)

// target is the store a command works on: --database when set, else --data.
func target(data, database string) string {
	if database != "" {
		return database
	}
	return data
}

// openStore opens and migrates the store at --data / --database.
func openStore(ctx context.Context, data, database string, opts ...store.Option) (store.Store, error) {
	return backend.Open(ctx, target(data, database), opts...)
}

// organizationIDs lists up to limit organization ids, oldest first.
func organizationIDs(ctx context.Context, st store.Store, limit int) ([]string, error) {
	p, err := st.ListOrganizations(ctx, limit, "")
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(p.Items))
	for i, o := range p.Items {
		ids[i] = o.ID
	}
	return ids, nil
}

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

// initResult is what init prints: resource names, the ids the next
// commands take, and the key's value.
type initResult struct {
	Organization   string `json:"organization"`
	Workspace      string `json:"workspace"`
	User           string `json:"user"`
	APIKey         string `json:"api_key"`
	OrganizationID string `json:"organization_id"`
	WorkspaceID    string `json:"workspace_id"`
	UserID         string `json:"user_id"`

	orgID, workspaceID, userID string
}

type initOptions struct {
	organization, email, workspace string
	expires                        time.Duration
}

func (o initOptions) withDefaults() initOptions {
	if o.organization == "" {
		o.organization = "My organization"
	}
	if o.email == "" {
		o.email = "owner@localhost"
	}
	if o.workspace == "" {
		o.workspace = "Default"
	}
	if o.expires == 0 {
		o.expires = 365 * 24 * time.Hour
	}
	return o
}

// bootstrap creates an organization, its owner (reusing the user with that
// e-mail if there is one), a first workspace the owner administers, and an
// API key of level All for every workspace.
func bootstrap(ctx context.Context, st store.Store, o initOptions) (initResult, error) {
	o = o.withDefaults()
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: o.organization})
	if err != nil {
		return initResult{}, fmt.Errorf("create organization: %w", err)
	}
	display, _, _ := strings.Cut(o.email, "@")
	u, err := st.CreateUser(ctx, store.User{DisplayName: display, Email: o.email})
	if errors.Is(err, store.ErrAlreadyExists) {
		u, err = st.GetUserByEmail(ctx, o.email)
	}
	if err != nil {
		return initResult{}, fmt.Errorf("create user: %w", err)
	}
	if _, err := st.AddOrganizationMember(ctx, org.ID, u.ID, []string{"owner"}); err != nil {
		return initResult{}, fmt.Errorf("add owner: %w", err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: o.workspace, CreatorID: u.ID})
	if err != nil {
		return initResult{}, fmt.Errorf("create workspace: %w", err)
	}
	if _, err := st.AddWorkspaceMember(ctx, org.ID, ws.ID, u.ID, []string{"workspace_admin"}); err != nil {
		return initResult{}, fmt.Errorf("add workspace member: %w", err)
	}
	key, err := server.CreateKey(ctx, st, store.APIKey{
		OrganizationID: org.ID, UserID: u.ID, Name: "initial key",
		AllWorkspaces: true, PermissionLevel: store.PermissionAll,
	}, o.expires, time.Now())
	if err != nil {
		return initResult{}, fmt.Errorf("create API key: %w", err)
	}
	return initResult{
		Organization:   names.Organization(org.ID),
		Workspace:      names.Workspace(org.ID, ws.ID),
		User:           names.User(u.ID),
		APIKey:         key.GetKey(),
		OrganizationID: org.ID, WorkspaceID: ws.ID, UserID: u.ID,
		orgID: org.ID, workspaceID: ws.ID, userID: u.ID,
	}, nil
}

func printInit(w io.Writer, r initResult, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "organization: %s\nworkspace:    %s\nuser:         %s\napi key:      %s\n", r.Organization, r.Workspace, r.User, r.APIKey)
	fmt.Fprintf(w, "Next: prose login --api-key %s --workspace %s\n", r.APIKey, r.Workspace)
	fmt.Fprintln(w, "The API key is shown once; keep it. Use it as Authorization: Bearer <key> (or x-api-key on /v1 and /v2).")
}

// dataFlags are --data and --database, the store of the commands that
// work on a data directory.
type dataFlags struct{ data, database string }

func (d *dataFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&d.data, "data", "./prose-data", "data directory of the embedded SQLite database (the default of 'prose serve' too)")
	fs.StringVar(&d.database, "database", "", "a postgres://… URL; overrides --data")
}

func (d *dataFlags) target() string { return target(d.data, d.database) }

func newInitCmd() *cobra.Command {
	var d dataFlags
	var expires string
	var o initOptions
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

--login also keeps the key, the workspace and the server's address (--address,
default ` + defaultAddress + `, where 'prose serve' listens) in the default
profile, as 'prose login' would: the client commands then need no flags.`,
		Example: `  prose init --data ./prose-data --organization Acme --email me@acme.test
  prose init --login && prose serve
  prose init --json | jq -r .api_key`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, code := initRun(cmd.Context(), d, o, expires, asJSON, force, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code != 0 || !login {
				return exitCode(code)
			}
			pf, path, err := readProfiles()
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			pf.Profiles["default"] = profile{Address: firstNonEmpty(address, os.Getenv("PROSE_ADDRESS"), defaultAddress), APIKey: r.APIKey, Workspace: r.Workspace}
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
	fs.StringVar(&o.organization, "organization", "My organization", "title of the organization")
	fs.StringVar(&o.email, "email", "owner@localhost", "e-mail address of the owner")
	fs.StringVar(&o.workspace, "workspace", "Default", "title of the first workspace")
	fs.StringVar(&expires, "expires", "1y", "lifetime of the API key: "+strings.Join(apikey.ExpirationChoices(), ", "))
	fs.BoolVar(&asJSON, "json", false, `print one JSON object {"organization","workspace","user","api_key","organization_id","workspace_id","user_id"}`)
	fs.BoolVar(&force, "force", false, "create another organization even if the store has one")
	fs.BoolVar(&login, "login", false, "keep the key and workspace in the default profile of the client commands")
	fs.StringVar(&address, "address", "", "with --login: the server's address (env PROSE_ADDRESS; default "+defaultAddress+")")
	return cmd
}

// noArgs refuses positional arguments as a usage mistake.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
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

func initRun(ctx context.Context, df dataFlags, o initOptions, expires string, asJSON, force bool, stdout, stderr io.Writer) (initResult, int) {
	d, err := apikey.ParseExpiration(expires)
	if err != nil {
		fmt.Fprintf(stderr, "init: --expires: %v\n", err)
		return initResult{}, 2
	}
	o.expires = d
	st, err := openStore(ctx, df.data, df.database)
	if err != nil {
		fmt.Fprintf(stderr, "init: %v\n", err)
		return initResult{}, 1
	}
	defer func() { _ = st.Close() }()
	if !force {
		ids, err := organizationIDs(ctx, st, 1)
		if err != nil {
			fmt.Fprintf(stderr, "init: %v\n", err)
			return initResult{}, 1
		}
		if len(ids) > 0 {
			fmt.Fprintf(stderr, "init: the store already has organization %s; use `prose keys create` for a new key, or --force\n", ids[0])
			return initResult{}, 1
		}
	}
	r, err := bootstrap(ctx, st, o)
	if err != nil {
		fmt.Fprintf(stderr, "init: %v\n", err)
		return initResult{}, 1
	}
	printInit(stdout, r, asJSON)
	return r, 0
}
