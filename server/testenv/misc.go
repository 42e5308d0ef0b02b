package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proserun/prose/server/app"
)

// StartApp starts an app on cfg for the organization of init (made by an
// earlier app on the same store), served over HTTP only. stop stops it; it
// is also called at cleanup.
func StartApp(t *testing.T, cfg app.Config, init app.InitResult, email string) (e *Env, stop func()) {
	t.Helper()
	a, err := app.New(context.Background(), cfg, Discard(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e = &Env{App: a, Store: a.Store, Init: init, Email: email}
	e.Srv = httptest.NewServer(a.HTTP)
	stop = sync.OnceFunc(func() { e.Srv.Close(); a.Close() })
	t.Cleanup(stop)
	return e, stop
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes (a logger's)
// and reads (the test's).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns the JSON lines written so far.
func (s *SyncBuffer) Lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// ProcessCPU is the CPU time (user and system) this process used so far
// (benchmarks report it per operation).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
