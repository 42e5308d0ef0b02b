package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
)

func newLoginLinkCmd() *cobra.Command {
	var d dataFlags
	var org, email, base, prof string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "login-link",
		Short: "Print a one-time sign-in link to the web console",
		Long: `Print a link that signs a user in to the web console once, within --ttl. It is
made in the data directory (or PostgreSQL database) the server uses, so it
needs no running server and no API key: it is how an operator lets the owner in.
The link points at --url, else the server the client commands use
(PROSE_ADDRESS, else the profile's address).`,
		Example: "  prose login-link\n  prose login-link --email ann@example.test --url https://prose.example.com\n  prose login-link --profile staging",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitCode(loginLinkRun(cmd.Context(), d.data, d.database, org, email, consoleBase(base, prof), ttl, cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
	fs := cmd.Flags()
	d.register(fs)
	fs.StringVar(&org, "organization", "", "organization id (default: the oldest organization)")
	fs.StringVar(&email, "email", "", "the user who signs in (default: an owner of the organization)")
	fs.StringVar(&base, "url", "", "the console's address, as a browser reaches it (default: PROSE_ADDRESS, else the profile's address, else http://"+defaultAddress+")")
	fs.StringVar(&prof, "profile", "", "the profile whose address the link uses (env PROSE_PROFILE; default: the current one)")
	fs.DurationVar(&ttl, "ttl", console.DefaultLinkTTL, "how long the link can be used (once)")
	return cmd
}

// loginLinkCmd runs `prose login-link` with args (tests call it).
func loginLinkCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runArgs(ctx, "login-link", args, stdin, stdout, stderr)
}

func loginLinkRun(ctx context.Context, data, database, org, email, base string, ttl time.Duration, stdout, stderr io.Writer) int {
	if ttl <= 0 || ttl > 7*24*time.Hour {
		fmt.Fprintln(stderr, "login-link: --ttl must be positive and at most 168h")
		return 2
	}
	st, err := app.OpenStore(ctx, data, database)
	if err != nil {
		fmt.Fprintf(stderr, "login-link: %v\n", err)
		return 1
	}
	defer func() { _ = st.Close() }()
	if org == "" {
		ids, err := app.OrganizationIDs(ctx, st, 1)
		if err != nil {
			fmt.Fprintf(stderr, "login-link: %v\n", err)
			return 1
		}
		if len(ids) == 0 {
			fmt.Fprintln(stderr, "login-link: the store has no organization; run `prose serve` or `prose init` first")
			return 1
		}
		org = ids[0]
	}
	var user string
	if email != "" {
		u, err := st.GetUserByEmail(ctx, email)
		if errors.Is(err, store.ErrNotFound) {
			fmt.Fprintf(stderr, "login-link: no user with the email %s\n", email)
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "login-link: %v\n", err)
			return 1
		}
		user = u.ID
	} else if user, err = organizationOwner(ctx, st, org); err != nil {
		fmt.Fprintf(stderr, "login-link: %v\n", err)
		return 1
	}
	token, err := console.CreateLink(ctx, st, org, user, ttl, time.Now())
	if errors.Is(err, store.ErrNotFound) {
		fmt.Fprintf(stderr, "login-link: %s is not a member of organization %s\n", email, org)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "login-link: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, console.LinkURL(strings.TrimSpace(base), token))
	return 0
}

// consoleBase is the address a sign-in link points at: --url, else the
// address the client commands would use (PROSE_ADDRESS, the profile), as
// a URL (http:// when it has no scheme; 0.0.0.0 or :: as localhost).
func consoleBase(flag, prof string) string {
	if strings.TrimSpace(flag) != "" {
		return flag
	}
	f := clientFlags{profile: prof}
	pf, _, _ := readProfiles()
	addr := firstNonEmpty(os.Getenv("PROSE_ADDRESS"), pf.Profiles[f.profileName()].Address, defaultAddress)
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	// A server told to listen on 0.0.0.0 is reached on localhost.
	return reachableURL(addr)
}
