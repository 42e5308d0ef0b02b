package lang_test

import (
	"strings"
	"testing"

	"github.com/proserun/prose/internal/lang"
)

// TestWarningsOutputInBlock: an output set only inside a block is warned
// about at its line; one also set at the top level, or set by a one-line
// if at the top level, is not.
func TestWarningsOutputInBlock(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string // the warned statement's text, "" for none
	}{
		{"if true then\n  the output flag is 1\n", "the output flag is 1"},
		{"to f a x\n  the output y is 2\nf 1\n", "the output y is 2"},
		{"the output flag is 0\nif true then\n  the output flag is 1\n", ""},
		{"if true then the output flag is 1\n", ""},
		{"the items are 1, 2\nprocess each item as follows\n  set the output last to the item\n", "set the output last to the item"},
	} {
		prog, err := lang.Parse(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		ws := prog.Warnings()
		switch {
		case tc.want == "" && len(ws) > 0:
			t.Errorf("%q: warnings %v, want none", tc.src, ws)
		case tc.want != "" && len(ws) != 1:
			t.Errorf("%q: warnings %v, want one", tc.src, ws)
		case tc.want != "":
			if got := tc.src[ws[0].Span.Start:ws[0].Span.End]; got != tc.want || !strings.Contains(ws[0].Msg, "no output") || ws[0].Line < 2 {
				t.Errorf("%q: warning %v at %q, want at %q", tc.src, ws[0], got, tc.want)
			}
		}
	}
}
