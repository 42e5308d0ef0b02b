// Command prose is the one binary of the Prose service: it serves the API,
// runs automations from the command line, administers a data directory, and
// does the daily work against a running server (automations, runs,
// exceptions, keys).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// The exit codes of every command (documented in `prose --help`).
const (
	exitOK           = 0
	exitFailed       = 1 // the operation failed: the server refused it, or the run failed
	exitUsage        = 2 // a mistake on the command line: an unknown flag, a missing argument
	exitAwaiting     = 3 // the run waits for guidance (an exception to resolve)
	exitNotFound     = 4 // what was named does not exist (NOT_FOUND)
	exitAuth         = 5 // no key, an unknown or expired key, or a key without the permission
	exitUnavailable  = 6 // the server cannot be reached
	exitCompleted    = exitOK
	exitCodesSummary = `Exit codes:
  0  success (for a run: it completed)
  1  failure: the server refused the request, or the run failed
  2  usage: an unknown command or flag, a missing or malformed argument
  3  the run waits for guidance: an exception to resolve
  4  not found: the automation, run, exception or key does not exist
  5  not allowed: no API key, an unknown or expired one, or one without the permission
  6  the server cannot be reached`
)

// exitError carries an exit code up to main; its message, when not empty,
// is printed to stderr as "prose <command>: <message>".
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exit returns an error that makes the command exit with code (and print
// nothing more).
func exit(code int) error { return &exitError{code: code} }

// usageErr is a usage mistake (exit 2).
func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, args, stdin, stdout, stderr)
}

// execute runs the command line args (without the program name) and returns
// the exit code.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), ee.err)
			if ee.code == exitUsage {
				fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
			}
		}
		return ee.code
	}
	// Cobra's own errors (unknown command or flag, wrong arguments) are
	// usage mistakes.
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return exitUsage
}

const rootLong = `Prose runs automations written in plain English and keeps a person in the loop
where an automation cannot go on alone.

The one binary serves the API and the web console (prose serve), runs a program
from the command line (prose run), administers a data directory (prose init,
keys, migrate, login-link), and does the daily work against a running server:
automations, runs and exceptions (prose automations|runs|exceptions).

Commands that talk to a server find it and its API key in this order: the
--address and --api-key flags, the PROSE_ADDRESS and PROSE_API_KEY variables,
then the profile 'prose login' wrote (` + "`prose login --help`" + ` says where).

` + exitCodesSummary

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "prose",
		Short: "Serve, run and operate Prose automations",
		Long:  rootLong,
		Example: `  go install ./cmd/prose                   # once, from the repository
  prose serve                              # the API and console on 127.0.0.1:8080
  prose run examples/invoice.prose --inputs '{"invoice_total": 120.50}' --json
  prose login --address 127.0.0.1:8080 --api-key prose_…
  prose exceptions list --filter 'state = PENDING'`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// No arguments: the help, and exit 2 (nothing was asked).
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			_ = cmd.Help()
			return exit(exitUsage)
		},
		Args: cobra.ArbitraryArgs,
	}
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	root.AddGroup(
		&cobra.Group{ID: "server", Title: "Serving and administering a data directory:"},
		&cobra.Group{ID: "author", Title: "Writing and running programs:"},
		&cobra.Group{ID: "client", Title: "Working with a running server:"},
	)
	for _, c := range []*cobra.Command{
		newServeCmd(), newInitCmd(), newMigrateCmd(), newLoginLinkCmd(), newKeysCmd(),
	} {
		c.GroupID = "server"
		root.AddCommand(c)
	}
	root.AddCommand(withGroup("author", newRunCmd()), withGroup("author", newTestCmd()))
	for _, c := range []*cobra.Command{
		newLoginCmd(), newLogoutCmd(), newAuthCmd(), newProfilesCmd(), newAutomationsCmd(), newRunsCmd(), newExceptionsCmd(),
	} {
		c.GroupID = "client"
		root.AddCommand(c)
	}
	root.AddCommand(newVersionCmd())
	root.CompletionOptions.HiddenDefaultCmd = false
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Long = strings.TrimSpace(c.Long) + "\n\nLoad it in the current bash shell with: source <(prose completion bash)"
			if c.Example == "" {
				c.Example = "  prose completion bash > /etc/bash_completion.d/prose\n  prose completion zsh > \"${fpath[1]}/_prose\"\n  prose completion fish > ~/.config/fish/completions/prose.fish"
			}
			// cobra's shell subcommands have no examples: one each, as
			// every other command has.
			for _, sh := range c.Commands() {
				if sh.Example == "" {
					sh.Example = completionExamples[sh.Name()]
				}
			}
		}
	}
	return root
}

// completionExamples are the examples of `prose completion SHELL`.
var completionExamples = map[string]string{
	"bash":       "  source <(prose completion bash)\n  prose completion bash > /etc/bash_completion.d/prose",
	"zsh":        "  prose completion zsh > \"${fpath[1]}/_prose\"",
	"fish":       "  prose completion fish > ~/.config/fish/completions/prose.fish",
	"powershell": "  prose completion powershell | Out-String | Invoke-Expression",
}

func withGroup(id string, c *cobra.Command) *cobra.Command {
	c.GroupID = id
	return c
}

// runArgs executes the command line of one subcommand (tests and the
// per-command wrappers below use it).
func runArgs(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return execute(ctx, append([]string{name}, args...), stdin, stdout, stderr)
}

// unknownCommand is the usage error of a mistyped command, with cobra's
// suggestions (by Levenshtein distance and prefix) when it has some.
func unknownCommand(cmd *cobra.Command, name string) error {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return &exitError{code: exitUsage, err: errors.New(msg)}
}
