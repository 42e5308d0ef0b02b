package store_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// An id is a valid AIP-122 resource id of 20 characters, and ids differ.
func TestNewID(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z][a-z2-7]{19}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := store.NewID()
		if !valid.MatchString(id) {
			t.Fatalf("id %q is not 20 lowercase base32 characters starting with a letter", id)
		}
		if seen[id] {
			t.Fatalf("id %q given twice", id)
		}
		seen[id] = true
	}
}

// An ordered id has New's form, ids differ, and one made later sorts
// after (by byte) one made a millisecond earlier or more.
func TestNewOrderedID(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z][a-z2-7]{19}$`)
	seen := map[string]bool{}
	at := []time.Time{time.Unix(0, 0), time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), time.Date(2799, 12, 31, 23, 59, 59, 0, time.UTC)}
	prev := ""
	for _, t0 := range at {
		for i := range 300 {
			now := t0.Add(time.Duration(i/3) * time.Millisecond)
			id := store.NewOrderedID(now)
			if !valid.MatchString(id) {
				t.Fatalf("id %q (at %v) is not 20 lowercase base32 characters starting with a letter", id, now)
			}
			if seen[id] {
				t.Fatalf("id %q given twice", id)
			}
			seen[id] = true
			if i%3 == 0 && id <= prev {
				t.Fatalf("id %q made at %v sorts before %q, made a millisecond earlier or more", id, now, prev)
			}
			prev = id
		}
	}
	// Clocks outside the range still give valid ids.
	for _, now := range []time.Time{{}, time.Unix(-1, 0), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if id := store.NewOrderedID(now); !valid.MatchString(id) {
			t.Errorf("id %q (at %v) is not 20 lowercase base32 characters starting with a letter", id, now)
		}
	}
}
