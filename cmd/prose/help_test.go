package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var (
	flagNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	// A usage may start with an acronym or a name in capitals (PEM, HTTP, URL, AIP-160, OTLP, API).
	flagUsageAcronym = regexp.MustCompile(`^[A-Z][A-Z0-9-]+\b`)
)

// TestHelpConsistency walks every command of the binary: each has a short
// line in one style (a capital, no final period), a long description or
// examples, examples that are prose command lines, and `--help` that exits
// 0 printing its usage.
func TestHelpConsistency(t *testing.T) {
	var walk func(c *cobra.Command)
	var paths [][]string
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		paths = append(paths, path)
		t.Run(strings.Join(append([]string{"prose"}, path...), " "), func(t *testing.T) {
			if c.Short == "" {
				t.Error("no short description")
			} else if r := []rune(c.Short); !unicode.IsUpper(r[0]) || strings.HasSuffix(c.Short, ".") {
				t.Errorf("short %q: want a capital first and no final period", c.Short)
			}
			if c.Example == "" {
				t.Error("no example")
			}
			// One flag style: kebab-case names, usage lines that start in
			// lower case (or with a flag or a value) and end without a period.
			c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
				if fl.Hidden {
					return
				}
				if !flagNameRE.MatchString(fl.Name) {
					t.Errorf("flag --%s: want a kebab-case name", fl.Name)
				}
				u := []rune(fl.Usage)
				if len(u) == 0 {
					t.Errorf("flag --%s has no usage", fl.Name)
				} else if unicode.IsUpper(u[0]) && !flagUsageAcronym.MatchString(fl.Usage) || strings.HasSuffix(fl.Usage, ".") {
					t.Errorf("flag --%s usage %q: want a lower-case start and no final period", fl.Name, fl.Usage)
				}
			})
			for _, line := range strings.Split(c.Example, "\n") {
				if line != "" && !strings.HasPrefix(line, "  prose ") && !strings.HasPrefix(line, "  go ") && !strings.HasPrefix(line, "  source ") {
					t.Errorf("example line %q is not an indented prose command", line)
				}
			}
			var out, errb bytes.Buffer
			if code := execute(context.Background(), append(append([]string{}, path...), "--help"), strings.NewReader(""), &out, &errb); code != 0 {
				t.Errorf("--help: exit %d, stderr %s", code, errb.String())
			}
			if !strings.Contains(out.String(), "Usage:") || !strings.Contains(out.String(), "Examples:") {
				t.Errorf("--help printed no usage or no examples:\n%s", out.String())
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	walk(root)
	if len(paths) < 30 {
		t.Errorf("walked %d commands; the tree is smaller than expected", len(paths))
	}
}

// TestHelpOfTheBinary: the built binary's help exits 0, and `prose` alone
// prints it and exits 2; serve's help shows its flags' defaults.
func TestHelpOfTheBinary(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{{"--help"}, {"help", "runs"}, {"serve", "--help"}, {"run", "-h"}, {"exceptions", "resolve", "--help"}} {
		out := c.must(0, args...)
		if !strings.Contains(out, "Usage:") {
			t.Errorf("prose %v: no usage:\n%s", args, out)
		}
	}
	if out := c.must(0, "serve", "--help"); !strings.Contains(out, `--addr string`) || !strings.Contains(out, `(default "127.0.0.1:8080")`) || !strings.Contains(out, `(default "./prose-data")`) {
		t.Errorf("serve --help shows no defaults:\n%s", out)
	}
	if code, _, errb := c.run("serve", "--nope"); code != exitUsage || !strings.Contains(errb, "unknown flag: --nope") || !strings.Contains(errb, "Run 'prose serve --help'") || strings.Contains(errb, "--max-code-bytes") {
		t.Errorf("serve --nope: exit %d\n%s", code, errb)
	}
	if code, out, _ := c.run(); code != exitUsage || !strings.Contains(out, "Exit codes:") {
		t.Errorf("prose alone: exit %d\n%s", code, out)
	}
	if out := c.must(0, "completion", "bash"); !strings.Contains(out, "__start_prose") {
		t.Errorf("completion bash: %.200s", out)
	}
	for _, sh := range []string{"zsh", "fish"} {
		if out := c.must(0, "completion", sh); !strings.Contains(out, "prose") {
			t.Errorf("completion %s: %.200s", sh, out)
		}
	}
	if out := c.must(0, "__complete", "exceptions", "res"); !strings.Contains(out, "resolve") {
		t.Errorf("completion of a subcommand: %s", out)
	}
	if out := c.must(0, "__complete", "serve", "--ad"); !strings.Contains(out, "--addr") {
		t.Errorf("completion of serve's flags: %s", out)
	}
	if out := c.must(0, "version"); !strings.HasPrefix(out, "prose ") || !strings.Contains(out, "go1.") {
		t.Errorf("version: %s", out)
	}
	if out := c.must(0, "version", "-o", "json"); !strings.Contains(out, `"go_version":"go1.`) {
		t.Errorf("version -o json: %s", out)
	}
	// Flags after the positional argument count.
	if out := c.must(0, "run", "../../examples/invoice.prose", "--inputs", `{"invoice_total": 120.50}`, "--json"); !strings.Contains(out, `"state":"completed"`) {
		t.Errorf("run FILE --json: %s", out)
	}
}
