package console

import (
	"strings"
	"testing"
)

// TestMarkRan: the lines a run went through, from the lines with notes: a
// branch not taken and what follows the line a run waits at stay dimmed.
func TestMarkRan(t *testing.T) {
	for _, tc := range []struct {
		code  string
		noted []int // 0-based lines with notes
		done  bool
		want  string // one letter a line: r ran, d dimmed, _ blank
	}{
		{"a\nif x then\n  b\nelse\n  c\nd\n", []int{2, 5}, false, "rrrrdr"},
		{"a\nb\nc\nd\n", []int{1}, false, "rrdd"},
		{"a\nif x then\n  b\n\nd\n", []int{}, true, "rrd_r"},
		{"to f a thing\n  g\n\nh\nf h\n", []int{1, 4}, false, "rr_rr"},
	} {
		raw := strings.Split(strings.TrimRight(tc.code, "\n"), "\n")
		lines := make([]progLine, len(raw))
		for i, l := range raw {
			lines[i].Blank = strings.TrimSpace(l) == ""
		}
		for _, i := range tc.noted {
			lines[i].Notes = []lineNote{{Kind: "fact"}}
		}
		markRan(lines, raw, tc.done)
		var got strings.Builder
		for _, l := range lines {
			switch {
			case l.Blank:
				got.WriteByte('_')
			case l.Ran:
				got.WriteByte('r')
			default:
				got.WriteByte('d')
			}
		}
		if got.String() != tc.want {
			t.Errorf("%q noted %v: %s, want %s", tc.code, tc.noted, got.String(), tc.want)
		}
	}
}

// TestHighlight: keywords, texts and numbers of a line, the rest as is.
func TestHighlight(t *testing.T) {
	var got []string
	for _, tok := range highlight(`say "total: " + the total * 1.5`) {
		got = append(got, tok.Class+":"+tok.Text)
	}
	want := []string{"k:say", ": ", `s:"total: "`, ": + the total * ", "n:1.5"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%q, want %q", got, want)
	}
}
