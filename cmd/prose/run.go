package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/server/app"
)

const runLong = `Run a Prose program file here, without a server: the built-in books answer its
book calls as they do on a server (the standard book, http, tables, documents;
no connections: those belong to a workspace on a server), and --books adds
books of a JSON file, the same file 'prose serve --books' reads.

When the program raises an exception (a value nobody gave it, a question), the
person at the terminal is asked; --answers gives the answers beforehand, by
fact or question. --json prints one object {state, outputs, log, exception |
error} and never asks.

Exit codes: 0 completed, 1 failed, 2 usage, 3 awaiting guidance (an exception
nobody answered).`

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a Prose program file here, asking at the terminal when it needs guidance",
		Long:  runLong,
		Example: `  prose run examples/invoice.prose --inputs '{"invoice_total": 120.50}' --json
  prose run examples/invoice.prose --answers '{"the invoice total": 120.50}'
  prose run examples/invoice.prose            # asks for the invoice total at the terminal`,
		Args: func(_ *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return usageErr("no program file given")
			case 1:
				return nil
			}
			return usageErr("more than one program file: %q and %q", args[0], args[1])
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"prose"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.file = args[0]
			if code := runProgram(cmd.Context(), f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return exit(code)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.inputs, "inputs", "", `the run's inputs, a JSON object: {"invoice_total": 120.50}`)
	fl.StringVar(&f.answers, "answers", "", `answers to what the program asks, by fact or question: {"the invoice total": 120.50}`)
	fl.BoolVar(&f.json, "json", false, "print one JSON object and never ask at the terminal")
	fl.StringVar(&f.books, "books", "", `JSON file of books to add to the built-in ones: [{"book": {…}}] (the file of 'prose serve --books'; its "workspace" is ignored here)`)
	f.limits.register(fl)
	return cmd
}

// runCommand runs `prose run` with args (tests call it).
func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runArgs(ctx, "run", args, stdin, stdout, stderr)
}

type runFlags struct {
	file    string
	inputs  string
	answers string
	json    bool
	books   string
	limits  limitFlags
}

func runUsage(w io.Writer, err error) int {
	fmt.Fprintf(w, "prose run: %v\nRun 'prose run --help' for usage.\n", err)
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

// runProgram runs the program of fl and returns the exit code.
func runProgram(ctx context.Context, fl runFlags, stdin io.Reader, stdout, stderr io.Writer) int {
	src, err := os.ReadFile(fl.file)
	if err != nil {
		return runUsage(stderr, err)
	}
	inputs, answers, err := runInputs(fl)
	if err != nil {
		return runUsage(stderr, err)
	}
	report := newRunReport
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

	if !fl.json {
		for _, w := range prog.Warnings() {
			fmt.Fprintf(stderr, "prose run: warning: %s\n", w)
		}
	}

	var log []string
	// The built-in books answer book calls, as on a server (without
	// connections: those are a workspace's, on a server), and the books of
	// --books.
	reg, err := runRegistry(ctx, fl.books)
	if err != nil {
		return runUsage(stderr, fmt.Errorf("--books: %w", err))
	}
	opts := lang.Options{Books: reg.ForWorkspace(runWorkspace), Limits: fl.limits.l}
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
		if ok && resolution.Kind == lang.Answer {
			// the answers a server would refuse are refused here too
			if err := lang.CheckQuestionAnswer(res.Exception, resolution.Answer); err != nil {
				r := report("failed", res.Outputs, log)
				r.Error = &reportErr{Description: "--answers: " + err.Error(), Location: res.Exception.Span}
				return finish(r, exitFailed)
			}
		}
		if !ok && interactive {
			resolution, ok = ask(in, stderr, res.Exception)
			for ok && resolution.Kind == lang.Answer {
				err := lang.CheckQuestionAnswer(res.Exception, resolution.Answer)
				if err == nil {
					break
				}
				fmt.Fprintf(stderr, "prose run: %v\n", err)
				resolution, ok = ask(in, stderr, res.Exception)
			}
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

	return finish(resultReport(res, log))
}

// newRunReport is the report of a run in state with outputs and log.
func newRunReport(state string, outputs map[string]lang.Value, log []string) *runReport {
	out, err := lang.EncodePlainMap(outputs)
	if err != nil {
		out = []byte("{}")
	}
	if log == nil {
		log = []string{}
	}
	return &runReport{State: state, Outputs: out, Log: log}
}

// resultReport is the report of a run that ended (or waits) as res, and
// the exit code that says so.
func resultReport(res *lang.Result, log []string) (*runReport, int) {
	switch res.Status {
	case lang.Completed:
		return newRunReport("completed", res.Outputs, log), exitCompleted
	case lang.Suspended:
		r := newRunReport("awaiting_guidance", res.Outputs, log)
		r.Exception = &reportExc{Group: string(res.Exception.Group), Message: res.Exception.Message, Location: res.Exception.Span}
		return r, exitAwaiting
	case lang.Stopped:
		r := newRunReport("failed", res.Outputs, log)
		r.Error = &reportErr{Description: "interrupted"}
		return r, exitFailed
	default:
		r := newRunReport("failed", res.Outputs, log)
		r.Error = &reportErr{Description: res.Failure.Description, Location: res.Failure.Span}
		return r, exitFailed
	}
}

// runInputs reads --inputs and --answers (answers keyed by fact name).
func runInputs(fl runFlags) (inputs, answers map[string]lang.Value, err error) {
	inputs, answers = map[string]lang.Value{}, map[string]lang.Value{}
	if fl.inputs != "" {
		if inputs, err = lang.DecodePlainObject([]byte(fl.inputs)); err != nil {
			return nil, nil, fmt.Errorf("--inputs: %w", err)
		}
	}
	if fl.answers != "" {
		m, err := lang.DecodePlainObject([]byte(fl.answers))
		if err != nil {
			return nil, nil, fmt.Errorf("--answers: %w", err)
		}
		for k, v := range m {
			answers[lang.FactName(k)] = v
		}
	}
	return inputs, answers, nil
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
		if ok && v.Kind() == lang.KindText {
			v = lang.ReadAnswer(exc, v.AsText())
		}
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

// runWorkspace is the workspace of `prose run`'s books: every --books
// entry is registered in it, whatever its "workspace".
var runWorkspace = books.Workspace{OrganizationID: "local", WorkspaceID: "local"}

// runRegistry is the book registry of `prose run`: the server's built-in
// books (books.Builtins with the same options as serve's) and the books of
// a --books file (entries' workspaces ignored).
func runRegistry(ctx context.Context, file string) (*books.Registry, error) {
	builtins := books.WithBuiltins(books.Builtins(books.BuiltinOptions{})...)
	if file == "" {
		return books.NewRegistry(builtins), nil
	}
	mem := books.NewMemoryStore()
	reg := books.NewRegistry(books.WithStore(mem), builtins)
	if err := app.RegisterBooks(ctx, reg, file, func(string) (books.Workspace, error) { return runWorkspace, nil }); err != nil {
		return nil, err
	}
	return reg, nil
}
