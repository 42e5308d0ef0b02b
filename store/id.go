package store

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strings"
	"time"
)

// The ids of stored records are made here, for every package: the store
// gives ids to the rows it creates, and books chooses a connection's id
// before it seals the connection's credentials (the id is part of what
// the seal binds).

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

// ordered is the alphabet of NewID in the order of its bytes: a string of
// its symbols sorts as the number they write.
const ordered = "234567abcdefghijklmnopqrstuvwxyz"

// orderedOffset is added to the milliseconds NewOrderedID writes so that its
// first symbol is a letter (index 6 or more of ordered) up to the top of
// the 45 bits, past the year 2800.
const orderedOffset = 6 << 40

// NewOrderedID returns an identifier of NewID's form (20 characters of
// [a-z2-7], the first a letter) whose first 9 characters write the
// milliseconds since the Unix epoch at now, the other 11 being random (55
// bits): ids made later sort after those made earlier (to the
// millisecond, as far as the clock goes forward). The store names runs
// with them, its most numerous rows: an id made now is inserted next to
// the last ones in the indexes keyed by it (the runs' primary key, the
// run history's), where a random id lands on a random page of each, so a
// transaction of new runs writes a few pages of those indexes, not one
// per run.
func NewOrderedID(now time.Time) string {
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
