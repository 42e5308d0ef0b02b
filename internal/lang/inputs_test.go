package lang_test

import (
	"testing"

	"github.com/proserun/prose/internal/lang"
)

// TestInputs: a program's inputs are the facts it reads and never sets,
// in the order it first reads them, typed where their uses tell.
func TestInputs(t *testing.T) {
	for _, tc := range []struct {
		code string
		want []string // name:kind, kind "?" when unknown
	}{
		{"get the total\nthe output is the total * 2\n", []string{"total:number"}},
		{"the output is the vendor + \" Ltd\"\n", []string{"vendor:?"}},
		{"if the due date is after 2026-01-31 then\n  say \"late\"\nadd the tax to the amount\nthe output is the amount\n",
			[]string{"due date:date", "tax:number", "amount:number"}},
		{"the total is 0\nprocess each item in the items as follows\n  add the item to the total\nthe output is the total\n", []string{"items:?"}},
		{"the count is 3\nsay \"the count is \" + the count\n", nil},
	} {
		prog, err := lang.Parse(tc.code)
		if err != nil {
			t.Fatalf("%q: %v", tc.code, err)
		}
		var got []string
		for _, in := range prog.Inputs() {
			k := "?"
			if in.Known {
				k = in.Kind.String()
			}
			got = append(got, in.Name+":"+k)
			if s := tc.code[in.Span.Start:in.Span.End]; s == "" {
				t.Errorf("%s: no span", in.Name)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: inputs %q, want %q", tc.code, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: inputs %q, want %q", tc.code, got, tc.want)
				break
			}
		}
	}
}
