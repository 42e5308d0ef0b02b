// Package apikey makes and checks Prose API key values.
//
// A key value looks like
//
//		prose_Ab3dE6gH9k_<43 base62 characters of secret><6 base62 characters of checksum>
//
//	  - "prose_" makes a leaked key recognisable to secret scanners;
//	  - the 10 characters after it are random and public: with the "prose_"
//	    they form the key's prefix, stored in clear for lookup and display;
//	  - the secret is 32 bytes of crypto/rand, base62-encoded (43 characters);
//	  - the checksum is the CRC-32 (IEEE) of everything before it,
//	    base62-encoded on 6 characters, so a typo or a truncated copy is
//	    rejected without a database lookup, and scanners can tell a real key
//	    from random text.
//
// Only Hash(value) (SHA-256: the secret has 256 bits of entropy, so a slow
// password hash adds nothing) is stored; Verify compares in constant time.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash/crc32"
	"math/big"
	"strings"
	"time"
)

const (
	// Scheme starts every key value.
	Scheme = "prose_"
	// PublicLen is the length of the random public part after Scheme.
	PublicLen = 10
	// SecretLen is the length of the base62 secret (32 random bytes).
	SecretLen = 43
	// ChecksumLen is the length of the base62 CRC-32.
	ChecksumLen = 6
	// PrefixLen is the length of a key's prefix: Scheme, public part, "_".
	PrefixLen = len(Scheme) + PublicLen + 1
	// Len is the length of a key value.
	Len = PrefixLen + SecretLen + ChecksumLen
	// SecretBytes is the number of random bytes in a key.
	SecretBytes = 32
)

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ErrMalformed reports a value that is not a well-formed key (wrong shape or
// a checksum mismatch).
var ErrMalformed = errors.New("malformed API key")

// Key is a freshly generated key.
type Key struct {
	// Value is shown once to the user and never stored.
	Value string
	// Prefix is public: stored in clear, unique, used for lookup.
	Prefix string
	// Hash is what is stored.
	Hash []byte
}

// Generate makes a new key from crypto/rand.
func Generate() Key {
	var pub [PublicLen]byte
	for i := range pub {
		pub[i] = alphabet[randIndex()]
	}
	var secret [SecretBytes]byte
	_, _ = rand.Read(secret[:]) // never fails (Go 1.24+)
	prefix := Scheme + string(pub[:]) + "_"
	body := prefix + base62(secret[:], SecretLen)
	value := body + checksum(body)
	return Key{Value: value, Prefix: prefix, Hash: Hash(value)}
}

func randIndex() int {
	// Rejection sampling keeps the distribution uniform over 62 symbols.
	var b [1]byte
	for {
		_, _ = rand.Read(b[:])
		if v := int(b[0]); v < 248 { // 248 = 4*62
			return v % len(alphabet)
		}
	}
}

// base62 encodes b as a big-endian number, left-padded with '0' to n digits.
func base62(b []byte, n int) string {
	x := new(big.Int).SetBytes(b)
	s := x.Text(62) // big uses 0-9a-zA-Z; map to our alphabet for stable output
	out := make([]byte, 0, n)
	for range n - len(s) {
		out = append(out, '0')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			c = alphabet[10+c-'a']
		case c >= 'A' && c <= 'Z':
			c = alphabet[36+c-'A']
		}
		out = append(out, c)
	}
	return string(out)
}

// checksum is the base62 CRC-32 of body: base62 of its 4 big-endian
// bytes, on ChecksumLen digits (2^32 < 62^6), computed without math/big
// (Parse runs on every authenticated call).
func checksum(body string) string {
	var out [ChecksumLen]byte
	checksumInto(&out, crc32.ChecksumIEEE([]byte(body)))
	return string(out[:])
}

func checksumInto(out *[ChecksumLen]byte, v uint32) {
	for i := ChecksumLen - 1; i >= 0; i-- {
		out[i] = alphabet[v%62]
		v /= 62
	}
}

func isBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Parse checks the shape and checksum of value and returns its prefix.
// Errors wrap ErrMalformed; the value is never echoed in them.
func Parse(value string) (prefix string, err error) {
	if len(value) != Len || !strings.HasPrefix(value, Scheme) || value[PrefixLen-1] != '_' {
		return "", fmt.Errorf("%w: expected %s followed by %d characters", ErrMalformed, Scheme, Len-len(Scheme))
	}
	pub := value[len(Scheme) : PrefixLen-1]
	rest := value[PrefixLen:]
	if !isBase62(pub) || !isBase62(rest) {
		return "", fmt.Errorf("%w: unexpected character", ErrMalformed)
	}
	body, sum := value[:Len-ChecksumLen], value[Len-ChecksumLen:]
	var want [ChecksumLen]byte
	checksumInto(&want, crc32.ChecksumIEEE([]byte(body)))
	if subtle.ConstantTimeCompare(want[:], []byte(sum)) != 1 {
		return "", fmt.Errorf("%w: checksum mismatch (a typo or a truncated key?)", ErrMalformed)
	}
	return value[:PrefixLen], nil
}

// Looks reports whether s has the shape of a Prose key with a valid checksum
// (for scanners).
func Looks(s string) bool {
	_, err := Parse(s)
	return err == nil
}

// Hash is the stored form of a key value.
func Hash(value string) []byte {
	h := sha256.Sum256([]byte(value))
	return h[:]
}

// Verify reports, in constant time, whether value hashes to hash.
func Verify(value string, hash []byte) bool {
	return subtle.ConstantTimeCompare(Hash(value), hash) == 1
}

// Expiration choices. The seeds allow exactly these.
var expirations = []struct {
	flag string
	d    time.Duration
}{
	{"7d", 7 * 24 * time.Hour},
	{"30d", 30 * 24 * time.Hour},
	{"60d", 60 * 24 * time.Hour},
	{"90d", 90 * 24 * time.Hour},
	{"180d", 180 * 24 * time.Hour},
	{"1y", 365 * 24 * time.Hour},
}

// ExpirationChoices lists the accepted spellings of ParseExpiration.
func ExpirationChoices() []string {
	out := make([]string, len(expirations))
	for i, e := range expirations {
		out[i] = e.flag
	}
	return out
}

// ParseExpiration reads one of 7d, 30d, 60d, 90d, 180d, 1y.
func ParseExpiration(s string) (time.Duration, error) {
	for _, e := range expirations {
		if e.flag == s {
			return e.d, nil
		}
	}
	return 0, fmt.Errorf("expiration %q: want one of %s", s, strings.Join(ExpirationChoices(), ", "))
}

// ExpireTime returns when a key created at now with lifetime d expires. A
// year is a calendar year (now + 1 year), days are 24-hour days.
func ExpireTime(now time.Time, d time.Duration) time.Time {
	if d == 365*24*time.Hour {
		return now.AddDate(1, 0, 0)
	}
	return now.Add(d)
}
