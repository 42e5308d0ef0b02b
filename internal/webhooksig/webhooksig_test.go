package webhooksig_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/webhooksig"
)

func TestVerify(t *testing.T) {
	const secret = "a-secret-of-24-characters"
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"order":42}`)
	good := webhooksig.Sign(secret, now, "d-1", body)
	var tooOld *webhooksig.TooOldError
	for _, c := range []struct {
		name, header, delivery string
		body                   []byte
		at                     time.Time
		want                   func(error) bool
	}{
		{"signed now", good, "d-1", body, now, func(err error) bool { return err == nil }},
		{"within the window", good, "d-1", body, now.Add(4 * time.Minute), func(err error) bool { return err == nil }},
		{"a clock behind", good, "d-1", body, now.Add(-4 * time.Minute), func(err error) bool { return err == nil }},
		{"replayed later", good, "d-1", body, now.Add(6 * time.Minute), func(err error) bool { return errors.As(err, &tooOld) }},
		{"another delivery id", good, "d-2", body, now, func(err error) bool { return errors.Is(err, webhooksig.ErrMismatch) }},
		{"another body", good, "d-1", []byte(`{"order":43}`), now, func(err error) bool { return errors.Is(err, webhooksig.ErrMismatch) }},
		{"another secret", webhooksig.Sign("another-secret-of-24-chars", now, "d-1", body), "d-1", body, now, func(err error) bool { return errors.Is(err, webhooksig.ErrMismatch) }},
		{"the old body-only form", "sha256=" + strings.Repeat("0", 64), "d-1", body, now, func(err error) bool { return errors.Is(err, webhooksig.ErrMissing) }},
		{"no time", "v1=" + strings.Repeat("0", 64), "d-1", body, now, func(err error) bool { return errors.Is(err, webhooksig.ErrMissing) }},
		{"empty", "", "d-1", body, now, func(err error) bool { return errors.Is(err, webhooksig.ErrMissing) }},
		{"a rotated secret beside the right one", good + ",v1=" + strings.Repeat("ab", 32), "d-1", body, now, func(err error) bool { return err == nil }},
	} {
		if err := webhooksig.Verify(secret, c.header, c.delivery, c.body, c.at, webhooksig.DefaultTolerance); !c.want(err) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("t=1,v1=00", "d", []byte("x"))
	f.Fuzz(func(t *testing.T, header, delivery string, body []byte) {
		_ = webhooksig.Verify("secret", header, delivery, body, time.Unix(1, 0), time.Minute)
	})
}
