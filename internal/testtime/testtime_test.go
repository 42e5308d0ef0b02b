package testtime

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type recorder struct{ failed string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

// Until returns when the condition holds, and fails with the condition's
// last description when it never does.
func TestUntil(t *testing.T) {
	n := 0
	var r recorder
	Until(&r, time.Minute, func() (bool, string) { n++; return n == 3, "" })
	if n != 3 || r.failed != "" {
		t.Fatalf("n = %d, failed %q", n, r.failed)
	}
	calls := 0
	Until(&r, time.Nanosecond, func() (bool, string) {
		calls++
		if calls > 1 {
			return true, "" // Fatalf returned (a recorder does not stop the goroutine)
		}
		return false, "still not"
	})
	if r.failed == "" || !strings.Contains(r.failed, "still not") {
		t.Fatalf("failure %q", r.failed)
	}
}
