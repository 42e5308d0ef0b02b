package agent

import "testing"

func TestReplacement(t *testing.T) {
	for _, tc := range []struct {
		text, code string
		ok         bool
	}{
		{"replace it with: the total is 5", "the total is 5", true},
		{"Replace the step with the total is 5", "the total is 5", true},
		{"instead: the total is 5", "the total is 5", true},
		{"replace it with:\n```prose\nthe a is 1\nthe b is 2\n```", "the a is 1\nthe b is 2", true},
		{"replace with `the a is 1`", "the a is 1", true},
		{"replace it with:", "", false},
		{"replace without asking", "", false},
		{"instead of that, skip", "", false},
		{"the total is 5", "", false},
	} {
		code, ok := replacement(tc.text)
		if code != tc.code || ok != tc.ok {
			t.Errorf("replacement(%q) = %q, %v; want %q, %v", tc.text, code, ok, tc.code, tc.ok)
		}
	}
}
