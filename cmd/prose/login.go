package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

func newLoginCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Remember a server, an API key and a workspace for the client commands",
		Long: `Check an API key against a server and keep the server's address, the key and
the workspace in a profile, so that the client commands (automations, runs,
exceptions, keys) need no flags. The profiles are a JSON file readable by you
alone (mode 0600): $PROSE_CONFIG, else prose/profiles.json in your
configuration directory (~/.config on Linux, ~/Library/Application Support on
macOS, %AppData% on Windows). --profile keeps several (default: "default").

Without --workspace, the key's only workspace is kept (a key that can use
several needs --workspace). The TLS files of --ca-file, --cert-file and
--key-file are kept by their absolute paths (not their contents).`,
		Example: `  prose login --api-key prose_… 
  prose login --address https://prose.example.com --api-key "$KEY" --workspace organizations/o/workspaces/w
  prose login --profile staging --address staging:8080 --api-key "$STAGING_KEY"
  prose login --address https://prose.internal:8443 --api-key "$KEY" --ca-file ca.pem --cert-file me.pem --key-file me-key.pem`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.login = true
			s, err := f.connect(cmd, true)
			if err != nil {
				return err
			}
			defer s.close()
			ws, err := s.c.Workspaces.GetWorkspace(cmd.Context(), &platformv1.GetWorkspaceRequest{OrganizationId: s.org, WorkspaceId: s.ws})
			if err != nil {
				return apiErr(err)
			}
			pf, path, err := readProfiles()
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			prof := pf.Profiles[f.profileName()]
			files, err := f.tlsFiles(prof)
			if err != nil {
				return err
			}
			pf.Profiles[f.profileName()] = profile{
				Address:   firstNonEmpty(f.address, envOr("PROSE_ADDRESS"), prof.Address, defaultAddress),
				APIKey:    firstNonEmpty(f.apiKey, envOr("PROSE_API_KEY"), prof.APIKey),
				Workspace: names.Workspace(s.org, s.ws),
				CAFile:    files.ca,
				CertFile:  files.cert,
				KeyFile:   files.key,
			}
			if err := writeProfiles(pf, path); err != nil {
				return &exitError{code: exitFailed, err: fmt.Errorf("write %s: %w", path, err)}
			}
			if s.json {
				return s.printJSON(ws)
			}
			fmt.Fprintf(s.out, "Logged in to %s, workspace %s (%s); profile %q in %s\n",
				pf.Profiles[f.profileName()].Address, ws.GetTitle(), ws.GetName(), f.profileName(), path)
			return nil
		},
	}
	f.register(cmd.Flags())
	return cmd
}

func envOr(name string) string { return os.Getenv(name) }
