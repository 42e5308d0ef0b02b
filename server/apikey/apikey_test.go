package apikey

import (
	"strings"
	"testing"
	"time"
)

func TestGenerateParseVerify(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		k := Generate()
		if len(k.Value) != Len || !strings.HasPrefix(k.Value, Scheme) {
			t.Fatalf("bad value %q", k.Value)
		}
		if seen[k.Value] || seen[k.Prefix] {
			t.Fatalf("duplicate key or prefix")
		}
		seen[k.Value], seen[k.Prefix] = true, true
		p, err := Parse(k.Value)
		if err != nil || p != k.Prefix {
			t.Fatalf("Parse(%q) = %q, %v; want %q", k.Value, p, err, k.Prefix)
		}
		if !Verify(k.Value, k.Hash) {
			t.Fatal("Verify failed on own hash")
		}
		if !Looks(k.Value) {
			t.Fatal("Looks false")
		}
	}
}

func TestParseRejects(t *testing.T) {
	k := Generate().Value
	flip := func(i int) string {
		b := []byte(k)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	tests := map[string]string{
		"empty":           "",
		"truncated":       k[:len(k)-1],
		"longer":          k + "a",
		"other scheme":    "xxxxx_" + k[6:],
		"typo in secret":  flip(PrefixLen + 3),
		"typo in public":  flip(len(Scheme) + 2),
		"typo in sum":     flip(Len - 1),
		"bad char":        k[:PrefixLen] + "-" + k[PrefixLen+1:],
		"no separator":    k[:PrefixLen-1] + "x" + k[PrefixLen:],
		"bearer prefixed": "Bearer " + k[7:],
	}
	for name, v := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(v); err == nil {
				t.Errorf("Parse(%q) accepted", v)
			}
		})
	}
	other := Generate()
	if Verify(k, other.Hash) {
		t.Error("Verify accepted another key's hash")
	}
}

func TestExpiration(t *testing.T) {
	now := time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"7d", now.Add(7 * 24 * time.Hour), true},
		{"30d", now.Add(30 * 24 * time.Hour), true},
		{"60d", now.Add(60 * 24 * time.Hour), true},
		{"90d", now.Add(90 * 24 * time.Hour), true},
		{"180d", now.Add(180 * 24 * time.Hour), true},
		{"1y", time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), true},
		{"1d", time.Time{}, false},
		{"", time.Time{}, false},
		{"365d", time.Time{}, false},
	}
	for _, tt := range tests {
		d, err := ParseExpiration(tt.in)
		if (err == nil) != tt.ok {
			t.Fatalf("ParseExpiration(%q) err = %v", tt.in, err)
		}
		if tt.ok && !ExpireTime(now, d).Equal(tt.want) {
			t.Errorf("%s: got %v want %v", tt.in, ExpireTime(now, d), tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Generate().Value)
	f.Add("prose_")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err == nil && (!strings.HasPrefix(s, p) || len(p) != PrefixLen) {
			t.Fatalf("bad prefix %q of %q", p, s)
		}
	})
}

// The checksum of keys already given out must not change: checksum (no
// math/big) equals the base62 of the CRC's 4 big-endian bytes that keys
// were made with, and a key made before keeps parsing.
func TestChecksumUnchanged(t *testing.T) {
	for _, v := range []uint32{0, 1, 61, 62, 62 * 62, 1<<31 - 1, 1 << 31, 0xdeadbeef, 1<<32 - 1} {
		var got [ChecksumLen]byte
		checksumInto(&got, v)
		if want := base62([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}, ChecksumLen); string(got[:]) != want {
			t.Errorf("checksum of %#x = %s, want %s", v, got[:], want)
		}
	}
	// A key value whose checksum was computed with math/big (base62).
	const old = "prose_Ab3dE6gH9k_0123456789abcdefghijABCDEFGHIJ0123456789abc4Nz886"
	if p, err := Parse(old); err != nil || p != "prose_Ab3dE6gH9k_" {
		t.Fatalf("Parse(%q) = %q, %v", old, p, err)
	}
}
