package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// cancelReason is the reason a cancel leaves on the stopped run when none
// is given.
const cancelReason = "cancelled from the command line"

func runsCancel(f *clientFlags) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:               "cancel RUN",
		Aliases:           []string{"stop"},
		ValidArgsFunction: completeIDs(f, "run"),
		Short:             "Cancel a run: stop it where it is",
		Long: `Cancel a run: the API's pause, with a reason. An executing run stops at its next
step, a pending or waiting one at once; it stays stopped unless someone runs
'prose runs continue'.`,
		Example: "  prose runs cancel RUN\n  prose runs cancel RUN --reason \"sent twice\"",
		Args:    exactArgs(1, "RUN"),
		RunE: f.clientRun("", nil, func(cmd *cobra.Command, s *session, _ string, args []string) error {
			return s.pauseRun(cmd.Context(), args[0], firstNonEmpty(reason, cancelReason))
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (default: \""+cancelReason+"\")")
	return cmd
}

func automationsDelete(f *clientFlags) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:               "delete AUTOMATION",
		Aliases:           []string{"archive"},
		ValidArgsFunction: completeIDs(f, "automation"),
		Short:             "Delete (archive) an automation",
		Long: `Delete an automation (by title, id or name). It asks first, on the terminal;
--yes skips the question (for scripts). The API's delete is its archive: the
automation is no longer listed (but with 'automations list --deleted') and
cannot be invoked or updated; 'automations get' still shows it, with the time
it was deleted. Its runs stay.`,
		Example: "  prose automations delete Invoices\n  prose automations delete invoices --yes",
		Args:    exactArgs(1, "AUTOMATION"),
		RunE: f.clientRun("automation", nil, func(cmd *cobra.Command, s *session, id string, args []string) error {
			title := s.automationTitle(cmd.Context(), id)
			if !yes {
				fmt.Fprintf(cmd.ErrOrStderr(), "Delete the automation %s (%s)? [y/N] ", title, id)
				line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
					return &exitError{code: exitFailed, err: errors.New("not deleted (pass --yes to delete without the question)")}
				}
			}
			if _, err := s.c.Automations.DeleteAutomation(cmd.Context(), &platformv1.DeleteAutomationRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: id}); err != nil {
				return apiErr(err)
			}
			name := names.Automation(s.org, s.ws, id)
			if s.json {
				return s.emit(map[string]any{"deleted": name})
			}
			fmt.Fprintf(s.out, "deleted %s (%s)\n", title, name)
			return nil
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	return cmd
}

func newAuthCmd() *cobra.Command {
	f := &clientFlags{}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the server, the key and the person the client commands act as",
		Long: `Ask the server who the key of the flags, the environment or the profile is:
its address, the profile, the person, the organization, the workspace, and the
key by its first characters only. Exit 5 when the key is refused, 6 when the
server cannot be reached.`,
		Example: "  prose auth status\n  prose auth status --profile staging -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.connect(cmd, true)
			if err != nil {
				return err
			}
			defer s.close()
			p, err := s.c.Organizations.GetCurrentUserPermissions(cmd.Context(), &platformv1.GetCurrentUserPermissionsRequest{OrganizationId: s.org, WorkspaceId: s.ws})
			if err != nil {
				return apiErr(err)
			}
			addr, key, source := f.where()
			who := s.person(cmd.Context(), p.GetUser())
			var roles []string
			for _, r := range p.GetRoles() {
				roles = append(roles, names.ID(r.GetName()))
			}
			if s.json {
				return s.emit(map[string]any{"address": addr, "profile": f.profileName(), "source": source, "key": keyHint(key),
					"user": p.GetUser(), "person": who, "organization": p.GetOrganization(), "workspace": s.workspaceName(), "roles": roles})
			}
			s.fields("address", addr, "from", source, "profile", f.profileName(), "key", keyHint(key), "signed in as", who+" ("+p.GetUser()+")",
				"organization", p.GetOrganization(), "workspace", s.workspaceName(), "roles", strings.Join(roles, ", "))
			return nil
		},
	}
	logout := &cobra.Command{
		Use:   "logout",
		Short: "Forget a profile's key",
		Long: `Remove a profile (--profile, else the current one) from the profiles file, so
that its key is no longer on this machine. The key itself stays valid on the
server: delete it with 'prose keys delete' to revoke it.`,
		Example: "  prose auth logout\n  prose auth logout --profile staging",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return logoutRun(cmd, f)
		},
	}
	cmd := clientGroup("auth", "Show and forget the sign-in of the client commands",
		`See who the client commands act as (status), and forget a profile's key
(logout). 'prose login' signs in; 'prose profiles' lists and switches profiles.`,
		"  prose auth status\n  prose auth logout --profile staging", f, status, logout)
	return cmd
}

// logoutRun removes the profile of the flags from the profiles file.
func logoutRun(cmd *cobra.Command, f *clientFlags) error {
	pf, path, err := readProfiles()
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	name := f.profileName()
	if _, ok := pf.Profiles[name]; !ok {
		return &exitError{code: exitNotFound, err: fmt.Errorf("no profile %q in %s", name, path)}
	}
	delete(pf.Profiles, name)
	if pf.Current == name {
		pf.Current = ""
	}
	if err := writeProfiles(pf, path); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Logged out: profile %q removed from %s\n", name, path)
	return nil
}

// newLogoutCmd is `prose logout`, the short form of `prose auth logout`.
func newLogoutCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:     "logout",
		Short:   "Forget a profile's key (as 'prose auth logout')",
		Long:    "Remove a profile (--profile, else the current one) from the profiles file. The key stays valid on the server until 'prose keys delete'.",
		Example: "  prose logout\n  prose logout --profile staging",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return logoutRun(cmd, &f)
		},
	}
	cmd.Flags().StringVar(&f.profile, "profile", "", "the profile to forget (env PROSE_PROFILE; default: the current one)")
	return cmd
}

// keyHint shows a key by its first characters, enough to tell keys apart.
func keyHint(key string) string {
	if len(key) <= 12 {
		return strings.Repeat("*", len(key))
	}
	return key[:12] + "…"
}

// where is the address and key the client commands use, and where they
// come from.
func (f *clientFlags) where() (address, key, source string) {
	pf, _, _ := readProfiles()
	prof := pf.Profiles[f.profileName()]
	address = firstNonEmpty(f.address, os.Getenv("PROSE_ADDRESS"), prof.Address, defaultAddress)
	key = firstNonEmpty(f.apiKey, os.Getenv("PROSE_API_KEY"), prof.APIKey)
	switch {
	case f.apiKey != "":
		source = "the --api-key flag"
	case os.Getenv("PROSE_API_KEY") != "":
		source = "PROSE_API_KEY"
	default:
		source = "the profile " + f.profileName()
	}
	return address, key, source
}

func newProfilesCmd() *cobra.Command {
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the profiles 'prose login' wrote",
		Long:    "List the profiles of the profiles file: name, address, workspace; a * marks the current one (the one commands use without --profile or PROSE_PROFILE).",
		Example: "  prose profiles list",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pf, path, err := readProfiles()
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			cur := currentProfile(pf)
			keys := make([]string, 0, len(pf.Profiles))
			for k := range pf.Profiles {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out := cmd.OutOrStdout()
			if len(keys) == 0 {
				fmt.Fprintf(out, "No profiles in %s; write one with: prose login --address %s --api-key KEY\n", path, firstNonEmpty(os.Getenv("PROSE_ADDRESS"), defaultAddress))
				return nil
			}
			s := &session{out: out}
			rows := make([][]string, 0, len(keys))
			for _, k := range keys {
				mark := ""
				if k == cur {
					mark = "*"
				}
				p := pf.Profiles[k]
				rows = append(rows, []string{mark, k, p.Address, orDash(p.Workspace)})
			}
			s.table([]string{"", "PROFILE", "ADDRESS", "WORKSPACE"}, rows)
			return nil
		},
	}
	use := &cobra.Command{
		Use:     "switch PROFILE",
		Aliases: []string{"use"},
		Short:   "Make a profile the current one",
		Long:    "Make a profile the one the client commands use without --profile or PROSE_PROFILE.",
		Example: "  prose profiles switch staging",
		Args:    exactArgs(1, "PROFILE"),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			pf, _, _ := readProfiles()
			var out []cobra.Completion
			for k := range pf.Profiles {
				out = append(out, k)
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			pf, path, err := readProfiles()
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if _, ok := pf.Profiles[args[0]]; !ok {
				return &exitError{code: exitNotFound, err: fmt.Errorf("no profile %q in %s (write it with: prose login --profile %s --address ADDRESS --api-key KEY)", args[0], path, args[0])}
			}
			pf.Current = args[0]
			if err := writeProfiles(pf, path); err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Now using profile %q (%s)\n", args[0], pf.Profiles[args[0]].Address)
			return nil
		},
	}
	cmd := &cobra.Command{
		Use:     "profiles",
		Short:   "List the profiles and switch between them",
		Long:    "List the profiles 'prose login' wrote and choose the current one.",
		Example: "  prose profiles list\n  prose profiles switch staging",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return exit(exitUsage)
		},
	}
	cmd.AddCommand(list, use)
	return cmd
}

// currentProfile is the profile used without --profile or PROSE_PROFILE.
func currentProfile(pf profileFile) string {
	return firstNonEmpty(pf.Current, "default")
}

func exceptionsArchive(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:               "archive EXCEPTION",
		ValidArgsFunction: completeIDs(f, "exception"),
		Short:             "Archive an exception: its run is abandoned and stops",
		Long:              "Archive a pending exception: nobody will resolve it, and its run goes to stopped. 'exceptions unarchive' makes the run wait for guidance again.",
		Example:           "  prose exceptions archive EXCEPTION",
		Args:              exactArgs(1, "EXCEPTION"),
		RunE: f.clientRun("exception", nil, func(cmd *cobra.Command, s *session, id string, _ []string) error {
			e, err := s.c.Exceptions.ArchiveException(cmd.Context(), &platformv1.ArchiveExceptionRequest{OrganizationId: s.org, WorkspaceId: s.ws, ExceptionId: id})
			if err != nil {
				return apiErr(err)
			}
			return s.showException(e)
		}),
	}
}

func exceptionsUnarchive(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "unarchive EXCEPTION",
		Short:   "Unarchive an exception: its run waits for guidance again",
		Long:    "Put an archived exception back to pending; its run waits for guidance again.",
		Example: "  prose exceptions unarchive EXCEPTION",
		Args:    exactArgs(1, "EXCEPTION"),
		RunE: f.clientRun("exception", nil, func(cmd *cobra.Command, s *session, id string, _ []string) error {
			e, err := s.c.Exceptions.UnarchiveException(cmd.Context(), &platformv1.UnarchiveExceptionRequest{OrganizationId: s.org, WorkspaceId: s.ws, ExceptionId: id})
			if err != nil {
				return apiErr(err)
			}
			return s.showException(e)
		}),
	}
}
