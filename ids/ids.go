// Package ids makes the random identifiers of stored records. It imports
// nothing of ours, so any package may use it: the store gives ids to the
// rows it creates, and books chooses a connection's id before it seals the
// connection's credentials (the id is part of what the seal binds).
package ids

import (
	"crypto/rand"
	"encoding/base32"
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
