// Command prose is the one binary of the Prose service: it serves the API,
// runs automations from the command line, and administers a data directory.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand of the binary. Each lives in a file of its own and
// registers itself in init.
type command struct {
	summary string
	// run executes the command with its arguments (the subcommand name
	// removed) and returns the process exit code.
	run func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("duplicate command " + name)
	}
	commands[name] = c
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: prose <command> [flags]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "prose: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, args[1:], stdin, stdout, stderr)
}
