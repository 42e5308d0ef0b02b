package safechange

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// RunLimits bound one test's (and one replayed run's) run: a test is a
// check, not work, so it gets less than a run (lang.DefaultLimits).
var RunLimits = lang.Limits{
	MaxSteps:      1_000_000,
	MaxDuration:   5 * time.Second,
	MaxFactsBytes: 16 << 20,
	MaxChildRuns:  100,
}

// maxRounds bounds the exceptions one run meets before the runner gives
// up on it (each answered one resumes it).
const maxRounds = 1000

// Options configure how tests run.
type Options struct {
	// Books are the books the program's sentences are looked up in (the
	// workspace's on a server, the built-in ones and --books for `prose
	// test`). Nil: only the procedures the tests' stubs declare. They are
	// never called.
	Books lang.Books
	// Limits bound each run (zero: RunLimits).
	Limits lang.Limits
}

func (o Options) limits() lang.Limits {
	if o.Limits == (lang.Limits{}) {
		return RunLimits
	}
	return o.Limits
}

// Result is how one test went.
type Result struct {
	Name   string
	Passed bool
	// Failures say, one sentence each, what was expected and what came.
	Failures []string
	// Diffs are the outputs that differ from those expected.
	Diffs   []Diff
	Outputs map[string]lang.Value
	Log     []string
	// Exception is the exception the run ended waiting on (nil: none),
	// at Line.
	Exception *lang.Exception
	Line      int
	// Visited are the spans of the statements the run executed.
	Visited  map[lang.Span]bool
	Duration time.Duration
}

// SuiteResult is how a program's tests went, with what they covered.
type SuiteResult struct {
	Results  []Result
	Passed   int
	Failed   int
	Coverage Coverage
}

// RunSuite runs every test of cases against prog.
func RunSuite(ctx context.Context, prog *lang.Program, cases []Case, opts Options) SuiteResult {
	var s SuiteResult
	opts.Books = LookupOnce(opts.Books)
	visited := map[lang.Span]bool{}
	for _, c := range cases {
		r := RunCase(ctx, prog, c, opts)
		if r.Passed {
			s.Passed++
		} else {
			s.Failed++
		}
		for sp := range r.Visited {
			visited[sp] = true
		}
		s.Results = append(s.Results, r)
	}
	s.Coverage = CoverageOf(prog, visited)
	return s
}

// RunCase runs one test against prog: its inputs, its clock, its answers
// to the run's exceptions in order and its stubs for every book call, and
// checks what came against what it expects.
func RunCase(ctx context.Context, prog *lang.Program, c Case, opts Options) Result {
	start := time.Now()
	r := Result{Name: c.Name, Visited: map[lang.Span]bool{}}
	defer func() { r.Duration = time.Since(start) }()
	books := newStubBooks(opts.Books, c.Books)
	now := c.Now
	if now.IsZero() {
		now = DefaultNow
	}
	lopts := lang.Options{
		Clock: func() time.Time { return now }, Books: books, Limits: opts.limits(),
		Visit: func(at lang.Span) { r.Visited[at] = true },
	}
	src := prog.Source()
	next := 0
	res, log, stop := drive(ctx, prog, cloneInputs(c.Inputs), lopts, func(x *lang.Exception) (lang.Resolution, bool, string) {
		if books.unstubbed != nil {
			return lang.Resolution{}, false, books.unstubbed.Error()
		}
		if next >= len(c.Answers) {
			return lang.Resolution{}, false, ""
		}
		a := c.Answers[next]
		next++
		res, err := resolution(x, a)
		if err != nil {
			return lang.Resolution{}, false, fmt.Sprintf("answer %d: %v (the run waits at line %d: %s)", next, err, LineOf(src, x.Span), x.Message)
		}
		return res, true, ""
	})
	r.Log = log
	if res != nil {
		r.Outputs = res.Outputs
	}
	if stop != "" {
		r.Failures = append(r.Failures, stop)
		return r
	}
	r.check(src, c, res, next)
	r.Passed = len(r.Failures) == 0
	return r
}

func cloneInputs(in map[string]lang.Value) map[string]lang.Value {
	out := make(map[string]lang.Value, len(in))
	for k, v := range in {
		// the run may change its inputs' lists and dictionaries: a fresh
		// copy each run, so a test runs the same every time
		b, err := lang.AppendPlain(nil, v)
		if err == nil && (v.Kind() == lang.KindList || v.Kind() == lang.KindDictionary) {
			if c, err := lang.DecodePlain(b); err == nil {
				out[k] = c
				continue
			}
		}
		out[k] = v
	}
	return out
}

// drive runs prog until it ends or waits on an exception next cannot
// answer: next gives the resolution of each exception the run meets, or
// a failure that stops it (ok false and no failure: the run waits). log
// is every line said.
func drive(ctx context.Context, prog *lang.Program, inputs map[string]lang.Value, opts lang.Options,
	next func(x *lang.Exception) (g lang.Resolution, ok bool, failure string)) (res *lang.Result, log []string, failure string) {
	res = lang.Start(ctx, prog, inputs, opts)
	log = append(log, res.Log...)
	for round := 0; res.Status == lang.Suspended; round++ {
		if round >= maxRounds {
			return res, log, fmt.Sprintf("the run met more than %d exceptions", maxRounds)
		}
		g, ok, fail := next(res.Exception)
		if fail != "" {
			return res, log, fail
		}
		if !ok {
			return res, log, "" // nothing more to answer: the run waits
		}
		nextRes, err := lang.Resume(ctx, prog, res.State, g, opts)
		if err != nil {
			return res, log, fmt.Sprintf("the answer does not apply at line %d: %v", LineOf(prog.Source(), res.Exception.Span), err)
		}
		res = nextRes
		log = append(log, res.Log...)
	}
	return res, log, ""
}

// resolution is the guidance answer a gives to the exception x.
func resolution(x *lang.Exception, a Answer) (lang.Resolution, error) {
	if a.Asks != "" {
		asked := x.Question
		if asked == "" {
			asked = x.Fact
		}
		if lang.FactName(asked) != lang.FactName(a.Asks) {
			if asked == "" {
				asked = x.Message
			}
			return lang.Resolution{}, fmt.Errorf("it is for %q, but the run asks %q", a.Asks, asked)
		}
	}
	switch a.Kind {
	case AnswerValues:
		return lang.Resolution{Kind: lang.ProvideValues, Values: a.Values, Expressions: a.Expressions}, nil
	case AnswerSkip:
		return lang.Resolution{Kind: lang.Skip}, nil
	case AnswerCode:
		return lang.Resolution{Kind: lang.ReplaceStep, Code: a.Code}, nil
	}
	switch {
	case x.Question != "":
		v := a.Value
		if v.Kind() == lang.KindText {
			v = lang.ReadAnswer(x, v.AsText())
		}
		if err := lang.CheckQuestionAnswer(x, v); err != nil {
			return lang.Resolution{}, err
		}
		return lang.Resolution{Kind: lang.Answer, Answer: v}, nil
	case x.Fact != "":
		return lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{x.Fact: a.Value}}, nil
	case len(x.Failed) > 0:
		return lang.Resolution{}, errors.New("the run asks to review facts that failed their checks: answer with `values:` or `skip: true`")
	}
	return lang.Resolution{}, fmt.Errorf("the run's exception (%s) asks for no value: answer with `values:`, `skip: true` or `code:`", x.Group)
}

// check compares the run's end with what the test expects.
func (r *Result) check(src string, c Case, res *lang.Result, used int) {
	fail := func(format string, a ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, a...)) }
	want := c.Expect.Exception
	switch res.Status {
	case lang.Completed:
		if want != nil {
			fail("expected %s, but the run completed", describeExpected(want))
		}
	case lang.Suspended:
		x := res.Exception
		r.Exception, r.Line = x, LineOf(src, x.Span)
		if want == nil {
			fail("the run waits for guidance at line %d (%s): %s — the test gives no answer for it", r.Line, x.Group, x.Message)
			break
		}
		if (want.Group != "" && want.Group != string(x.Group)) || (want.Line > 0 && want.Line != r.Line) ||
			(want.Message != "" && !strings.Contains(strings.ToLower(x.Message), strings.ToLower(want.Message))) {
			fail("expected %s, but the run waits at line %d (%s): %s", describeExpected(want), r.Line, x.Group, x.Message)
		}
	case lang.Failed:
		fail("the run failed: %s", res.Failure.Description)
		return
	case lang.Stopped:
		fail("the run was stopped before it ended: the tests ran out of time")
		return
	default:
		fail("the run ended %s", res.Status)
		return
	}
	if used < len(c.Answers) {
		fail("the test gives %d answers, and the run used %d", len(c.Answers), used)
	}
	if c.Expect.Outputs != nil {
		for _, d := range DiffExpected(c.Expect.Outputs, res.Outputs) {
			r.Diffs = append(r.Diffs, d)
			fail("%s", d)
		}
	}
	if c.Expect.Log != nil {
		if missing, ok := subsequence(c.Expect.Log, r.Log); !ok {
			fail("the run did not say %q (after the lines before it): it said %s", missing, quoteLines(r.Log))
		}
	}
}

func describeExpected(x *ExpectedException) string {
	s := "an exception"
	if x.Group != "" {
		s = "a " + x.Group + " exception"
	}
	if x.Line > 0 {
		s += fmt.Sprintf(" at line %d", x.Line)
	}
	if x.Message != "" {
		s += fmt.Sprintf(" saying %q", x.Message)
	}
	return s
}

// subsequence reports whether want's lines come in got in order; missing
// is the first that does not.
func subsequence(want, got []string) (missing string, ok bool) {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		return want[i], false
	}
	return "", true
}

func quoteLines(lines []string) string {
	if len(lines) == 0 {
		return "nothing"
	}
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = fmt.Sprintf("%q", l)
	}
	return strings.Join(q, ", ")
}

// LineOf is the line (from 1) of a span's start in src.
func LineOf(src string, sp lang.Span) int {
	if sp.Start < 0 || sp.Start > len(src) {
		return 0
	}
	return strings.Count(src[:sp.Start], "\n") + 1
}

// Coverage is which lines of a program tests executed: every line that
// starts a statement is one to cover.
type Coverage struct {
	Lines     []int // the lines with a statement
	Covered   []int
	Uncovered []int
}

// Percent is the share of lines covered, 0 to 100 (100 with no lines).
func (c Coverage) Percent() int {
	if len(c.Lines) == 0 {
		return 100
	}
	return len(c.Covered) * 100 / len(c.Lines)
}

// CoverageOf is the coverage of prog by the statements visited.
func CoverageOf(prog *lang.Program, visited map[lang.Span]bool) Coverage {
	src := prog.Source()
	lines, covered := map[int]bool{}, map[int]bool{}
	for _, sp := range prog.Statements() {
		l := LineOf(src, sp)
		lines[l] = true
		if visited[sp] {
			covered[l] = true
		}
	}
	var c Coverage
	for l := range lines {
		c.Lines = append(c.Lines, l)
		if covered[l] {
			c.Covered = append(c.Covered, l)
		} else {
			c.Uncovered = append(c.Uncovered, l)
		}
	}
	slices.Sort(c.Lines)
	slices.Sort(c.Covered)
	slices.Sort(c.Uncovered)
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
