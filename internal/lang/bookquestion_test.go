package lang_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/lang"
)

var vatProc = lang.BookProcedure{Book: "vat@1", Name: "get_the_vat_on_an_amount", Signature: "get the vat on an amount (the vat)"}

// TestBookQuestionAnsweredCallsAgain: a book's question suspends the run
// with a question exception; each answer makes the run call the book again
// at the same statement (same journal index) with every answer given so
// far; a call that succeeded before the question is not made again; the
// state keeps the answers across Resume.
func TestBookQuestionAnsweredCallsAgain(t *testing.T) {
	var seen []map[string]lang.Value
	var idx []int
	books := &fakeBooks{t: t, procs: []lang.BookProcedure{emailProc, vatProc}}
	books.fn = func(p lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
		if p.Name == emailProc.Name {
			return map[string]lang.Value{"message id": lang.Text("m-1")}, nil
		}
		return nil, errors.New("unused")
	}
	ctxBooks := &answerBooks{fakeBooks: books, fn: func(ctx context.Context, p lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
		a := lang.BookAnswers(ctx)
		seen = append(seen, maps.Clone(a))
		i, _ := lang.JournalIndex(ctx)
		idx = append(idx, i)
		country, ok := a["country"]
		if !ok {
			return nil, &lang.BookQuestion{ID: "country", Prompt: "Which country's VAT applies?", Choices: []lang.Value{lang.Text("DE"), lang.Text("NL")}, Type: "text"}
		}
		if country.AsText() == "NL" {
			if _, ok := a["reduced"]; !ok {
				return nil, &lang.BookQuestion{ID: "reduced", Prompt: "Is it the reduced rate?", Type: "boolean"}
			}
			return map[string]lang.Value{"vat": lang.Num(lang.MustNumber("9.00"))}, nil
		}
		return map[string]lang.Value{"vat": lang.Num(lang.MustNumber("19.00"))}, nil
	}}
	prog := parse(t, "send an email to \"ana@example.com\"\nthe output id is the above\nget the vat on the amount\nthe output vat is the above\n")
	opts := lang.Options{Books: ctxBooks}
	res := lang.Start(context.Background(), prog, map[string]lang.Value{"amount": lang.Int(100)}, opts)
	x := res.Exception
	if res.Status != lang.Suspended || x.Group != lang.GroupMissingValues || x.Question != "Which country's VAT applies?" ||
		len(x.Choices) != 2 || x.AnswerType != "text" || x.Message != x.Question {
		t.Fatalf("got %v %+v", res.Status, x)
	}
	res, err := lang.Resume(context.Background(), prog, res.State, lang.Resolution{Kind: lang.Answer, Answer: lang.Text("NL")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != lang.Suspended || res.Exception.Question != "Is it the reduced rate?" || res.Exception.AnswerType != "boolean" {
		t.Fatalf("after the first answer: %v %+v", res.Status, res.Exception)
	}
	res, err = lang.Resume(context.Background(), prog, res.State, lang.Resolution{Kind: lang.Answer, Answer: lang.Bool(true)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != lang.Completed || plain(t, res.Outputs) != `{"output id":"m-1","output vat":9.00}` {
		t.Fatalf("got %v %v %+v", res.Status, res.Outputs, res.Exception)
	}
	if len(books.calls) != 1 {
		t.Errorf("the email was sent %d times, want once", len(books.calls))
	}
	if len(seen) != 3 || len(seen[0]) != 0 || plain(t, seen[1]) != `{"country":"NL"}` || plain(t, seen[2]) != `{"country":"NL","reduced":true}` {
		t.Errorf("answers the book saw: %v", seen)
	}
	if len(idx) != 3 || idx[0] != idx[1] || idx[1] != idx[2] {
		t.Errorf("journal indexes %v, want the same for every repetition of the call", idx)
	}

	// Skipping the question forgets its answers: the next call of the
	// book starts without them.
	seen = nil
	prog2 := parse(t, "get the vat on the amount\nget the vat on the amount\nthe output vat is the above\n")
	res = lang.Start(context.Background(), prog2, map[string]lang.Value{"amount": lang.Int(100)}, opts)
	res, _ = lang.Resume(context.Background(), prog2, res.State, lang.Resolution{Kind: lang.Answer, Answer: lang.Text("NL")}, opts)
	res, err = lang.Resume(context.Background(), prog2, res.State, lang.Resolution{Kind: lang.Skip}, opts)
	if err != nil || res.Status != lang.Suspended || res.Exception.Question != "Which country's VAT applies?" {
		t.Fatalf("after skip: %v %v %+v", err, res.Status, res.Exception)
	}
	if len(seen) != 3 || len(seen[2]) != 0 {
		t.Errorf("answers after skip: %v", seen)
	}
	// An ask's answer is still `the answer` (not given to a book).
	res = lang.Start(context.Background(), parse(t, "ask \"Go?\"\nthe output go is the answer\n"), nil, opts)
	res, err = lang.Resume(context.Background(), parse(t, "ask \"Go?\"\nthe output go is the answer\n"), res.State, lang.Resolution{Kind: lang.Answer, Answer: lang.Text("yes")}, opts)
	if err != nil || res.Status != lang.Completed || plain(t, res.Outputs) != `{"output go":"yes"}` {
		t.Errorf("ask: %v %v", err, res)
	}
}

// TestBookQuestionMalformed: a question without an id or prompt is the
// book's fault, a user error.
func TestBookQuestionMalformed(t *testing.T) {
	b := &answerBooks{fakeBooks: &fakeBooks{t: t, procs: []lang.BookProcedure{vatProc}}, fn: func(context.Context, lang.BookProcedure, map[string]lang.Value) (map[string]lang.Value, error) {
		return nil, &lang.BookQuestion{Prompt: "Which?"}
	}}
	res := lang.Start(context.Background(), parse(t, "get the vat on the amount\n"), map[string]lang.Value{"amount": lang.Int(1)}, lang.Options{Books: b})
	if res.Status != lang.Suspended || res.Exception.Group != lang.GroupUserSystemError || !strings.Contains(res.Exception.Message, "without an id") {
		t.Errorf("got %v %+v", res.Status, res.Exception)
	}
}

func TestCheckAnswer(t *testing.T) {
	for _, c := range []struct {
		typ string
		v   lang.Value
		ok  bool
	}{
		{"", lang.Int(1), true}, {"text", lang.Text("a"), true}, {"text", lang.Int(1), false},
		{"number", lang.Int(1), true}, {"number", lang.Text("1"), false}, {"boolean", lang.Bool(true), true},
		{"date", lang.Text("2026-01-02"), true}, {"date", lang.Int(3), false},
	} {
		if err := lang.CheckAnswer(c.typ, c.v); (err == nil) != c.ok {
			t.Errorf("CheckAnswer(%q, %v) = %v", c.typ, c.v, err)
		}
	}
	if !lang.IsAnswerType("time") || lang.IsAnswerType("colour") {
		t.Error("IsAnswerType")
	}
}

// answerBooks routes the vat procedure to fn (which sees the context) and
// the rest to the fake books.
type answerBooks struct {
	*fakeBooks
	fn func(ctx context.Context, p lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error)
}

func (b *answerBooks) Call(ctx context.Context, p lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	if p.Name == vatProc.Name {
		return b.fn(ctx, p, in)
	}
	return b.fakeBooks.Call(ctx, p, in)
}

// TestExpectedAnswerType: a book's question's type, else the type every
// choice has, else "" (any value).
func TestExpectedAnswerType(t *testing.T) {
	n := lang.Num(lang.MustNumber("1"))
	for _, tc := range []struct {
		name string
		x    *lang.Exception
		want string
	}{
		{"none", nil, ""},
		{"missing fact", &lang.Exception{Fact: "the invoice total"}, ""},
		{"question's type", &lang.Exception{Question: "q", AnswerType: "date"}, "date"},
		{"question's type over choices", &lang.Exception{Question: "q", AnswerType: "text", Choices: []lang.Value{n}}, "text"},
		{"number choices", &lang.Exception{Question: "q", Choices: []lang.Value{n, lang.Num(lang.MustNumber("2.5"))}}, "number"},
		{"text choices", &lang.Exception{Question: "q", Choices: []lang.Value{lang.Text("yes"), lang.Text("no")}}, "text"},
		{"boolean choices", &lang.Exception{Question: "q", Choices: []lang.Value{lang.Bool(true), lang.Bool(false)}}, "boolean"},
		{"mixed choices", &lang.Exception{Question: "q", Choices: []lang.Value{lang.Text("1"), n}}, ""},
		{"no choices", &lang.Exception{Question: "q"}, ""},
	} {
		if got := lang.ExpectedAnswerType(tc.x); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
