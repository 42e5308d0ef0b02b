package lang

import (
	"context"
	"slices"
	"testing"
)

// TestVisitReportsTheStatementsRun checks Options.Visit against
// Program.Statements: every statement run is one of the program's, the
// branch not taken and a procedure never called are not visited, and
// replacement code given as guidance is not reported.
func TestVisitReportsTheStatementsRun(t *testing.T) {
	src := "to double an amount\n  the result is the amount * 2\n\nto halve an amount\n  the result is the amount / 2\n\nget the total\nif the total is greater than 10 then\n  double the total\n  the output big is the above\nelse\n  the output big is false\nsay \"done\"\n"
	prog, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	all := map[Span]bool{}
	for _, sp := range prog.Statements() {
		all[sp] = true
	}
	line := func(sp Span) string { return src[sp.Start:sp.End] }
	var texts []string
	for sp := range all {
		texts = append(texts, line(sp))
	}
	slices.Sort(texts)
	want := []string{"double the total", "get the total", "if the total is greater than 10 then", "say \"done\"",
		"the output big is false", "the output big is the above", "the result is the amount * 2", "the result is the amount / 2"}
	if !slices.Equal(texts, want) {
		t.Fatalf("statements:\n got %q\nwant %q", texts, want)
	}
	var visited []string
	opts := Options{Visit: func(at Span) {
		if !all[at] {
			t.Errorf("visited %v, not a statement of the program", at)
		}
		visited = append(visited, line(at))
	}}
	res := Start(context.Background(), prog, nil, opts)
	if res.Status != Suspended {
		t.Fatalf("status %v, want suspended on the total", res.Status)
	}
	res, err = Resume(context.Background(), prog, res.State, Resolution{Kind: ReplaceStep, Code: "the total is 20"}, opts)
	if err != nil || res.Status != Completed {
		t.Fatalf("resume: %v %v", res, err)
	}
	wantVisited := []string{"get the total", "if the total is greater than 10 then", "double the total",
		"the result is the amount * 2", "the output big is the above", "say \"done\""}
	if !slices.Equal(visited, wantVisited) {
		t.Fatalf("visited:\n got %q\nwant %q", visited, wantVisited)
	}
}
