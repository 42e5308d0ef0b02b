package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
)

// keysOptions are the flags of `prose keys`.
type keysOptions struct {
	data                      dataFlags
	client                    clientFlags
	org, user                 string
	name, permission, expires string
	workspaces                []string
	asJSON                    bool
}

// useAPI says whether keys works over the API: when no --data or
// --database is given and a key is known (--api-key, --address,
// PROSE_API_KEY, or a profile with a key).
func (o *keysOptions) useAPI(cmd *cobra.Command) bool {
	fl := cmd.Flags()
	if fl.Changed("data") || fl.Changed("database") {
		return false
	}
	if fl.Changed("api-key") || fl.Changed("address") || fl.Changed("profile") || os.Getenv("PROSE_API_KEY") != "" {
		return true
	}
	pf, _, err := readProfiles()
	return err == nil && pf.Profiles[o.client.profileName()].APIKey != ""
}

const keysLong = `Create, list and delete API keys. Over the API (the key of --api-key,
PROSE_API_KEY or 'prose login' acts: it makes keys no wider than itself), or on
a data directory or PostgreSQL database as an operator (--data, --database: no
server and no key needed). Without --data or --database, the API is used when a
key is known, else the data directory ./prose-data.`

func newKeysCmd() *cobra.Command {
	o := &keysOptions{}
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and delete API keys, over the API or on a data directory",
		Long:  keysLong,
		Example: `  prose keys create --name ci --permission read-only --expires 90d
  prose keys list --data ./prose-data
  prose keys delete KEY`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return exit(exitUsage)
		},
	}
	pf := cmd.PersistentFlags()
	o.data.register(pf)
	pf.StringVar(&o.client.address, "address", "", "the server (env PROSE_ADDRESS; default: the profile's)")
	pf.StringVar(&o.client.apiKey, "api-key", "", "the API key that acts (env PROSE_API_KEY; default: the profile's)")
	pf.StringVar(&o.client.profile, "profile", "", "the profile of 'prose login' to use")
	pf.StringVar(&o.org, "organization", "", "on a data directory: the organization id (default: the oldest organization)")
	pf.StringVar(&o.user, "user", "", "on a data directory: the user id the key acts as (default: an owner of the organization)")
	pf.BoolVar(&o.asJSON, "json", false, "print JSON (same as -o json)")
	pf.StringVarP(&o.client.output, "output", "o", "table", "table or json")

	create := &cobra.Command{
		Use:   "create --name NAME",
		Short: "Create an API key and print it once",
		Long: `Create an API key for all workspaces (or those of --workspace), of level all or
read-only, and print its value once: only a hash is kept.`,
		Example: "  prose keys create --name ci --workspace WS --permission read-only --expires 90d\n  prose keys create --name ops --data ./prose-data --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.asJSON = o.asJSON || o.client.output == "json"
			if o.useAPI(cmd) {
				return keysCreateAPI(cmd, o)
			}
			return withKeysStore(cmd, o, func(st store.Store, org string) int {
				return keysCreate(cmd.Context(), st, org, o.user, o.name, o.permission, o.expires, o.workspaces, o.asJSON, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	create.Flags().StringVar(&o.name, "name", "", "descriptive name (required)")
	create.Flags().StringArrayVar(&o.workspaces, "workspace", nil, "workspace id the key may use (repeat; default: all workspaces)")
	create.Flags().StringVar(&o.permission, "permission", "all", "all or read-only")
	create.Flags().StringVar(&o.expires, "expires", "90d", "lifetime: "+strings.Join(apikey.ExpirationChoices(), ", "))

	list := &cobra.Command{
		Use:     "list",
		Short:   "List the API keys of the organization (over the API: yours)",
		Long:    "List the API keys: over the API those of the key's user in its organization, on a data directory every key of the organization.",
		Example: "  prose keys list\n  prose keys list --data ./prose-data -o json",
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.asJSON = o.asJSON || o.client.output == "json"
			if o.useAPI(cmd) {
				return keysListAPI(cmd, o)
			}
			return withKeysStore(cmd, o, func(st store.Store, org string) int {
				return keysList(cmd.Context(), st, org, o.asJSON, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	del := &cobra.Command{
		Use:     "delete KEY",
		Short:   "Delete an API key (by id or name)",
		Long:    "Delete an API key: calls with it are refused at once (by other replicas within milliseconds, by a server on another process's SQLite file within 2 s).",
		Example: "  prose keys delete 3f2a…\n  prose keys delete organizations/o/apiKeys/3f2a… --data ./prose-data",
		Args:    exactArgs(1, "KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.useAPI(cmd) {
				return keysDeleteAPI(cmd, o, args[0])
			}
			return withKeysStore(cmd, o, func(st store.Store, org string) int {
				id := names.ID(args[0])
				if err := st.DeleteAPIKey(cmd.Context(), org, id); err != nil {
					if errors.Is(err, store.ErrNotFound) {
						fmt.Fprintf(cmd.ErrOrStderr(), "keys delete: no key %s in organization %s\n", id, org)
						return exitNotFound
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "keys delete: %v\n", err)
					return 1
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted organizations/%s/apiKeys/%s\n", org, id)
				return 0
			})
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}

// withKeysStore opens the store of the flags and finds the organization.
func withKeysStore(cmd *cobra.Command, o *keysOptions, f func(st store.Store, org string) int) error {
	ctx, stderr := cmd.Context(), cmd.ErrOrStderr()
	st, err := app.OpenStore(ctx, o.data.data, o.data.database)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	defer func() { _ = st.Close() }()
	org := o.org
	if org == "" {
		ids, err := app.OrganizationIDs(ctx, st, 1)
		if err != nil {
			return &exitError{code: exitFailed, err: err}
		}
		if len(ids) == 0 {
			fmt.Fprintln(stderr, "keys: the store has no organization; run `prose init` first")
			return exit(exitFailed)
		}
		org = ids[0]
	}
	return exitCode(f(st, org))
}

// apiExpiration maps --expires to the API's enum.
var apiExpiration = map[string]platformv1.ApiKeyExpiration{
	"7d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_7_DAYS, "30d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_30_DAYS,
	"60d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_60_DAYS, "90d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_90_DAYS,
	"180d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_180_DAYS, "1y": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_1_YEAR,
}

func keysSession(cmd *cobra.Command, o *keysOptions) (*session, error) {
	if o.asJSON {
		o.client.output = "json"
	}
	return o.client.connect(cmd, false)
}

func keysCreateAPI(cmd *cobra.Command, o *keysOptions) error {
	if strings.TrimSpace(o.name) == "" {
		return usageErr("--name is required")
	}
	exp, ok := apiExpiration[o.expires]
	if !ok {
		return usageErr("--expires must be one of %s, not %q", strings.Join(apikey.ExpirationChoices(), ", "), o.expires)
	}
	level := platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_ALL
	switch o.permission {
	case "all":
	case "read-only", "read_only", "readonly":
		level = platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_READ_ONLY
	default:
		return usageErr("--permission must be all or read-only, got %q", o.permission)
	}
	s, err := keysSession(cmd, o)
	if err != nil {
		return err
	}
	defer s.close()
	var ws []string
	for _, w := range o.workspaces {
		ws = append(ws, names.ID(w))
	}
	resp, err := s.c.APIKeys.CreateApiKey(cmd.Context(), &platformv1.CreateApiKeyRequest{OrganizationId: s.org, ApiKey: &platformv1.ApiKey{
		DisplayName: o.name, WorkspaceIds: ws, PermissionLevel: level, Expiration: exp,
	}})
	if err != nil {
		return apiErr(err)
	}
	if s.json {
		return s.emit(map[string]any{"name": resp.GetApiKey().GetName(), "api_key": resp.GetKey()})
	}
	fmt.Fprintf(s.out, "%s\n%s\n", resp.GetApiKey().GetName(), resp.GetKey())
	fmt.Fprintln(cmd.ErrOrStderr(), "The key is shown once; keep it.")
	return nil
}

func keysListAPI(cmd *cobra.Command, o *keysOptions) error {
	s, err := keysSession(cmd, o)
	if err != nil {
		return err
	}
	defer s.close()
	var all []*platformv1.ApiKey
	token := ""
	for {
		resp, err := s.c.APIKeys.ListApiKeys(cmd.Context(), &platformv1.ListApiKeysRequest{OrganizationId: s.org, PageSize: 1000, PageToken: token})
		if err != nil {
			return apiErr(err)
		}
		all = append(all, resp.GetApiKeys()...)
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if s.json {
		return s.printJSON(&platformv1.ListApiKeysResponse{ApiKeys: all})
	}
	rows := make([][]string, 0, len(all))
	for _, k := range all {
		scope := "all workspaces"
		if len(k.GetWorkspaceIds()) > 0 {
			scope = strings.Join(k.GetWorkspaceIds(), ",")
		}
		rows = append(rows, []string{names.ID(k.GetName()), k.GetDisplayName(), k.GetKeyPrefix(), scope,
			strings.ToLower(strings.TrimPrefix(k.GetPermissionLevel().String(), "API_KEY_PERMISSION_LEVEL_")),
			timeText(k.GetCreateTime()), timeText(k.GetExpireTime())})
	}
	s.table([]string{"ID", "NAME", "PREFIX", "SCOPE", "PERMISSION", "CREATED", "EXPIRES"}, rows)
	return nil
}

func keysDeleteAPI(cmd *cobra.Command, o *keysOptions, ref string) error {
	s, err := keysSession(cmd, o)
	if err != nil {
		return err
	}
	defer s.close()
	id := names.ID(ref)
	if _, err := s.c.APIKeys.DeleteApiKey(cmd.Context(), &platformv1.DeleteApiKeyRequest{OrganizationId: s.org, ApiKeyId: id}); err != nil {
		return apiErr(err)
	}
	fmt.Fprintf(s.out, "deleted %s\n", names.APIKey(s.org, id))
	return nil
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
