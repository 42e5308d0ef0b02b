package store

import (
	"errors"
	"testing"
)

func TestParseOrderBy(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"", "create_time desc", false},
		{"  ", "create_time desc", false},
		{"title", "title", false},
		{"title asc", "title", false},
		{"title desc, create_time", "title desc, create_time", false},
		{" update_time   desc ,title ", "update_time desc, title", false},
		{"name", "", true},
		{"title descending", "", true},
		{"title desc desc", "", true},
		{"title,", "", true},
		{"title, title desc", "", true},
		{"title DESC", "", true},
	} {
		got, err := ParseOrderBy(tc.in, WorkspaceOrdering)
		if tc.err {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("ParseOrderBy(%q) = %v, %v; want ErrInvalidArgument", tc.in, got, err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("ParseOrderBy(%q) = %q, %v; want %q", tc.in, got.String(), err, tc.want)
		}
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if len(id) != 20 || id[0] < 'a' || id[0] > 'z' {
			t.Fatalf("NewID() = %q", id)
		}
		for _, c := range id {
			if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
				t.Fatalf("NewID() = %q has %q", id, c)
			}
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}
