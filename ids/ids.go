// Package ids makes the random identifiers of stored records and checks
// and makes request ids (x-request-id). It imports
// nothing of ours, so any package may use it: the store gives ids to the
// rows it creates, and books chooses a connection's id before it seals the
// connection's credentials (the id is part of what the seal binds).
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
)

var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// New returns a random, URL-safe, lowercase identifier of 20 characters
// (100 random bits, base32). It starts with a letter so it is also a valid
// AIP-122 resource id.
func New() string {
	var b [13]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	s := encoding.EncodeToString(b[:])[:20]
	if s[0] < 'a' {
		// digits 2-7 map onto letters; keeps randomness, guarantees a letter.
		s = string('a'+(s[0]-'2')) + s[1:]
	}
	return s
}

// ValidRequestID reports whether a client-supplied request id
// (x-request-id) is accepted: 1 to 128 characters of [A-Za-z0-9._:-].
func ValidRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// NewRequestID returns a fresh random request id (32 hex digits), for a
// request that brought none.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
