package lang_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// fakeBooks is a test double of the books a run can call.
type fakeBooks struct {
	t     *testing.T
	procs []lang.BookProcedure
	calls []map[string]lang.Value
	index []int // lang.JournalIndex of each call
	fn    func(proc lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error)
	// lookupErr, when set, is Lookup's error.
	lookupErr error
}

func (b *fakeBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return b.procs, b.lookupErr
}

func (b *fakeBooks) Call(ctx context.Context, proc lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	b.calls = append(b.calls, in)
	b.index = append(b.index, -1)
	if i, ok := lang.JournalIndex(ctx); ok {
		b.index[len(b.index)-1] = i
	}
	if b.fn == nil {
		b.t.Fatalf("book %s called, but no call was expected", proc.Name)
	}
	return b.fn(proc, in)
}

var emailProc = lang.BookProcedure{Book: "mail@1", Name: "send_email", Signature: "send an email to a recipient (the message id)"}

func parse(t *testing.T, src string) *lang.Program {
	t.Helper()
	p, err := lang.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func plain(t *testing.T, v map[string]lang.Value) string {
	t.Helper()
	b, err := lang.EncodePlainMap(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const bookProgram = `send an email to "ana@example.com" where
  the subject is "Invoice " + the number
the output id is the above
get the approval
the output approval is the above
`

func TestBookCallJournaledAcrossResume(t *testing.T) {
	books := &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}, fn: func(_ lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
		return map[string]lang.Value{"message id": lang.Text("m-1")}, nil
	}}
	prog := parse(t, bookProgram)
	res := lang.Start(context.Background(), prog, map[string]lang.Value{"number": lang.Int(7)}, lang.Options{Books: books})
	if res.Status != lang.Suspended || res.Exception.Message != "Please provide the approval" {
		t.Fatalf("got %v %+v", res.Status, res.Exception)
	}
	if len(books.calls) != 1 {
		t.Fatalf("%d calls", len(books.calls))
	}
	if got := plain(t, books.calls[0]); got != `{"recipient":"ana@example.com","subject":"Invoice 7"}` {
		t.Fatalf("inputs %s", got)
	}
	// A fresh interpreter with books that must not be called.
	res, err := lang.Resume(context.Background(), parse(t, bookProgram), res.State,
		lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"the approval": lang.Bool(true)}},
		lang.Options{Books: &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != lang.Completed {
		t.Fatalf("got %v %+v", res.Status, res.Exception)
	}
	if got := plain(t, res.Outputs); got != `{"output approval":true,"output id":"m-1"}` {
		t.Fatalf("outputs %s", got)
	}
}

func TestCheckpointReplaysBookResult(t *testing.T) {
	var checkpoints [][]byte
	books := &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}, fn: func(lang.BookProcedure, map[string]lang.Value) (map[string]lang.Value, error) {
		return map[string]lang.Value{"message id": lang.Text("m-42")}, nil
	}}
	src := "the start is the current datetime\n" + bookProgram
	clock := func() time.Time { return time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }
	res := lang.Start(context.Background(), parse(t, src), map[string]lang.Value{"number": lang.Int(7)}, lang.Options{
		Books: books, Clock: clock, Checkpoint: func(s []byte) error { checkpoints = append(checkpoints, s); return nil },
	})
	if res.Status != lang.Suspended || len(checkpoints) != 1 {
		t.Fatalf("status %v, %d checkpoints", res.Status, len(checkpoints))
	}
	// The worker died after the checkpoint: another one continues from it,
	// with another clock, and the book is not called again.
	later := func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }
	res2, err := lang.Resume(context.Background(), parse(t, src), checkpoints[0], lang.Resolution{},
		lang.Options{Books: &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}}, Clock: later,
			Answers: map[string]lang.Value{"the approval": lang.Text("ok")}})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Status != lang.Completed {
		t.Fatalf("got %v %+v", res2.Status, res2.Exception)
	}
	if got := plain(t, res2.Outputs); got != `{"output approval":"ok","output id":"m-42"}` {
		t.Fatalf("outputs %s", got)
	}
}

func TestBookErrorThenRetry(t *testing.T) {
	fail := true
	books := &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}, fn: func(lang.BookProcedure, map[string]lang.Value) (map[string]lang.Value, error) {
		if fail {
			return nil, errors.New("mail server down")
		}
		return map[string]lang.Value{"message id": lang.Text("m-2"), "cost": lang.Num(lang.MustNumber("0.10"))}, nil
	}}
	src := "send an email to \"bo@example.com\"\nthe output is the above\n"
	res := lang.Start(context.Background(), parse(t, src), nil, lang.Options{Books: books})
	if res.Status != lang.Suspended || res.Exception.Group != lang.GroupUserSystemError ||
		res.Exception.Message != `Could not send an email to "bo@example.com": mail server down` ||
		res.Exception.Span != (lang.Span{Start: 0, End: 33}) {
		t.Fatalf("got %v %+v", res.Status, res.Exception)
	}
	fail = false
	res, err := lang.Resume(context.Background(), parse(t, src), res.State, lang.Resolution{Kind: lang.Retry}, lang.Options{Books: books})
	if err != nil {
		t.Fatal(err)
	}
	// the signature names one output; the book returned two: the named one is the result
	if got := plain(t, res.Outputs); got != `{"output":"m-2"}` || len(books.calls) != 2 {
		t.Fatalf("outputs %s after %d calls", got, len(books.calls))
	}
	// the failed call was not journaled: the retry has the same journal index
	if books.index[0] != 0 || books.index[1] != 0 {
		t.Fatalf("journal indexes %v", books.index)
	}
}

// A failure to look the books up raises an internal_error exception at the
// statement (it is not taken as "no book has that sentence"); a retry looks
// them up again and calls the book.
func TestBookLookupErrorRaises(t *testing.T) {
	books := &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}, lookupErr: errors.New("database is locked"),
		fn: func(lang.BookProcedure, map[string]lang.Value) (map[string]lang.Value, error) {
			return map[string]lang.Value{"message id": lang.Text("m-1")}, nil
		}}
	src := "send an email to \"bo@example.com\"\nthe output is the above\n"
	res := lang.Start(context.Background(), parse(t, src), nil, lang.Options{Books: books})
	if res.Status != lang.Suspended || res.Exception.Group != lang.GroupInternalError ||
		!strings.Contains(res.Exception.Message, "database is locked") || res.Exception.Span != (lang.Span{Start: 0, End: 33}) {
		t.Fatalf("got %v %+v", res.Status, res.Exception)
	}
	books.lookupErr = nil
	res, err := lang.Resume(context.Background(), parse(t, src), res.State, lang.Resolution{Kind: lang.Retry}, lang.Options{Books: books})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain(t, res.Outputs); res.Status != lang.Completed || got != `{"output":"m-1"}` || len(books.calls) != 1 {
		t.Fatalf("after retry: %v %s, %d calls", res.Status, got, len(books.calls))
	}
}

// A lookup that fails because the run's context ended stops the run before
// the statement (as between statements); continuing runs it.
func TestBookLookupCancelledStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	books := &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc},
		fn: func(lang.BookProcedure, map[string]lang.Value) (map[string]lang.Value, error) {
			return map[string]lang.Value{"message id": lang.Text("m-1")}, nil
		}}
	books.lookupErr = context.Canceled
	cancel()
	src := "send an email to \"bo@example.com\" with\n  the subject is \"hi\"\nthe output is the above\n"
	res := lang.Start(ctx, parse(t, src), nil, lang.Options{Books: books})
	if res.Status != lang.Stopped || res.Exception != nil || len(res.State) == 0 {
		t.Fatalf("got %v %+v", res.Status, res.Exception)
	}
	books.lookupErr = nil
	res, err := lang.Resume(context.Background(), parse(t, src), res.State, lang.Resolution{}, lang.Options{Books: books})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain(t, res.Outputs); res.Status != lang.Completed || got != `{"output":"m-1"}` || len(books.calls) != 1 || books.calls[0]["subject"].AsText() != "hi" {
		t.Fatalf("after continue: %v %s, calls %v", res.Status, got, books.calls)
	}
}

func TestBookNoMatchIsUnknown(t *testing.T) {
	books := &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}}
	res := lang.Start(context.Background(), parse(t, "send a letter to \"x\"\n"), nil, lang.Options{Books: books})
	if res.Status != lang.Suspended || !strings.HasPrefix(res.Exception.Message, "I don't know how to send a letter") {
		t.Fatalf("got %v %+v", res.Status, res.Exception)
	}
}

func TestStopAndContinue(t *testing.T) {
	items := make([]lang.Value, 5000)
	for i := range items {
		items[i] = lang.Int(1)
	}
	src := "the total is 0\nprocess each item as follows\n  add the item to the total\nthe output is the total\n"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := lang.Start(ctx, parse(t, src), map[string]lang.Value{"items": lang.ListValue(items...)}, lang.Options{})
	if res.Status != lang.Stopped || len(res.State) == 0 {
		t.Fatalf("got %v", res.Status)
	}
	res, err := lang.Resume(context.Background(), parse(t, src), res.State, lang.Resolution{}, lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain(t, res.Outputs); res.Status != lang.Completed || got != `{"output":5000}` {
		t.Fatalf("got %v %s", res.Status, got)
	}
}

func TestResumeRejects(t *testing.T) {
	src := "get the x\nthe output is the above\n"
	prog := parse(t, src)
	res := lang.Start(context.Background(), prog, nil, lang.Options{})
	if res.Status != lang.Suspended {
		t.Fatal(res.Status)
	}
	for name, tc := range map[string]struct {
		prog  string
		state []byte
		res   lang.Resolution
		want  string
	}{
		"garbage":            {src, []byte("{not json"), lang.Resolution{}, "damaged run state"},
		"empty":              {src, nil, lang.Resolution{}, "damaged run state"},
		"other program":      {"get the y\n", res.State, lang.Resolution{}, "another program"},
		"version":            {src, []byte(strings.Replace(string(res.State), `"v":2`, `"v":99`, 1)), lang.Resolution{}, "version 99"},
		"bad replacement":    {src, res.State, lang.Resolution{Kind: lang.ReplaceStep, Code: "the x is \"open"}, "not closed"},
		"bad fact name":      {src, res.State, lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"+": lang.Int(1)}}, "not a fact name"},
		"no values":          {src, res.State, lang.Resolution{Kind: lang.ProvideValues}, "no values"},
		"answer no value":    {src, res.State, lang.Resolution{Kind: lang.Answer}, "no value"},
		"frame out of range": {src, []byte(strings.Replace(string(res.State), `"pc":0`, `"pc":9`, 1)), lang.Resolution{}, "damaged"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := lang.Resume(context.Background(), parse(t, tc.prog), tc.state, tc.res, lang.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	// the state is still good after a rejected resolution
	r, err := lang.Resume(context.Background(), prog, res.State, lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"x": lang.Int(3)}}, lang.Options{})
	if err != nil || r.Status != lang.Completed {
		t.Fatalf("%v %v", err, r)
	}
}

func TestAskChoicesInException(t *testing.T) {
	res := lang.Start(context.Background(), parse(t, "ask \"Colour?\" with\n  the choices are \"red\", \"blue\"\n"), nil, lang.Options{})
	if res.Status != lang.Suspended || res.Exception.Question != "Colour?" || len(res.Exception.Choices) != 2 || res.Exception.Choices[1].AsText() != "blue" {
		t.Fatalf("%+v", res.Exception)
	}
}

func TestAliasSurvivesState(t *testing.T) {
	src := "the items are 1\nuse the items as the copy\nget the x\nadd the x to the items\nthe output is the copy\n"
	res := lang.Start(context.Background(), parse(t, src), nil, lang.Options{})
	res, err := lang.Resume(context.Background(), parse(t, src), res.State, lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"x": lang.Int(2)}}, lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain(t, res.Outputs); got != `{"output":[1,2]}` {
		t.Fatal(got)
	}
}

func TestSharedContainersSurviveState(t *testing.T) {
	// the loop item is the list's dictionary itself: changing it inside the
	// loop, across a suspension, changes the list
	src := "process each line in the lines as follows\n  get the x\n  the line's seen is the x\nthe output is the lines\n"
	in, _ := lang.DecodePlainObject([]byte(`{"lines":[{"a":1},{"a":2}]}`))
	res := lang.Start(context.Background(), parse(t, src), in, lang.Options{})
	for i := 0; res.Status == lang.Suspended && i < 5; i++ {
		var err error
		res, err = lang.Resume(context.Background(), parse(t, src), res.State, lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"x": lang.Int(int64(i))}}, lang.Options{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := plain(t, res.Outputs); got != `{"output":[{"a":1,"seen":0},{"a":2,"seen":0}]}` {
		t.Fatal(got)
	}
}

func TestSyntaxErrorInvalidUTF8(t *testing.T) {
	_, err := lang.Parse("the a is 1\nthe b is \"\xff\"\n")
	var se *lang.SyntaxError
	if !errors.As(err, &se) || se.Span.Start != 21 || se.Line != 2 {
		t.Fatalf("%v", err)
	}
}

func TestSayCallback(t *testing.T) {
	var lines []string
	res := lang.Start(context.Background(), parse(t, "say 1\nsay \"two\"\n"), nil, lang.Options{Say: func(s string) { lines = append(lines, s) }})
	if res.Status != lang.Completed || strings.Join(lines, ",") != "1,two" || strings.Join(res.Log, ",") != "1,two" {
		t.Fatalf("%v %q %q", res.Status, lines, res.Log)
	}
}

// TestSayAtAndCallSpan: SayAt has each line with its statement's span,
// and a book call knows the span of the statement that makes it.
func TestSayAtAndCallSpan(t *testing.T) {
	src := "say \"hi\"\nthe x is 2\nsay the x\n"
	var got []string
	res := lang.Start(context.Background(), parse(t, src), nil, lang.Options{SayAt: func(s string, at lang.Span) {
		got = append(got, s+"@"+src[at.Start:at.End])
	}})
	if res.Status != lang.Completed || strings.Join(got, ",") != `hi@say "hi",2@say the x` {
		t.Fatalf("%v %q", res.Status, got)
	}
}

// TestProgramSharedByRuns: one parsed program serves many runs at once,
// including replacement code and book matching at run time.
func TestProgramSharedByRuns(t *testing.T) {
	src := "the total is 0\nprocess each item as follows\n  add the item to the total\nfrobnicate the total\nthe output is the total\n"
	prog := parse(t, src)
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func(g int) {
			in := map[string]lang.Value{"items": lang.ListValue(lang.Int(int64(g)), lang.Int(1))}
			res := lang.Start(context.Background(), prog, in, lang.Options{})
			if res.Status != lang.Suspended {
				done <- errors.New(res.Status.String())
				return
			}
			res, err := lang.Resume(context.Background(), prog, res.State, lang.Resolution{Kind: lang.ReplaceStep, Code: "the new fact is the total * 2\nadd the new fact to the total"}, lang.Options{})
			if err != nil {
				done <- err
				return
			}
			if got := res.Outputs["output"].AsNumber().String(); got != itoa(3*(g+1)) {
				done <- errors.New("run " + itoa(g) + ": " + got)
				return
			}
			done <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestVersion1StateKeepsItsOutputs: a state written before outputs were
// top-level only (version 1, no list of defined outputs) resumes with every
// output fact of the top scope as an output, as it would have then.
func TestVersion1StateKeepsItsOutputs(t *testing.T) {
	src := "if true then\n  the output is 1\nget the x\nthe output y is the x\n"
	res := lang.Start(context.Background(), parse(t, src), nil, lang.Options{})
	if res.Status != lang.Suspended || len(res.Outputs) != 0 {
		t.Fatalf("%v %v", res.Status, plain(t, res.Outputs))
	}
	provide := lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"x": lang.Int(3)}}
	for _, tc := range []struct{ from, to, want string }{
		{`"v":2`, `"v":2`, `{"output y":3}`},
		{`"v":2`, `"v":1`, `{"output":1,"output y":3}`},
	} {
		state := []byte(strings.Replace(string(res.State), tc.from, tc.to, 1))
		r, err := lang.Resume(context.Background(), parse(t, src), state, provide, lang.Options{})
		if err != nil || r.Status != lang.Completed {
			t.Fatalf("%s: %v %v", tc.to, err, r)
		}
		if got := plain(t, r.Outputs); got != tc.want {
			t.Errorf("%s: outputs %s, want %s", tc.to, got, tc.want)
		}
	}
}

// lookupCounter counts the book lookups of a run.
type lookupCounter struct {
	fakeBooks
	lookups int
}

func (b *lookupCounter) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	b.lookups++
	return b.procs, nil
}

// TestBookLookupOncePerSentence: a synonym such as `print` asks the books
// whether a procedure has its sentence; in a loop it asks once, not on
// every pass, and still writes the log when none has.
func TestBookLookupOncePerSentence(t *testing.T) {
	books := &lookupCounter{fakeBooks: fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}}}
	src := "process each n in the ns as follows\n  print the n\n"
	res := lang.Start(context.Background(), parse(t, src), map[string]lang.Value{"ns": lang.ListValue(lang.Int(1), lang.Int(2), lang.Int(3))}, lang.Options{Books: books})
	if res.Status != lang.Completed || strings.Join(res.Log, ",") != "1,2,3" {
		t.Fatalf("%v %q", res.Status, res.Log)
	}
	if books.lookups != 1 {
		t.Errorf("%d lookups, want 1", books.lookups)
	}
}

// TestStopDuringBookCall cancels the context while a book call is in
// flight (a pause): the call's result is kept and the run stops before the
// next statement; resuming goes on without calling the book again.
func TestStopDuringBookCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	books := &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}, fn: func(lang.BookProcedure, map[string]lang.Value) (map[string]lang.Value, error) {
		cancel() // the pause arrives while the book works
		return map[string]lang.Value{"message id": lang.Text("m-7")}, nil
	}}
	src := "send an email to \"bo@example.com\"\nthe output id is the above\nthe output done is true\n"
	res := lang.Start(ctx, parse(t, src), nil, lang.Options{Books: books})
	if res.Status != lang.Stopped || len(books.calls) != 1 {
		t.Fatalf("got %v after %d calls, want stopped after 1", res.Status, len(books.calls))
	}
	if got := plain(t, res.Outputs); got != `{}` {
		t.Fatalf("stopped before the next statement, outputs %s", got)
	}
	res, err := lang.Resume(context.Background(), parse(t, src), res.State, lang.Resolution{},
		lang.Options{Books: &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain(t, res.Outputs); res.Status != lang.Completed || got != `{"output done":true,"output id":"m-7"}` {
		t.Fatalf("after resume: %v %s", res.Status, got)
	}
}
