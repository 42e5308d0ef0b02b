package store

import (
	"strconv"
	"strings"

	"github.com/gosimple/unidecode"
)

// MaxIDLength is the longest resource id (AIP-122: 1-63 characters).
const MaxIDLength = 63

// SlugFallback is the slug of a name that has nothing to slug (no letter
// or digit even once transliterated): its ids are automation, automation-2, ….
const SlugFallback = "automation"

// Slug is a readable resource id made of a display name: transliterated to
// ASCII ("Größe" → "grosse", "Счета" → "scheta"), lower case, runs of other
// characters turned into one "-", at most MaxIDLength characters, starting
// with a letter (a name starting with a digit gets SlugFallback before
// it) and not ending with "-". A name with nothing to slug gives
// SlugFallback.
func Slug(displayName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(unidecode.Unidecode(displayName)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
	}
	s := b.String()
	switch {
	case s == "":
		return SlugFallback
	case s[0] < 'a':
		s = SlugFallback + "-" + s
	}
	return trimID(s, MaxIDLength)
}

// SlugCandidate is the n-th id to try for a slug (n from 1): the slug
// itself, then slug-2, slug-3, …, the slug shortened so that the suffix
// fits MaxIDLength.
func SlugCandidate(slug string, n int) string {
	if n <= 1 {
		return slug
	}
	suffix := "-" + strconv.Itoa(n)
	return trimID(slug, MaxIDLength-len(suffix)) + suffix
}

// trimID cuts s to at most n bytes (s is ASCII) and drops trailing dashes.
func trimID(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "-")
}
