package lang_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/lang"
)

// TestUnquotedWordNote: an unquoted word read as text is noted in the
// run's history (Options.SayAt) at its statement, not in the log; a fact
// of that name is read without a note.
func TestUnquotedWordNote(t *testing.T) {
	src := "to describe a unit\n  the result is the unit\n\ndescribe where\n  the unit is metric\nthe output a is the above\nthe metric is \"kg\"\ndescribe where\n  the unit is metric\nthe output b is the above\n"
	prog, err := lang.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	var at []lang.Span
	res := lang.Start(context.Background(), prog, nil, lang.Options{SayAt: func(line string, sp lang.Span) {
		notes, at = append(notes, line), append(at, sp)
	}})
	if res.Status != lang.Completed || res.Outputs["output a"].String() != "metric" || res.Outputs["output b"].String() != "kg" {
		t.Fatalf("%v %v %v", res.Status, res.Outputs, res.Exception)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `metric is read as the text "metric"`) || len(res.Log) != 0 {
		t.Fatalf("notes %q, log %q: want one note, no log", notes, res.Log)
	}
	if got := src[at[0].Start:at[0].End]; got != "the unit is metric" {
		t.Errorf("the note stands at %q", got)
	}
}

// TestProcedureScopesReused: calls in a loop reuse the scopes of returned
// calls; recursion, aliases made inside a procedure and a run suspended
// inside a call and resumed (its state encoded and decoded) still give
// each call its own facts.
func TestProcedureScopesReused(t *testing.T) {
	src := `to count down a number
  use the number as the n
  if the n > 0 then
    count down the n - 1
    the result is the above + the n
  else
    the result is 0

to scale a value
  the result is the value * the factor

the total is 0
the items are 1, 2, 3, 4
process each item as follows
  count down the item
  add the above to the total
  scale the item
  add the above to the total
the output is the total
`
	prog, err := lang.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	res := lang.Start(context.Background(), prog, nil, lang.Options{})
	// the factor is asked for in the first call of scale, and again in each
	// later call (a procedure's facts are its own)
	for range 4 {
		if res.Status != lang.Suspended || res.Exception.Message != "Please provide the factor" {
			t.Fatalf("%v %v", res.Status, res.Exception)
		}
		res, err = lang.Resume(context.Background(), prog, res.State, lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"the factor": lang.Int(10)}}, lang.Options{})
		if err != nil {
			t.Fatal(err)
		}
	}
	// 1+3+6+10 from the count downs, (1+2+3+4)*10 from scale
	if res.Status != lang.Completed || res.Outputs["output"].String() != "120" {
		t.Fatalf("%v %v %v", res.Status, res.Outputs, res.Exception)
	}
}

// TestStandardSignatures: every standard procedure's inputs are the nouns
// its sentence means (a signature like `sort a list alphabetically` would
// read one input named "list alphabetically" and match any `sort X`).
func TestStandardSignatures(t *testing.T) {
	nouns := map[string]bool{"text": true, "separator": true, "list": true, "target": true, "replacement": true,
		"number": true, "length": true, "field": true, "row": true, "new row": true, "table": true}
	for _, p := range lang.StandardProcedures() {
		if len(p.Inputs) == 0 {
			t.Errorf("%s: no inputs", p.ID)
		}
		for _, in := range p.Inputs {
			if !nouns[in] {
				t.Errorf("%s (%s): input %q", p.ID, p.Signature, in)
			}
		}
		if !lang.IsStandardProcedure(p.ID) || p.Example == "" || p.Description == "" {
			t.Errorf("%s: not described", p.ID)
		}
	}
}
