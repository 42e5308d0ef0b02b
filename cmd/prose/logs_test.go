package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/proserun/prose/logctx"
)

// lines returns the JSON lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
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

// The line of a request names its request id, method and organization with
// its duration in milliseconds; the lines of the run it started name the
// run, its organization and the request's id, though a worker executes it
// after the request.
func TestLogsCarryRequestAndRun(t *testing.T) {
	var buf syncBuffer
	e := newTestEnvLogged(t, func(c *serveConfig) { c.inlineWindow = -1 }, logctx.New(&buf, logctx.FormatJSON, slog.LevelDebug))
	a := e.mkAutomation(t, "logged", greetCode, false)
	code, m, raw := e.doHTTP(t, "POST", e.automationsPath()+"/"+a.id+":invoke",
		`{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"amount":{"number":{"lo":2}},"customer_name":{"text":"Ana"}}}`,
		map[string]string{"Authorization": "Bearer " + e.init.APIKey, "X-Request-Id": "log-test-req-1"})
	if code != 200 {
		t.Fatalf("invoke: %d %s", code, raw)
	}
	run := fmt.Sprint(m["run_id"])
	e.waitRun(t, a.id, run, "completed")
	var rpc, executed map[string]any
	e.poll(t, func() (bool, bool, string) {
		for _, l := range buf.lines(t) {
			switch {
			case l["msg"] == "rpc" && l["request_id"] == "log-test-req-1":
				rpc = l
			case l["msg"] == "run executed" && l["run"] == run:
				executed = l
			}
		}
		return rpc != nil && executed != nil, false, "no rpc or run line yet"
	})
	if rpc["organization"] != e.init.orgID || rpc["method"] != autoSvc+"InvokeAutomation" {
		t.Errorf("rpc line %v: want organization %s and the method", rpc, e.init.orgID)
	}
	if _, ok := rpc["duration_ms"].(float64); !ok {
		t.Errorf("rpc line %v: want duration_ms, a number", rpc)
	}
	if executed["request_id"] != "log-test-req-1" || executed["organization"] != e.init.orgID || executed["workspace"] != e.init.workspaceID {
		t.Errorf("run line %v: want the request id, organization and workspace", executed)
	}
}
