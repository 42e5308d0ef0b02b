package lang_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// corpusCase is one case of testdata/cases, in the format of the shared
// conformance cases, with optional guidance applied in order when the run
// waits and no answer fits.
type corpusCase struct {
	Name     string          `json:"name"`
	Code     string          `json:"code"`
	Inputs   json.RawMessage `json:"inputs"`
	Answers  json.RawMessage `json:"answers"`
	Guidance []guidance      `json:"guidance"`
	Now      string          `json:"now"`
	Books    []caseBook      `json:"books"`
	Expect   struct {
		State     string          `json:"state"`
		Outputs   json.RawMessage `json:"outputs"`
		Log       []string        `json:"log"`
		Exception *expectExc      `json:"exception"`
		Error     *expectExc      `json:"error"`
	} `json:"expect"`
}

// caseBook is a book procedure a case's run can call: it returns its
// outputs, or with echo its inputs (by name), or fails with error.
type caseBook struct {
	Signature string          `json:"signature"`
	Outputs   json.RawMessage `json:"outputs"`
	Echo      bool            `json:"echo"`
	Error     string          `json:"error"`
}

// corpusBooks are the books of a case.
type corpusBooks struct {
	t     *testing.T
	procs []caseBook
}

func (b *corpusBooks) Lookup(context.Context, string) ([]lang.BookProcedure, error) {
	out := make([]lang.BookProcedure, len(b.procs))
	for i, p := range b.procs {
		out[i] = lang.BookProcedure{Book: "case", Name: strconv.Itoa(i), Signature: p.Signature}
	}
	return out, nil
}

func (b *corpusBooks) Call(_ context.Context, proc lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	i, _ := strconv.Atoi(proc.Name)
	if b.procs[i].Error != "" {
		return nil, errors.New(b.procs[i].Error)
	}
	if b.procs[i].Echo {
		return in, nil
	}
	return mustObject(b.t, b.procs[i].Outputs), nil
}

func caseOptions(t *testing.T, c *corpusCase) lang.Options {
	opts := lang.Options{Clock: caseClock(t, c)}
	if len(c.Books) > 0 {
		opts.Books = &corpusBooks{t: t, procs: c.Books}
	}
	return opts
}

type guidance struct {
	Kind   string          `json:"kind"` // provide skip retry replace answer
	Values json.RawMessage `json:"values"`
	Code   string          `json:"code"`
	Answer json.RawMessage `json:"answer"`
}

type expectExc struct {
	Group         string          `json:"group"`
	Message       string          `json:"message"`
	MessagePrefix string          `json:"message_prefix"`
	Choices       json.RawMessage `json:"choices"`
	Location      *struct {
		Start int `json:"start_byte"`
		End   int `json:"end_byte"`
	} `json:"location"`
}

type outcome struct {
	state   string
	outputs map[string]lang.Value
	log     []string
	exc     *lang.Exception
	errMsg  string
	errSpan lang.Span
}

func mustObject(t *testing.T, raw json.RawMessage) map[string]lang.Value {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	m, err := lang.DecodePlainObject(raw)
	if err != nil {
		t.Fatalf("bad JSON object %s: %v", raw, err)
	}
	return m
}

func caseClock(t *testing.T, c *corpusCase) func() time.Time {
	now := time.Date(2024, 5, 17, 9, 30, 0, 0, time.UTC)
	if c.Now != "" {
		var err error
		if now, err = time.Parse(time.RFC3339, c.Now); err != nil {
			t.Fatal(err)
		}
	}
	return func() time.Time { return now }
}

// runSuspending runs the case as the run engine would: every exception
// suspends the run, its state goes through bytes, and a fresh parse of the
// program resumes it with the case's answers or guidance.
func runSuspending(t *testing.T, c *corpusCase) outcome {
	t.Helper()
	prog, err := lang.Parse(c.Code)
	if err != nil {
		var se *lang.SyntaxError
		errors.As(err, &se)
		o := outcome{state: "failed", errMsg: err.Error()}
		if se != nil {
			o.errSpan = se.Span
		}
		return o
	}
	opts := caseOptions(t, c)
	answers := map[string]lang.Value{}
	for k, v := range mustObject(t, c.Answers) {
		answers[lang.FactName(k)] = v
	}
	res := lang.Start(context.Background(), prog, mustObject(t, c.Inputs), opts)
	log := append([]string(nil), res.Log...)
	guide := c.Guidance
	for round := 0; res.Status == lang.Suspended && round < 100; round++ {
		exc := res.Exception
		var r lang.Resolution
		if v, ok := answers[lang.FactName(exc.Question)]; ok && exc.Question != "" {
			r = lang.Resolution{Kind: lang.Answer, Answer: v}
		} else if v, ok := answers[lang.FactName(exc.Fact)]; ok && exc.Fact != "" {
			r = lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{exc.Fact: v}}
		} else if len(guide) > 0 {
			g := guide[0]
			guide = guide[1:]
			switch g.Kind {
			case "provide":
				r = lang.Resolution{Kind: lang.ProvideValues, Values: mustObject(t, g.Values)}
			case "skip":
				r = lang.Resolution{Kind: lang.Skip}
			case "retry":
				r = lang.Resolution{Kind: lang.Retry}
			case "replace":
				r = lang.Resolution{Kind: lang.ReplaceStep, Code: g.Code}
			case "answer":
				v, err := lang.DecodePlain(g.Answer)
				if err != nil {
					t.Fatal(err)
				}
				r = lang.Resolution{Kind: lang.Answer, Answer: v}
			default:
				t.Fatalf("unknown guidance %q", g.Kind)
			}
		} else {
			break
		}
		fresh, err := lang.Parse(c.Code) // a new interpreter, as on another process
		if err != nil {
			t.Fatal(err)
		}
		state := append([]byte(nil), res.State...)
		next, err := lang.Resume(context.Background(), fresh, state, r, opts)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		res = next
		log = append(log, res.Log...)
	}
	return toOutcome(res, log)
}

func toOutcome(res *lang.Result, log []string) outcome {
	o := outcome{state: res.Status.String(), outputs: res.Outputs, log: log, exc: res.Exception}
	if res.Failure != nil {
		o.errMsg, o.errSpan = res.Failure.Description, res.Failure.Span
	}
	return o
}

// runWithAnswers runs the case with its answers given up front, never suspending for them.
func runWithAnswers(t *testing.T, c *corpusCase) outcome {
	prog, err := lang.Parse(c.Code)
	if err != nil {
		return outcome{state: "failed"}
	}
	opts := caseOptions(t, c)
	opts.Answers = mustObject(t, c.Answers)
	res := lang.Start(context.Background(), prog, mustObject(t, c.Inputs), opts)
	return toOutcome(res, res.Log)
}

// plainEqual compares plain JSON exactly: numbers by their written form.
func plainEqual(t *testing.T, got map[string]lang.Value, want json.RawMessage) (bool, string) {
	b, err := lang.EncodePlainMap(got)
	if err != nil {
		return false, err.Error()
	}
	norm := func(raw []byte) any {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("bad JSON %s: %v", raw, err)
		}
		return v
	}
	return reflect.DeepEqual(norm(b), norm(want)), string(b)
}

func loadCases(t *testing.T) map[string]*corpusCase {
	files, err := filepath.Glob("testdata/cases/*.json")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*corpusCase{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c corpusCase
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = &c
	}
	return out
}

func TestCorpus(t *testing.T) {
	cases := loadCases(t)
	if len(cases) < 150 {
		t.Errorf("the corpus has %d cases, want at least 150", len(cases))
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := cases[n]
		t.Run(strings.TrimSuffix(n, ".json"), func(t *testing.T) {
			got := runSuspending(t, c)
			checkOutcome(t, c, got)
		})
	}
}

func checkOutcome(t *testing.T, c *corpusCase, got outcome) {
	t.Helper()
	exp := c.Expect
	if got.state != exp.State {
		t.Errorf("state %s, want %s (exception %+v, error %q)", got.state, exp.State, got.exc, got.errMsg)
	}
	if len(exp.Outputs) > 0 {
		if ok, b := plainEqual(t, got.outputs, exp.Outputs); !ok {
			t.Errorf("outputs %s, want %s", b, exp.Outputs)
		}
	}
	if exp.Log != nil && !reflect.DeepEqual(got.log, exp.Log) && !(len(got.log) == 0 && len(exp.Log) == 0) {
		t.Errorf("log %q, want %q", got.log, exp.Log)
	}
	if w := exp.Exception; w != nil {
		e := got.exc
		if e == nil {
			t.Fatalf("no exception, want %+v", w)
		}
		checkExc(t, string(e.Group), e.Message, e.Span, w)
		if len(w.Choices) > 0 {
			b, err := lang.EncodePlainMap(map[string]lang.Value{"c": lang.ListValue(e.Choices...)})
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := plainEqual(t, map[string]lang.Value{"c": lang.ListValue(e.Choices...)}, []byte(`{"c":`+string(w.Choices)+`}`)); !ok {
				t.Errorf("choices %s, want %s", b, w.Choices)
			}
		}
	}
	if w := exp.Error; w != nil {
		checkExc(t, "", got.errMsg, got.errSpan, w)
	}
}

func checkExc(t *testing.T, group, msg string, sp lang.Span, w *expectExc) {
	t.Helper()
	if w.Group != "" && group != w.Group {
		t.Errorf("group %s, want %s", group, w.Group)
	}
	if w.Message != "" && msg != w.Message {
		t.Errorf("message %q, want %q", msg, w.Message)
	}
	if w.MessagePrefix != "" && !strings.HasPrefix(msg, w.MessagePrefix) {
		t.Errorf("message %q, want prefix %q", msg, w.MessagePrefix)
	}
	if w.Location != nil && (sp.Start != w.Location.Start || sp.End != w.Location.End) {
		t.Errorf("location %d-%d, want %d-%d", sp.Start, sp.End, w.Location.Start, w.Location.End)
	}
}

// TestSuspendResumeMatchesAnswersUpFront: for every case that waits for
// guidance and is resolved by answers, suspending, serialising and resuming
// in a fresh interpreter gives what the same run gives with the answers up
// front.
func TestSuspendResumeMatchesAnswersUpFront(t *testing.T) {
	n := 0
	for name, c := range loadCases(t) {
		if len(c.Answers) == 0 || len(c.Guidance) > 0 {
			continue
		}
		n++
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			a := runSuspending(t, c)
			b := runWithAnswers(t, c)
			if a.state != b.state || !reflect.DeepEqual(a.log, b.log) {
				t.Fatalf("suspended run %s %q, answered run %s %q", a.state, a.log, b.state, b.log)
			}
			ab, _ := lang.EncodePlainMap(a.outputs)
			bb, _ := lang.EncodePlainMap(b.outputs)
			if !bytes.Equal(ab, bb) {
				t.Fatalf("suspended run outputs %s, answered run %s", ab, bb)
			}
		})
	}
	if n == 0 {
		t.Fatal("no case with answers")
	}
}
