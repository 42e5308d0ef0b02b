package lang_test

import (
	"context"
	"testing"

	"github.com/proserun/prose/internal/lang"
)

// TestSetAt: Options.SetAt hears each fact a statement sets, by the name
// the code gives it, with the statement's span; `the above` is not a fact.
func TestSetAt(t *testing.T) {
	src := "the total is 120.50\nadd 1 to the total\nthe invoice's vendor is \"Acme\"\nthe output is the total\n"
	prog, err := lang.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	type set struct{ fact, value, code string }
	var got []set
	res := lang.Start(context.Background(), prog, nil, lang.Options{SetAt: func(fact string, v lang.Value, sp lang.Span) {
		got = append(got, set{fact, v.String(), src[sp.Start:sp.End]})
	}})
	if res.Status != lang.Completed {
		t.Fatalf("%v %v", res.Status, res.Exception)
	}
	want := []set{
		{"total", "120.50", "the total is 120.50"},
		{"total", "121.50", "add 1 to the total"},
		{"invoice's vendor", "Acme", `the invoice's vendor is "Acme"`},
		{"output", "121.50", "the output is the total"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("set %d: got %q, want %q", i, got[i], want[i])
		}
	}
}
