package safechange

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// Replay re-executes a draft with what a finished run of the published
// version recorded — its inputs, the answers people (and guide entries)
// gave to its exceptions, its book results — and tells how the run would
// have ended with the draft. No book is called: the record answers every
// call, and a call it cannot answer is reported, not made.
//
// Book calls are matched by procedure and order: the draft's n-th call of
// a procedure (its book, without the version, and its id) gets the
// result of the run's n-th call of it, when the draft gives it the same
// inputs (the journal's key); otherwise the record cannot answer it.
// Answers are matched by the exception: the draft's n-th exception at a
// statement (by its text), of a group, asking for a fact or a question,
// gets the n-th answer the run was given there. The clock reads the time
// the run was created.

// Record is what a finished run recorded, as Replay uses it.
type Record struct {
	// Run names the run in reports.
	Run     string
	Inputs  map[string]lang.Value
	Created time.Time
	Calls   []RecordedCall
	Answers []RecordedAnswer
	// Completed with Outputs, or failed with Failure.
	Completed bool
	Outputs   map[string]lang.Value
	Failure   string
	// Unreplayable, when set, says why the run cannot be replayed.
	Unreplayable string
}

// RecordedCall is one book call a run made.
type RecordedCall struct {
	// Book (without its version) and Procedure (its id) name what was
	// called.
	Book, Procedure string
	// Key is the journal's key of the call (the procedure and a hash of
	// its inputs); "" skips the inputs check.
	Key     string
	Outputs map[string]lang.Value
}

// RecordedAnswer is guidance a run was given at an exception.
type RecordedAnswer struct {
	// Statement is the text of the statement the exception was raised at;
	// Group, Fact and Question are the exception's.
	Statement, Group, Fact, Question string
	Resolution                       lang.Resolution
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Books are looked up (never called), as for tests; give the records
	// of one replay the same LookupOnce(books).
	Books lang.Books
	// Limits bound each replayed run (zero: RunLimits).
	Limits lang.Limits
	// CallKey is the journal's key of a call (the run engine's); nil
	// skips the inputs check.
	CallKey func(proc lang.BookProcedure, inputs map[string]lang.Value) (string, error)
}

// Outcome is how a replayed run compares with the record.
type Outcome int

// The outcomes.
const (
	// Unchanged: the draft ends the run as the record did.
	Unchanged Outcome = iota + 1
	// OutputsDiffer: the draft completes with other outputs (or completes
	// a run that failed).
	OutputsDiffer
	// NewException: the draft waits on an exception no recorded answer
	// resolves.
	NewException
	// UnansweredCall: the draft makes a book call the record cannot
	// answer (a new call, or one with other inputs).
	UnansweredCall
	// Failed: the draft fails the run, or the run cannot be replayed.
	Failed
)

var outcomeNames = map[Outcome]string{Unchanged: "unchanged", OutputsDiffer: "outputs differ",
	NewException: "new exception", UnansweredCall: "unanswered book call", Failed: "failed"}

func (o Outcome) String() string { return outcomeNames[o] }

// ReplayResult is how one run replayed.
type ReplayResult struct {
	Run     string
	Outcome Outcome
	// Diffs are the outputs that differ (want: recorded; got: the draft's).
	Diffs []Diff
	// Message says what happened, for a person.
	Message string
	// Span and Line are where (new exception, unanswered call).
	Span lang.Span
	Line int
	// Procedure names the unanswered call's procedure.
	Procedure string
	Outputs   map[string]lang.Value
}

// Replay replays one record against prog.
func Replay(ctx context.Context, prog *lang.Program, rec Record, opts ReplayOptions) ReplayResult {
	out := ReplayResult{Run: rec.Run}
	if rec.Unreplayable != "" {
		out.Outcome, out.Message = Failed, rec.Unreplayable
		return out
	}
	books := &recordBooks{inner: opts.Books, rec: rec, key: opts.CallKey, taken: map[string]int{}}
	limits := opts.Limits
	if limits == (lang.Limits{}) {
		limits = RunLimits
	}
	created := rec.Created
	lopts := lang.Options{Clock: func() time.Time { return created }, Books: books, Limits: limits, Runs: noRuns{}}
	src := prog.Source()
	used := make([]bool, len(rec.Answers))
	res, _, stop := drive(ctx, prog, cloneInputs(rec.Inputs), lopts, func(x *lang.Exception) (lang.Resolution, bool, string) {
		if books.unanswered != "" {
			return lang.Resolution{}, false, ""
		}
		stmt := statementAt(src, x.Span)
		for i, a := range rec.Answers {
			if !used[i] && a.Statement == stmt && a.Group == string(x.Group) &&
				lang.FactName(a.Fact) == lang.FactName(x.Fact) && a.Question == x.Question {
				used[i] = true
				return a.Resolution, true, ""
			}
		}
		return lang.Resolution{}, false, ""
	})
	if res != nil {
		out.Outputs = res.Outputs
	}
	switch {
	case books.unanswered != "":
		out.Outcome, out.Message, out.Procedure = UnansweredCall, books.unanswered, books.procedure
		if res != nil && res.Exception != nil {
			out.Span, out.Line = res.Exception.Span, LineOf(src, res.Exception.Span)
		}
	case stop != "":
		out.Outcome, out.Message = NewException, stop
		if res != nil && res.Exception != nil {
			out.Span, out.Line = res.Exception.Span, LineOf(src, res.Exception.Span)
		}
	case res.Status == lang.Suspended:
		x := res.Exception
		out.Outcome, out.Span, out.Line = NewException, x.Span, LineOf(src, x.Span)
		out.Message = fmt.Sprintf("the draft waits for guidance at line %d (%s): %s", out.Line, x.Group, x.Message)
	case res.Status == lang.Completed && rec.Completed:
		out.Diffs = DiffOutputs(rec.Outputs, res.Outputs)
		out.Outcome = Unchanged
		if len(out.Diffs) > 0 {
			out.Outcome = OutputsDiffer
			out.Message = describeDiffs(out.Diffs)
		}
	case res.Status == lang.Completed:
		out.Outcome, out.Diffs = OutputsDiffer, DiffOutputs(nil, res.Outputs)
		out.Message = "the run failed (" + rec.Failure + "); the draft completes it"
	case res.Status == lang.Failed && !rec.Completed && res.Failure.Description == rec.Failure:
		out.Outcome = Unchanged
	case res.Status == lang.Failed:
		out.Outcome, out.Message, out.Span = Failed, "the draft fails the run: "+res.Failure.Description, res.Failure.Span
		out.Line = LineOf(src, res.Failure.Span)
	default:
		out.Outcome, out.Message = Failed, "the replay ended "+res.Status.String()
	}
	return out
}

func describeDiffs(ds []Diff) string {
	parts := make([]string, 0, len(ds))
	for i, d := range ds {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ds)-3))
			break
		}
		w := d.Output
		if d.Path != "" {
			w += "'s " + d.Path
		}
		parts = append(parts, fmt.Sprintf("%s %s → %s", w, show(d.Want), show(d.Got)))
	}
	return strings.Join(parts, "; ")
}

// statementAt is the text of the statement at sp (the key answers are
// matched by, as guide entries are).
func statementAt(src string, sp lang.Span) string {
	if sp.Start < 0 || sp.End <= sp.Start || sp.End > len(src) {
		return ""
	}
	return src[sp.Start:sp.End]
}

// recordBooks answers a replayed run's book calls from its record.
type recordBooks struct {
	inner lang.Books
	rec   Record
	key   func(proc lang.BookProcedure, inputs map[string]lang.Value) (string, error)
	taken map[string]int
	// unanswered says why the first call the record could not answer was
	// not; procedure names it.
	unanswered, procedure string
}

func (b *recordBooks) Lookup(ctx context.Context, sentence string) ([]lang.BookProcedure, error) {
	if b.inner == nil {
		return nil, nil
	}
	return b.inner.Lookup(ctx, sentence)
}

func (b *recordBooks) Call(_ context.Context, proc lang.BookProcedure, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	book := bookName(proc)
	id := book + "/" + proc.Name
	n := b.taken[id]
	b.taken[id]++
	seen := 0
	for _, c := range b.rec.Calls {
		if c.Book != book || c.Procedure != proc.Name {
			continue
		}
		if seen++; seen <= n {
			continue
		}
		if c.Key != "" && b.key != nil {
			if k, err := b.key(proc, inputs); err != nil || k != c.Key {
				return nil, b.refuse(proc, fmt.Sprintf("the draft calls `%s` with inputs the run did not give it (%s)", ProcedureName(proc), showInputs(inputs)))
			}
		}
		return c.Outputs, nil
	}
	if seen == 0 {
		return nil, b.refuse(proc, fmt.Sprintf("the draft calls `%s`, which the run never called", ProcedureName(proc)))
	}
	return nil, b.refuse(proc, fmt.Sprintf("the draft calls `%s` %d times, the run %d", ProcedureName(proc), n+1, seen))
}

func (b *recordBooks) refuse(proc lang.BookProcedure, why string) error {
	if b.unanswered == "" {
		b.unanswered, b.procedure = why, ProcedureName(proc)
	}
	return fmt.Errorf("%s", why)
}

// noRuns refuses `start a run` in a replay: a started run is work of its
// own, which a replay does not do.
type noRuns struct{}

func (noRuns) Start(context.Context, lang.RunRequest) (string, error) {
	return "", fmt.Errorf("a replay starts no runs")
}

func (noRuns) Settled(context.Context, []string) ([]lang.RunOutcome, bool, error) {
	return nil, true, nil
}
