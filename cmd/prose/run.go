package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/proserun/prose/books"
	"github.com/proserun/prose/lang"
)

func init() {
	register("run", command{
		summary: "run a Prose program file: run FILE [--inputs JSON] [--answers JSON] [--json]",
		run:     runCommand,
	})
}

const (
	exitCompleted = 0
	exitFailed    = 1
	exitUsage     = 2
	exitAwaiting  = 3
)

type runFlags struct {
	file    string
	inputs  string
	answers string
	json    bool
	limits  limitFlags
}

func parseRunFlags(args []string) (runFlags, error) {
	var f runFlags
	limits := flag.NewFlagSet("run", flag.ContinueOnError)
	limits.SetOutput(io.Discard)
	f.limits.register(limits)
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" {
			if f.file != "" {
				return f, fmt.Errorf("more than one program file: %q and %q", f.file, a)
			}
			f.file = a
			continue
		}
		switch name {
		case "json":
			if hasVal {
				return f, fmt.Errorf("--json takes no value")
			}
			f.json = true
		case "inputs", "answers":
			if !hasVal {
				if i+1 >= len(args) {
					return f, fmt.Errorf("--%s needs a JSON object", name)
				}
				i++
				val = args[i]
			}
			if name == "inputs" {
				f.inputs = val
			} else {
				f.answers = val
			}
		default:
			if limits.Lookup(name) == nil {
				return f, fmt.Errorf("unknown flag %s", a)
			}
			if !hasVal {
				if i+1 >= len(args) {
					return f, fmt.Errorf("--%s needs a value", name)
				}
				i++
				val = args[i]
			}
			if err := limits.Set(name, val); err != nil {
				return f, fmt.Errorf("--%s: %w", name, err)
			}
		}
	}
	if f.file == "" {
		return f, fmt.Errorf("no program file given")
	}
	return f, nil
}

func runUsage(w io.Writer, err error) int {
	fmt.Fprintf(w, "prose run: %v\nusage: prose run FILE [--inputs JSON] [--answers JSON] [--json] [--max-steps N] [--max-run-time D] [--max-text-bytes SIZE] [--max-items N] [--max-facts-bytes SIZE] [--max-journal-bytes SIZE] [--max-state-bytes SIZE]\n", err)
	return exitUsage
}

// runReport is the --json output.
type runReport struct {
	State     string          `json:"state"`
	Outputs   json.RawMessage `json:"outputs"`
	Log       []string        `json:"log"`
	Exception *reportExc      `json:"exception,omitempty"`
	Error     *reportErr      `json:"error,omitempty"`
}

type reportExc struct {
	Group    string    `json:"group"`
	Message  string    `json:"message"`
	Location lang.Span `json:"location"`
}

type reportErr struct {
	Description string    `json:"description"`
	Location    lang.Span `json:"location"`
}

func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl, err := parseRunFlags(args)
	if err != nil {
		return runUsage(stderr, err)
	}
	src, err := os.ReadFile(fl.file)
	if err != nil {
		return runUsage(stderr, err)
	}
	inputs, answers := map[string]lang.Value{}, map[string]lang.Value{}
	if fl.inputs != "" {
		if inputs, err = lang.DecodePlainObject([]byte(fl.inputs)); err != nil {
			return runUsage(stderr, fmt.Errorf("--inputs: %w", err))
		}
	}
	if fl.answers != "" {
		m, err := lang.DecodePlainObject([]byte(fl.answers))
		if err != nil {
			return runUsage(stderr, fmt.Errorf("--answers: %w", err))
		}
		for k, v := range m {
			answers[lang.FactName(k)] = v
		}
	}
	report := func(state string, outputs map[string]lang.Value, log []string) *runReport {
		out, err := lang.EncodePlainMap(outputs)
		if err != nil {
			out = []byte("{}")
		}
		if log == nil {
			log = []string{}
		}
		return &runReport{State: state, Outputs: out, Log: log}
	}
	finish := func(r *runReport, code int) int {
		if fl.json {
			b, _ := json.Marshal(r)
			fmt.Fprintln(stdout, string(b))
			return code
		}
		switch {
		case r.Error != nil:
			fmt.Fprintf(stderr, "prose run: failed: %s\n", r.Error.Description)
		case r.Exception != nil:
			fmt.Fprintf(stderr, "prose run: awaiting guidance (%s): %s\n  at %s\n", r.Exception.Group, r.Exception.Message, where(string(src), r.Exception.Location))
		default:
			fmt.Fprintf(stdout, "outputs: %s\n", r.Outputs)
		}
		return code
	}

	prog, err := lang.Parse(string(src))
	if err != nil {
		r := report("failed", nil, nil)
		r.Error = &reportErr{Description: err.Error()}
		if se := (*lang.SyntaxError)(nil); errors.As(err, &se) {
			r.Error.Location = se.Span
		}
		return finish(r, exitFailed)
	}

	var log []string
	// The built-in books answer book calls (without connections: those are
	// a workspace's, on a server).
	opts := lang.Options{Books: books.NewRegistry(books.WithBuiltins(books.Builtins(books.BuiltinOptions{})...)).ForWorkspace(books.Workspace{}), Limits: fl.limits.l}
	if !fl.json {
		opts.Say = func(line string) { fmt.Fprintln(stdout, line) }
	}
	interactive := !fl.json && isTerminal(stdin)
	var in *bufio.Reader
	if interactive {
		in = bufio.NewReader(stdin)
	}

	res := lang.Start(ctx, prog, inputs, opts)
	for rounds := 0; ; rounds++ {
		log = append(log, res.Log...)
		if res.Status != lang.Suspended || rounds > 10000 {
			break
		}
		resolution, ok := fromAnswers(res.Exception, answers)
		if !ok && interactive {
			resolution, ok = ask(in, stderr, res.Exception)
		}
		if !ok {
			break
		}
		next, err := lang.Resume(ctx, prog, res.State, resolution, opts)
		if err != nil {
			if interactive {
				fmt.Fprintf(stderr, "prose run: %v\n", err)
				continue
			}
			r := report("failed", res.Outputs, log)
			r.Error = &reportErr{Description: err.Error(), Location: res.Exception.Span}
			return finish(r, exitFailed)
		}
		res = next
	}

	switch res.Status {
	case lang.Completed:
		return finish(report("completed", res.Outputs, log), exitCompleted)
	case lang.Suspended:
		r := report("awaiting_guidance", res.Outputs, log)
		r.Exception = &reportExc{Group: string(res.Exception.Group), Message: res.Exception.Message, Location: res.Exception.Span}
		return finish(r, exitAwaiting)
	case lang.Stopped:
		r := report("failed", res.Outputs, log)
		r.Error = &reportErr{Description: "interrupted"}
		return finish(r, exitFailed)
	default:
		r := report("failed", res.Outputs, log)
		r.Error = &reportErr{Description: res.Failure.Description, Location: res.Failure.Span}
		return finish(r, exitFailed)
	}
}

// fromAnswers resolves an exception with --answers, when they hold its fact
// or its question.
func fromAnswers(exc *lang.Exception, answers map[string]lang.Value) (lang.Resolution, bool) {
	if exc == nil || len(answers) == 0 {
		return lang.Resolution{}, false
	}
	if exc.Question != "" {
		if v, ok := answers[lang.FactName(exc.Question)]; ok {
			return lang.Resolution{Kind: lang.Answer, Answer: v}, true
		}
		return lang.Resolution{}, false
	}
	if exc.Fact != "" {
		if v, ok := answers[lang.FactName(exc.Fact)]; ok {
			return lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{exc.Fact: v}}, true
		}
	}
	return lang.Resolution{}, false
}

// ask asks the person at the terminal for a missing value or an answer.
func ask(in *bufio.Reader, w io.Writer, exc *lang.Exception) (lang.Resolution, bool) {
	switch {
	case exc.Question != "":
		fmt.Fprintf(w, "%s ", exc.Question)
		if len(exc.Choices) > 0 {
			var cs []string
			for _, c := range exc.Choices {
				cs = append(cs, c.String())
			}
			fmt.Fprintf(w, "(%s) ", strings.Join(cs, " / "))
		}
		v, ok := readValue(in)
		return lang.Resolution{Kind: lang.Answer, Answer: v}, ok
	case exc.Fact != "":
		fmt.Fprintf(w, "%s: ", exc.Message)
		v, ok := readValue(in)
		return lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{exc.Fact: v}}, ok
	case len(exc.Failed) > 0:
		fmt.Fprintf(w, "%s\nAccept and go on? (yes/no) ", exc.Message)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return lang.Resolution{}, false
		}
		if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
			return lang.Resolution{Kind: lang.Skip}, true
		}
	}
	return lang.Resolution{}, false
}

// readValue reads one line: JSON when it parses as JSON, else text.
func readValue(in *bufio.Reader) (lang.Value, bool) {
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		return lang.Value{}, false
	}
	line = strings.TrimRight(line, "\r\n")
	if v, err := lang.DecodePlain([]byte(line)); err == nil && strings.TrimSpace(line) != "" {
		return v, true
	}
	return lang.Text(line), true
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// where names a span by line and column.
func where(src string, sp lang.Span) string {
	if sp.Start < 0 || sp.Start > len(src) {
		return fmt.Sprintf("bytes %d-%d", sp.Start, sp.End)
	}
	line := strings.Count(src[:sp.Start], "\n") + 1
	col := sp.Start - strings.LastIndexByte(src[:sp.Start], '\n')
	end := sp.End
	if end > len(src) || end < sp.Start {
		end = sp.Start
	}
	return fmt.Sprintf("line %d, column %d: %s", line, col, src[sp.Start:end])
}
