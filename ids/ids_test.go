package ids_test

import (
	"regexp"
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
