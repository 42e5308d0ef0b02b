package logctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/logctx"
)

func lines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		out = append(out, m)
	}
	return out
}

func TestFieldsReachEveryLine(t *testing.T) {
	var b bytes.Buffer
	log := logctx.New(&b, logctx.FormatJSON, slog.LevelInfo)
	ctx := logctx.With(context.Background(), logctx.RequestID, "r1")
	inner := logctx.With(ctx, logctx.Run, "run1")
	// Set in place: the outer context sees the organization too.
	logctx.Set(inner, logctx.Organization, "o1")
	logctx.Set(ctx, logctx.Organization, "o2")
	log.InfoContext(ctx, "outer", "took", 1500*time.Microsecond)
	log.InfoContext(inner, "inner", logctx.RequestID, "explicit")
	log.Info("no context")
	got := lines(t, &b)
	if got[0]["request_id"] != "r1" || got[0]["organization"] != "o2" || got[0]["run"] != nil || got[0]["took_ms"] != 1.5 {
		t.Errorf("outer line %v", got[0])
	}
	if got[1]["request_id"] != "explicit" || got[1]["organization"] != "o1" || got[1]["run"] != "run1" {
		t.Errorf("inner line %v (the record's own request_id wins, once)", got[1])
	}
	if strings.Count(b.String(), `"request_id"`) != 2 {
		t.Errorf("request_id repeated in a line:\n%s", b.String())
	}
	if got[2]["request_id"] != nil {
		t.Errorf("line without context %v", got[2])
	}
	if logctx.Get(inner, logctx.Run) != "run1" || logctx.Get(ctx, logctx.Run) != "" {
		t.Error("With changed its parent's fields")
	}
}

func TestFormats(t *testing.T) {
	var b bytes.Buffer
	logctx.New(&b, logctx.FormatText, slog.LevelInfo).Info("hello", "wait", 2*time.Second)
	if s := b.String(); !strings.Contains(s, "msg=hello") || !strings.Contains(s, "wait_ms=2000") {
		t.Errorf("text line %q", s)
	}
	b.Reset()
	// auto is JSON on anything but a terminal.
	logctx.New(&b, logctx.FormatAuto, slog.LevelInfo).Info("hello")
	if !strings.HasPrefix(b.String(), "{") {
		t.Errorf("auto on a buffer: %q, want JSON", b.String())
	}
	if logctx.ValidFormat("yaml") || !logctx.ValidFormat("json") {
		t.Error("ValidFormat")
	}
}

// TestWithLeavesRoomForARequestsFields: a request's fields (With its
// request id and method, then Set its organization and workspace) take
// three allocations (the set, its slice, the context), not one more per
// field that outgrows the slice.
func TestWithLeavesRoomForARequestsFields(t *testing.T) {
	ctx := context.Background()
	n := testing.AllocsPerRun(100, func() {
		c := logctx.With(ctx, logctx.RequestID, "r", logctx.Method, "/m")
		logctx.Set(c, logctx.Organization, "o", logctx.Workspace, "w")
	})
	if n > 3 {
		t.Errorf("With and Set of four fields: %v allocations, want at most 3", n)
	}
	c := logctx.With(ctx, logctx.RequestID, "r", logctx.Method, "/m")
	logctx.Set(c, logctx.Organization, "o", logctx.Workspace, "w")
	if got := logctx.Get(c, logctx.Workspace) + logctx.Get(c, logctx.RequestID); got != "wr" {
		t.Errorf("fields: %q", got)
	}
}
