package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/proserun/prose/console"
	"github.com/proserun/prose/store"
)

func init() {
	register("login-link", command{summary: "print a one-time sign-in link to the web console", run: loginLinkCmd})
}

func loginLinkCmd(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("login-link", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var data, database, org, email, base string
	var ttl time.Duration
	fs.StringVar(&data, "data", "./prose-data", "data directory of the embedded SQLite database")
	fs.StringVar(&database, "database", "", "a postgres://… URL; overrides --data")
	fs.StringVar(&org, "organization", "", "organization id (default: the oldest organization)")
	fs.StringVar(&email, "email", "", "the user who signs in (default: an owner of the organization)")
	fs.StringVar(&base, "url", "http://127.0.0.1:8080", "the console's address, as a browser reaches it")
	fs.DurationVar(&ttl, "ttl", console.DefaultLinkTTL, "how long the link can be used (once)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "login-link: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if ttl <= 0 || ttl > 7*24*time.Hour {
		fmt.Fprintln(stderr, "login-link: --ttl must be positive and at most 168h")
		return 2
	}
	st, err := openStore(ctx, data, database)
	if err != nil {
		fmt.Fprintf(stderr, "login-link: %v\n", err)
		return 1
	}
	defer func() { _ = st.Close() }()
	if org == "" {
		ids, err := organizationIDs(ctx, st, 1)
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
