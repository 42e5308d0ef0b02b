package server_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/proserun/prose/internal/logctx"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

// The line of a request names its request id, method and organization with
// its duration in milliseconds; the lines of the run it started name the
// run, its organization and the request's id, though a worker executes it
// after the request.
func TestLogsCarryRequestAndRun(t *testing.T) {
	var buf testenv.SyncBuffer
	e := newTestEnvLogged(t, func(c *app.Config) { c.InlineWindow = -1 }, logctx.New(&buf, logctx.FormatJSON, slog.LevelDebug))
	a := e.MkAutomation(t, "logged", greetCode, false)
	code, m, raw := e.DoHTTP(t, "POST", e.AutomationsPath()+"/"+a.ID+":invoke",
		`{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"amount":{"number":{"lo":2}},"customer_name":{"text":"Ana"}}}`,
		map[string]string{"Authorization": "Bearer " + e.Init.APIKey, "X-Request-Id": "log-test-req-1"})
	if code != 200 {
		t.Fatalf("invoke: %d %s", code, raw)
	}
	run := fmt.Sprint(m["run_id"])
	e.WaitRun(t, a.ID, run, "completed")
	var rpc, executed map[string]any
	e.Poll(t, func() (bool, bool, string) {
		for _, l := range buf.Lines(t) {
			switch {
			case l["msg"] == "rpc" && l["request_id"] == "log-test-req-1":
				rpc = l
			case l["msg"] == "run executed" && l["run"] == run:
				executed = l
			}
		}
		return rpc != nil && executed != nil, false, "no rpc or run line yet"
	})
	if rpc["organization"] != e.Init.OrganizationID || rpc["method"] != autoSvc+"InvokeAutomation" {
		t.Errorf("rpc line %v: want organization %s and the method", rpc, e.Init.OrganizationID)
	}
	if _, ok := rpc["duration_ms"].(float64); !ok {
		t.Errorf("rpc line %v: want duration_ms, a number", rpc)
	}
	if executed["request_id"] != "log-test-req-1" || executed["organization"] != e.Init.OrganizationID || executed["workspace"] != e.Init.WorkspaceID {
		t.Errorf("run line %v: want the request id, organization and workspace", executed)
	}
}
