// Package ids makes the random identifiers of stored records and checks
// and makes request ids (x-request-id). It imports
// nothing of ours, so any package may use it: the store gives ids to the
// rows it creates, and books chooses a connection's id before it seals the
// connection's credentials (the id is part of what the seal binds).
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"time"
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

// ordered is the alphabet of New in the order of its bytes: a string of
// its symbols sorts as the number they write.
const ordered = "234567abcdefghijklmnopqrstuvwxyz"

// orderedOffset is added to the milliseconds NewOrdered writes so that its
// first symbol is a letter (index 6 or more of ordered) up to the top of
// the 45 bits, past the year 2800.
const orderedOffset = 6 << 40

// NewOrdered returns an identifier of New's form (20 characters of
// [a-z2-7], the first a letter) whose first 9 characters write the
// milliseconds since the Unix epoch at now, the other 11 being random (55
// bits): ids made later sort after those made earlier (to the
// millisecond, as far as the clock goes forward). The store names runs
// with them, its most numerous rows: an id made now is inserted next to
// the last ones in the indexes keyed by it (the runs' primary key, the
// run history's), where a random id lands on a random page of each, so a
// transaction of new runs writes a few pages of those indexes, not one
// per run.
func NewOrdered(now time.Time) string {
	var b [20]byte
	// Clamped to the 45 bits' range, so that the first symbol stays a
	// letter whatever the clock says (a zero time, a date past 2800).
	ms := min(max(now.UnixMilli(), 0), 1<<45-1-orderedOffset)
	v := uint64(ms) + orderedOffset
	for i := 8; i >= 0; i-- {
		b[i] = ordered[v&31]
		v >>= 5
	}
	var r [8]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24+).
	x := binary.LittleEndian.Uint64(r[:])
	for i := 9; i < 20; i++ {
		b[i] = ordered[x&31]
		x >>= 5
	}
	return string(b[:])
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
