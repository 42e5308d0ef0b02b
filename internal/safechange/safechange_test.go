package safechange

import (
	"bytes"
	"context"
	"encoding/xml"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/lang"
)

const invoice = `to compute the tax of an amount
  the result is the amount * 0.07

get the invoice total
validate the following
  ensure the invoice total is greater than 0

compute the tax of the invoice total
the output tax is the above
the output due is the invoice total + the output tax
the output approval is "none"
the output message is "none"
if the output due is greater than 100 then
  the output approval is "manager"
  send an email to "boss@example.com" with
    the subject is "Approve " + the output due
  the output message is the above
say "Due: " + the output due
`

// failingBooks offers the email book's procedure for lookup and fails the
// test on any call: a test's run never calls a book.
type failingBooks struct{ t *testing.T }

func (b failingBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	return []lang.BookProcedure{{Book: "email@1.0.0", Name: "send_email", Signature: "send an email to a recipient (the message id)"}}, nil
}

func (b failingBooks) Call(_ context.Context, p lang.BookProcedure, _ map[string]lang.Value) (map[string]lang.Value, error) {
	b.t.Errorf("a book was called: %s", p.Name)
	return nil, nil
}

func parse(t *testing.T, src string) *lang.Program {
	t.Helper()
	p, err := lang.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func suite(t *testing.T, y string) Suite {
	t.Helper()
	s, err := DecodeSuite([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const invoiceTests = `
tests:
  - name: a small invoice needs no approval
    inputs: {invoice total: 50}
    expect:
      outputs: {tax: 3.50, due: 53.50, approval: none}
      log: ["Due: 53.50"]
  - name: a large invoice goes to a manager
    inputs: {invoice total: 120.50}
    books:
      - call: send an email
        inputs: {recipient: boss@example.com}
        result: m-1
    expect:
      outputs: {output approval: manager, output due: 128.935, message: m-1}
  - name: the total is asked for when missing
    answers: [200]
    books:
      - call: send_email
        result: {message id: m-2}
    expect:
      outputs: {approval: manager, message: m-2}
  - name: a zero total waits for review
    inputs: {invoice total: 0}
    expect:
      exception: {group: missing_values, line: 5}
`

func TestRunSuitePassesAndCovers(t *testing.T) {
	prog := parse(t, invoice)
	s := suite(t, invoiceTests)
	res := RunSuite(context.Background(), prog, s.Tests, Options{Books: failingBooks{t}})
	for _, r := range res.Results {
		if !r.Passed {
			t.Errorf("%s: %v", r.Name, r.Failures)
		}
	}
	if res.Passed != 4 || res.Failed != 0 {
		t.Fatalf("passed %d failed %d", res.Passed, res.Failed)
	}
	if len(res.Coverage.Uncovered) != 0 || res.Coverage.Percent() != 100 {
		t.Errorf("coverage %+v", res.Coverage)
	}
	// Without the large invoices, the approval lines are not reached.
	res = RunSuite(context.Background(), prog, s.Tests[:1], Options{Books: failingBooks{t}})
	if want := []int{14, 15, 16, 17}; !slices.Equal(res.Coverage.Uncovered, want) {
		t.Errorf("uncovered %v, want %v", res.Coverage.Uncovered, want)
	}
	if got := CoverageLine(res.Coverage); !strings.Contains(got, "no test reaches line 14, 15, 16, 17") {
		t.Errorf("coverage line %q", got)
	}
}

// TestRunCaseFailures checks that each kind of mistake fails with a
// sentence that says what was expected and what came.
func TestRunCaseFailures(t *testing.T) {
	prog := parse(t, invoice)
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"wrong output", `name: x
inputs: {invoice total: 50}
expect: {outputs: {due: 54, approval: none, nope: 1}}`,
			[]string{"output due: expected 54, got 53.50", "output nope: expected 1, got no value"}},
		{"unstubbed call", `name: x
inputs: {invoice total: 500}`,
			[]string{"this test calls `send an email` and gives no result for it"}},
		{"stub for other inputs", `name: x
inputs: {invoice total: 500}
books: [{call: send an email, inputs: {recipient: ana@example.com}, result: m}]`,
			[]string{"this test calls `send an email` with inputs no stub of it gives a result for"}},
		{"results run out", `name: x
inputs: {invoice total: 500}
books: [{call: email/send_email, results: []}]`,
			nil},
		{"no answer for the question", `name: x`,
			[]string{"the run waits for guidance at line 4 (missing_values): Please provide the invoice total — the test gives no answer for it"}},
		{"answer for another fact", `name: x
answers: [{asks: the customer, answer: 3}]`,
			[]string{`answer 1: it is for "the customer", but the run asks "the invoice total"`}},
		{"answers left over", `name: x
answers: [50, 60]`,
			[]string{"the test gives 2 answers, and the run used 1"}},
		{"expected exception, completed", `name: x
inputs: {invoice total: 50}
expect: {exception: {group: user_system_error, line: 3}}`,
			[]string{"expected a user_system_error exception at line 3, but the run completed"}},
		{"exception elsewhere", `name: x
inputs: {invoice total: 0}
expect: {exception: {line: 9}}`,
			[]string{"expected an exception at line 9, but the run waits at line 5 (missing_values)"}},
		{"log line missing", `name: x
inputs: {invoice total: 50}
expect: {log: ["Due: 53.50", "Bye"]}`,
			[]string{`the run did not say "Bye"`}},
		{"book error", `name: x
inputs: {invoice total: 500}
books: [{call: send an email, error: mailbox full}]
expect: {exception: {group: user_system_error, line: 15, message: mailbox full}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeCase([]byte(tc.yaml))
			if err != nil {
				if tc.name == "results run out" {
					if !strings.Contains(err.Error(), "give `result:`, `results:` or `error:`") {
						t.Fatal(err)
					}
					return
				}
				t.Fatal(err)
			}
			r := RunCase(context.Background(), prog, c, Options{Books: failingBooks{t}})
			if len(tc.want) == 0 {
				if !r.Passed {
					t.Fatalf("failed: %v", r.Failures)
				}
				return
			}
			if r.Passed {
				t.Fatal("passed")
			}
			all := strings.Join(r.Failures, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("failures %q lack %q", all, w)
				}
			}
		})
	}
}

func TestStubsInTurnAndDeclared(t *testing.T) {
	prog := parse(t, `get the rate of "EUR"
the output first is the above
get the rate of "USD"
the output second is the above
get the rate of "GBP"
`)
	c, err := DecodeCase([]byte(`name: rates
books:
  - call: get the rate of a currency
    results: [1.08, !number 1.27]`))
	if err != nil {
		t.Fatal(err)
	}
	r := RunCase(context.Background(), prog, c, Options{})
	if r.Passed || !strings.Contains(strings.Join(r.Failures, " "), "this test calls `get the rate` 3 times, and gives 2 results for it") {
		t.Fatalf("failures %v", r.Failures)
	}
	if got := show(r.Outputs["output second"]); got != "1.27" {
		t.Errorf("second %s", got)
	}
}

func TestAnswerKinds(t *testing.T) {
	prog := parse(t, `ask "Approve?" the choices are "yes", "no"
the output decision is the answer
the count is 0
validate the following
  ensure the count is greater than 2
the output count is the count
get the customer
the output customer is the customer
`)
	c, err := DecodeCase([]byte(`name: kinds
now: 2024-05-01
answers:
  - {asks: "Approve?", answer: "yes"}
  - {values: {the count: 5}}
  - {code: "the customer is \"Ana\""}
expect:
  outputs: {decision: "yes", count: 5, customer: Ana}`))
	if err != nil {
		t.Fatal(err)
	}
	r := RunCase(context.Background(), prog, c, Options{})
	if !r.Passed {
		t.Fatalf("failures %v", r.Failures)
	}
	c.Answers[0].Value = lang.Text("maybe")
	if r := RunCase(context.Background(), prog, c, Options{}); r.Passed || !strings.Contains(r.Failures[0], "the answer must be one of") {
		t.Fatalf("failures %v", r.Failures)
	}
}

func TestFormatRoundTrip(t *testing.T) {
	s := suite(t, invoiceTests+`  - name: typed values
    now: 2024-05-01T09:30:00Z
    inputs:
      when: 2024-05-01
      at: !time 10:30:00
      wait: !duration PT2H
      zone: !timezone Europe/Paris
      tags: !set [a, b]
      rows: !table [{a: 1}, {a: 2}]
      doc: !file {file_name: a.pdf, url: "https://example.com/a.pdf"}
      quoted: "12"
      nested: {list: [1, {x: true}], none: null}
    answers: [{skip: true}, {code: "the x is 1"}, {answer: {a: 1}}, {expressions: {the x: "the y + 1"}}]
`)
	b, err := EncodeSuite(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSuite(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(back.Tests) != len(s.Tests) {
		t.Fatalf("%d tests back", len(back.Tests))
	}
	for i := range s.Tests {
		a, z := s.Tests[i], back.Tests[i]
		if a.Name != z.Name || !a.Now.Equal(z.Now) || len(a.Answers) != len(z.Answers) || len(a.Books) != len(z.Books) {
			t.Errorf("test %d differs:\n%+v\n%+v", i, a, z)
		}
		for k, v := range a.Inputs {
			if !lang.Equal(v, z.Inputs[k]) || v.Kind() != z.Inputs[k].Kind() {
				t.Errorf("%s: input %s: %s (%v) back as %s (%v)", a.Name, k, show(v), v.Kind(), show(z.Inputs[k]), z.Inputs[k].Kind())
			}
		}
		for k, v := range a.Expect.Outputs {
			if !lang.Equal(v, z.Expect.Outputs[k]) {
				t.Errorf("%s: output %s differs", a.Name, k)
			}
		}
	}
	if k := back.Tests[4].Inputs["quoted"].Kind(); k != lang.KindText {
		t.Errorf("a quoted number reads as %v", k)
	}
	if n := back.Tests[0].Expect.Outputs["tax"]; n.Kind() != lang.KindNumber || show(n) != "3.50" {
		t.Errorf("120.50-like numbers must stay exact: %s", show(n))
	}
}

func TestFormatErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{``, "the tests file is empty"},
		{`tests: 3`, "`tests:` is a list of tests"},
		{"tests:\n  - name: a\n    inputz: {}", `line 3: a test has no "inputz"`},
		{"tests:\n  - inputs: {}", "a test needs a name"},
		{"tests:\n  - name: a\n  - name: A", `two tests are named "A"`},
		{"tests:\n  - name: a\n    answers: [{a: 1}]", "a dictionary answer is written `answer: {…}`"},
		{"tests:\n  - name: a\n    answers: [{skip: true, answer: 1}]", "an answer does one thing"},
		{"tests:\n  - name: a\n    books: [{call: x}]", "give `result:`, `results:` or `error:`"},
		{"tests:\n  - name: a\n    answers: [{expressions: {x: \"1 +\"}}]", "the expression of x does not parse"},
		{"tests:\n  - name: a\n    inputs: {x: 0x1F}", "is not a number Prose reads exactly"},
		{"tests:\n  - name: a\n    inputs: {x: !time noon}", "is not a time of day"},
		{"tests:\n  - name: a\n    expect: {exception: {group: oops}}", `group "oops" is not one of`},
		{"tests:\n  - name: a\n    expect: {exception: {line: 0}}", "`line:` is a line of the program"},
		{"tests: [\n", "not YAML"},
	} {
		_, err := DecodeSuite([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := DecodeSuite(bytes.Repeat([]byte("#"), MaxFileBytes+1)); err == nil {
		t.Error("an oversized file is accepted")
	}
	// An alias bomb is refused, not expanded.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
	_, err := DecodeSuite([]byte("tests:\n  - name: bomb\n    inputs:\n      " + strings.ReplaceAll(bomb, "\n", "\n      ")))
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("alias bomb: %v", err)
	}
}

func TestWriteJUnit(t *testing.T) {
	prog := parse(t, invoice)
	s := suite(t, invoiceTests)
	s.Tests[0].Expect.Outputs["due"] = lang.Int(1)
	res := RunSuite(context.Background(), prog, s.Tests, Options{Books: failingBooks{t}})
	var b bytes.Buffer
	if err := WriteJUnit(&b, []NamedSuite{{Name: "invoice.tests.yaml", Result: res}}); err != nil {
		t.Fatal(err)
	}
	var back junitSuites
	if err := xml.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if back.Tests != 4 || back.Failures != 1 || len(back.Suites) != 1 || back.Suites[0].Cases[0].Failure == nil ||
		!strings.Contains(back.Suites[0].Cases[0].Failure.Message, "output due: expected 1, got 53.50") {
		t.Fatalf("junit:\n%s", b.String())
	}
	var txt bytes.Buffer
	if err := WriteText(&txt, "invoice", res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "FAIL invoice: a small invoice needs no approval\n       output due: expected 1, got 53.50") {
		t.Errorf("text:\n%s", txt.String())
	}
}

func TestReplay(t *testing.T) {
	published := parse(t, invoice)
	draft := parse(t, strings.Replace(invoice, "0.07", "0.08", 1))
	created := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	mail := []RecordedCall{{Book: "email", Procedure: "send_email", Outputs: map[string]lang.Value{"message id": lang.Text("m-9")}}}
	record := func(total string, answer bool) Record {
		r := Record{Run: "r-" + total, Created: created, Inputs: map[string]lang.Value{"invoice total": lang.Num(lang.MustNumber(total))}}
		if answer {
			r.Calls = mail
		}
		if answer {
			r.Inputs = nil
			r.Answers = []RecordedAnswer{{Statement: "get the invoice total", Group: "missing_values", Fact: "the invoice total",
				Resolution: lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"the invoice total": lang.Num(lang.MustNumber(total))}}}}
		}
		// what the published version did with it
		res := Replay(context.Background(), published, Record{Run: r.Run, Created: created, Inputs: r.Inputs, Calls: r.Calls, Answers: r.Answers, Completed: true}, ReplayOptions{Books: failingBooks{t}})
		r.Completed, r.Outputs = true, res.Outputs
		return r
	}
	small, large := record("50", false), record("120.50", true)
	if r := Replay(context.Background(), published, small, ReplayOptions{Books: failingBooks{t}}); r.Outcome != Unchanged {
		t.Fatalf("the published version against its own record: %v %s", r.Outcome, r.Message)
	}
	r := Replay(context.Background(), draft, small, ReplayOptions{Books: failingBooks{t}})
	if r.Outcome != OutputsDiffer || len(r.Diffs) != 2 || !strings.Contains(r.Message, "output due 53.50 → 54.00") {
		t.Fatalf("small: %v %q %v", r.Outcome, r.Message, r.Diffs)
	}
	r = Replay(context.Background(), draft, large, ReplayOptions{Books: failingBooks{t}})
	if r.Outcome != OutputsDiffer {
		t.Fatalf("large (answered): %v %q", r.Outcome, r.Message)
	}
	// The record has no answer for a question the draft asks.
	asks := parse(t, "ask \"Sure?\"\n"+invoice)
	if r := Replay(context.Background(), asks, small, ReplayOptions{Books: failingBooks{t}}); r.Outcome != NewException || r.Line != 1 {
		t.Fatalf("new question: %v %q line %d", r.Outcome, r.Message, r.Line)
	}
	// A call the run never made.
	twice := parse(t, strings.Replace(invoice, `say "Due: "`, "send an email to \"ops@example.com\"\nsay \"Due: \"", 1))
	if r := Replay(context.Background(), twice, small, ReplayOptions{Books: failingBooks{t}}); r.Outcome != UnansweredCall ||
		r.Message != "the draft calls `send an email`, which the run never called" || r.Line != 18 {
		t.Fatalf("new call: %v %q line %d", r.Outcome, r.Message, r.Line)
	}
	// The same call with other inputs, when the key says so.
	key := func(p lang.BookProcedure, in map[string]lang.Value) (string, error) {
		return show(in["recipient"]), nil
	}
	large.Calls[0].Key = `"boss@example.com"`
	if r := Replay(context.Background(), draft, large, ReplayOptions{Books: failingBooks{t}, CallKey: key}); r.Outcome != OutputsDiffer {
		t.Fatalf("same inputs: %v %q", r.Outcome, r.Message)
	}
	other := parse(t, strings.Replace(invoice, "boss@example.com", "cfo@example.com", 1))
	if r := Replay(context.Background(), other, large, ReplayOptions{Books: failingBooks{t}, CallKey: key}); r.Outcome != UnansweredCall ||
		!strings.Contains(r.Message, "with inputs the run did not give it") {
		t.Fatalf("other inputs: %v %q", r.Outcome, r.Message)
	}
	if r := Replay(context.Background(), draft, Record{Run: "x", Unreplayable: "the run has 2 steps"}, ReplayOptions{}); r.Outcome != Failed {
		t.Fatalf("unreplayable: %v", r.Outcome)
	}
}

func TestProcedureName(t *testing.T) {
	for sig, want := range map[string]string{
		"send an email to a recipient (the message id)":  "send an email",
		"format a number as text (the formatted number)": "format a number as text",
		"get the new id (the id)":                        "get the new id",
		"to get the rate of a currency":                  "get the rate",
	} {
		if got := ProcedureName(lang.BookProcedure{Signature: sig}); got != want {
			t.Errorf("%q: %q, want %q", sig, got, want)
		}
	}
}

// countingBooks counts the lookups of failingBooks.
type countingBooks struct {
	failingBooks
	lookups   int
	sentences map[string]bool
}

func (b *countingBooks) Lookup(ctx context.Context, s string) ([]lang.BookProcedure, error) {
	b.lookups++
	b.sentences[s] = true
	return b.failingBooks.Lookup(ctx, s)
}

// TestSuiteLooksEachSentenceUpOnce: the books do not change while a suite
// runs, so a sentence is looked up once for all its tests (a replay of
// thousands of runs shares one LookupOnce the same way).
func TestSuiteLooksEachSentenceUpOnce(t *testing.T) {
	prog := parse(t, invoice)
	books := &countingBooks{failingBooks: failingBooks{t}, sentences: map[string]bool{}}
	s := suite(t, invoiceTests)
	res := RunSuite(context.Background(), prog, s.Tests, Options{Books: books})
	if res.Failed != 0 {
		t.Fatalf("%+v", res.Results)
	}
	if books.lookups != len(books.sentences) || books.lookups == 0 {
		t.Errorf("%d lookups of %d sentences (%v)", books.lookups, len(books.sentences), books.sentences)
	}
}
