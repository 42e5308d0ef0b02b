package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/proserun/prose/internal/console"
	"github.com/proserun/prose/server/app"
)

// defaultData is --data's default (of serve and the data directory
// commands).
const defaultData = "./prose-data"

// printSignIn prints what serve tells the operator once it listens on
// addr: on a store it initialised, the `prose login` line of the key it
// printed; then, on such a store or with --print-login-link, a one-time
// sign-in link to the console. Both name the server as it is reached:
// --public-url, else the address it listens on.
func printSignIn(ctx context.Context, w io.Writer, a *app.App, cfg app.Config, scheme string, addr net.Addr) error {
	base := strings.TrimRight(cfg.PublicURL, "/")
	login := base
	if base == "" {
		hostPort := reachable(addr.String())
		base, login = scheme+"://"+hostPort, hostPort
		if scheme != "http" {
			login = base
		}
	}
	if a.Bootstrap != nil {
		fmt.Fprintf(w, "Next: %s\n", app.LoginHint(login, *a.Bootstrap))
	} else if !cfg.PrintLoginLink {
		return nil
	}
	org, user, err := linkUser(ctx, a)
	if err != nil {
		return err
	}
	token, err := console.CreateLink(ctx, a.Store, org, user, 0, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Open the web console and sign in with this one-time link (or later: %s):\n%s\n", loginLinkHint(cfg.Data, cfg.Database, base), console.LinkURL(base, token))
	return nil
}

// linkUser is whom serve's link signs in: the owner it made, else the
// owner of the oldest organization (as `prose login-link`).
func linkUser(ctx context.Context, a *app.App) (org, user string, err error) {
	if b := a.Bootstrap; b != nil {
		return b.OrganizationID, b.UserID, nil
	}
	ids, err := app.OrganizationIDs(ctx, a.Store, 1)
	if err != nil {
		return "", "", err
	}
	if len(ids) == 0 {
		return "", "", fmt.Errorf("the store has no organization")
	}
	user, err = organizationOwner(ctx, a.Store, ids[0])
	return ids[0], user, err
}

// reachable is hostPort as a client on this host dials it: a host that
// means "every address" (0.0.0.0, ::, none) is localhost.
func reachable(hostPort string) string {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return hostPort
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("localhost", port)
	}
	return hostPort
}

// clientAddress is an address of the client commands (host:port or a
// URL) as reachable.
func clientAddress(a string) string {
	if strings.Contains(a, "://") {
		return reachableURL(a)
	}
	return reachable(a)
}

// reachableURL is reachable for the host of a URL.
func reachableURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Port() == "" {
		return raw
	}
	u.Host = reachable(u.Host)
	return u.String()
}

// loginLinkHint is the `prose login-link` command line that makes another
// link for the same store and address.
func loginLinkHint(data, database, base string) string {
	return "prose login-link" + dataArgs(data, database) + urlArg(base)
}

// urlArg is login-link's --url for base, unless it is the default.
func urlArg(base string) string {
	if base == "" || base == "http://"+defaultAddress {
		return ""
	}
	return " --url " + shellWord(base)
}

// dataArgs are the --data or --database flags that name the store, unless
// it is the default one. A database URL's password is not printed.
func dataArgs(data, database string) string {
	if database != "" {
		if u, err := url.Parse(database); err == nil {
			database = u.Redacted()
		}
		return " --database " + shellWord(database)
	}
	if data == "" || data == defaultData {
		return ""
	}
	return " --data " + shellWord(data)
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`&;|<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
