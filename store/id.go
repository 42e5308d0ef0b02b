package store

import (
	"strings"
	"time"

	"github.com/proserun/prose/ids"
)

// NewID returns a random, URL-safe, lowercase identifier of 20 characters
// (100 random bits, base32) that starts with a letter: ids.New, the one
// generator of the ids of stored records.
func NewID() string { return ids.New() }

// NewOrderedID returns a new id of NewID's form that sorts after the ids
// made before now (ids.NewOrdered): the ids of runs, inserted in order
// into the indexes keyed by them.
func NewOrderedID(now time.Time) string { return ids.NewOrdered(now) }

// Time normalises t the way the store keeps it: UTC, microsecond precision.
func Time(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// LastSegment returns the part of a resource name after its last '/', or s
// itself when s has no '/'. Filters accept either ids or full names.
func LastSegment(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}
