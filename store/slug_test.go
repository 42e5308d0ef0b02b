package store_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/proserun/prose/store"
)

var idPattern = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"Invoices", "invoices"},
		{"  Pay the  invoices! ", "pay-the-invoices"},
		{"Größe & Maß", "grosse-mass"},
		{"Счета", "scheta"},
		{"café_crème--2024", "cafe-creme-2024"},
		{"2024 invoices", "automation-2024-invoices"},
		{"!!!", store.SlugFallback},
		{"", store.SlugFallback},
		{"🙂", store.SlugFallback},
		{strings.Repeat("ab ", 40), strings.TrimSuffix(strings.Repeat("ab-", 21), "-")},
	} {
		got := store.Slug(tc.name)
		if got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if !idPattern.MatchString(got) {
			t.Errorf("Slug(%q) = %q, not a resource id", tc.name, got)
		}
	}
}

func TestSlugCandidate(t *testing.T) {
	long := store.Slug(strings.Repeat("x", 100))
	for _, tc := range []struct {
		slug string
		n    int
		want string
	}{
		{"invoices", 1, "invoices"},
		{"invoices", 2, "invoices-2"},
		{"invoices", 17, "invoices-17"},
		{long, 1, strings.Repeat("x", 63)},
		{long, 12, strings.Repeat("x", 60) + "-12"},
	} {
		got := store.SlugCandidate(tc.slug, tc.n)
		if got != tc.want || !idPattern.MatchString(got) {
			t.Errorf("SlugCandidate(%q, %d) = %q, want %q", tc.slug, tc.n, got, tc.want)
		}
	}
}
