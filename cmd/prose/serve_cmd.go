package main

import (
	"io"
	"strings"

	"github.com/proserun/prose/server/app"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const serveLong = `Serve the platform API (/api/v1, bearer keys), the older x-api-key API (/v1,
/v2) and the web console, over gRPC and HTTP/JSON on one port, with the engine
that executes runs. The store is the embedded SQLite database of --data, or the
PostgreSQL database of --database (replicas may share one).

On an empty store, serve creates an organization, its owner, a workspace and an
API key, and prints the key once to stderr with the 'prose login' line and a
one-time sign-in link for the console (--print-login-link prints a link on any
store). Both name --public-url, else the address serve listens on (0.0.0.0 as
localhost).
Every flag's default is shown below.

Every flag may also be given by the environment, PROSE_ and the flag's name in
upper case with dashes as underscores (--max-uploads is PROSE_MAX_UPLOADS), or
by a config file, --config F or PROSE_SERVE_CONFIG (YAML, or TOML if it ends in
.toml; the flag names as keys). A flag on the command line wins over the
environment, which wins over the file.`

// newServeCmd is `prose serve`. Its flags are serve.go's (serveFlags, pflag
// as every command's), shown by cobra's help and completion, and parsed by
// serveCmd itself into an app.Config (then the environment and the config
// file, applyEnvAndConfig), so that what serve does with them stays in
// serve.go.
func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the API and the web console (gRPC and HTTP/JSON on one port)",
		Long:  serveLong,
		Example: `  prose serve                                   # 127.0.0.1:8080, SQLite in ./prose-data
  prose serve --addr :8080 --database postgres://prose@db/prose
  prose serve --addr 0.0.0.0:9090 --print-login-link   # a sign-in link to http://localhost:9090
  prose serve --data /var/lib/prose --workers 16`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a == "--" {
					break
				}
				if a == "-h" || a == "--help" || a == "-help" {
					return cmd.Help()
				}
			}
			// A mistake on the command line is told as every command tells
			// it (serveCmd's own flag set would print all its flags).
			check := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			check.SetOutput(io.Discard)
			serveFlags(check, &app.Config{})
			if err := check.Parse(args); err != nil {
				return usageErr("%v", err)
			}
			if check.NArg() > 0 {
				return usageErr("unexpected argument %q", check.Arg(0))
			}
			return exitCode(serveCmd(cmd.Context(), args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
		ValidArgsFunction: func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var out []string
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if n := "--" + f.Name; strings.HasPrefix(n, toComplete) {
					out = append(out, n+"\t"+firstLine(f.Usage))
				}
			})
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
	// The same flags for cobra's help and completion (serveCmd parses its
	// own set: what serve does with them stays in serve.go).
	serveFlags(cmd.Flags(), &app.Config{})
	return cmd
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, ".;\n("); i > 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}
