package store

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"time"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random, URL-safe, lowercase identifier of 20 characters
// (100 random bits, base32). It starts with a letter so it is also a valid
// AIP-122 resource id.
func NewID() string {
	var b [13]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	s := idEncoding.EncodeToString(b[:])[:20]
	if s[0] < 'a' {
		// digits 2-7 map onto letters; keeps randomness, guarantees a letter.
		s = string('a'+(s[0]-'2')) + s[1:]
	}
	return s
}

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
