package ids_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/proserun/prose/ids"
)

// An id is a valid AIP-122 resource id of 20 characters, and ids differ.
func TestNew(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z][a-z2-7]{19}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := ids.New()
		if !valid.MatchString(id) {
			t.Fatalf("id %q is not 20 lowercase base32 characters starting with a letter", id)
		}
		if seen[id] {
			t.Fatalf("id %q given twice", id)
		}
		seen[id] = true
	}
}

// A request id is 1 to 128 of [A-Za-z0-9._:-]; a made one is accepted.
func TestRequestIDs(t *testing.T) {
	for id, want := range map[string]bool{
		"":                       false,
		"abc-DEF_1.2:3":          true,
		strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false,
		"has space":              false,
		"slash/no":               false,
		"é":                      false,
	} {
		if got := ids.ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", id, got, want)
		}
	}
	if id := ids.NewRequestID(); len(id) != 32 || !ids.ValidRequestID(id) {
		t.Errorf("NewRequestID() = %q", id)
	}
}
