package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

// notFoundReasons is the NOT_FOUND reason of each path variable of the
// reference: the kind of resource the variable names.
var notFoundReasons = map[string]string{
	"organization_id":     "ORGANIZATION_NOT_FOUND",
	"workspace_id":        "WORKSPACE_NOT_FOUND",
	"automation_id":       "AUTOMATION_NOT_FOUND",
	"run_id":              "RUN_NOT_FOUND",
	"execution_id":        "RUN_NOT_FOUND",
	"agent_id":            "AGENT_NOT_FOUND",
	"event_id":            "EVENT_NOT_FOUND",
	"exception_id":        "EXCEPTION_NOT_FOUND",
	"connection_id":       "CONNECTION_NOT_FOUND",
	"trigger_instance_id": "TRIGGER_INSTANCE_NOT_FOUND",
	"name":                "BOOK_NOT_FOUND",
	"version":             "BOOK_NOT_FOUND",
	"book_name":           "BOOK_NOT_FOUND",
	"book_version":        "BOOK_NOT_FOUND",
	"file":                "FILE_NOT_FOUND",
	"invitation_id":       "INVITATION_NOT_FOUND",
	"user_id":             "USER_NOT_FOUND",
	"revision_id":         "REVISION_NOT_FOUND",
	"guide_entry_id":      "GUIDE_ENTRY_NOT_FOUND",
}

// unknownIDBodies are request bodies (or, after "?", query strings)
// valid enough that the service reaches its lookups: a malformed request
// may be refused before them.
var unknownIDBodies = map[string]string{
	"CreateEvent":                             `{"user_message": {"content": "hello"}}`,
	"PauseRun":                                `{"reason": "checking"}`,
	"CreateAutomationSchedule":                `{"config": {"start": {"start_date": {"year": 2030, "month": 3, "day": 23}}}}`,
	"UpdateAutomationSchedule":                `{"config": {"start": {"start_date": {"year": 2030, "month": 3, "day": 23}}}}`,
	"CreateAutomationTrigger":                 `{"trigger_id": "t1", "phase_type": "PHASE_TYPE_MAIN"}`,
	"AddAutomationConnections":                `{"connections": [{"book": "http", "book_version": "1.0.0", "connection_alias": "crm", "connection_id": "{conn}"}]}`,
	"RemoveAutomationConnections":             `{"removals": [{"connection_id": "{conn}", "connection_alias": "crm"}]}`,
	"SwitchAutomationConnections":             `{"switches": [{"old_connection_id": "{conn}", "new_connection_id": "{conn}", "connection_alias": "crm"}]}`,
	"UpgradeAutomationConnections":            `{"upgrades": [{"old_connection_id": "{conn}", "new_connection_id": "{conn}", "connection_alias": "crm"}]}`,
	"InvokeAutomation":                        `{"stage": "AUTOMATION_STAGE_DRAFT"}`,
	"SearchWorkspaceBooks":                    `{"query": "send"}`,
	"SearchWorkspaceBookConcepts":             `{"query": "send"}`,
	"SearchWorkspaceBookProcedures":           `{"query": "send"}`,
	"SearchWorkspaceBookConnectionProcedures": `{"query": "send"}`,
	"ConfigureAutomationEstimates":            `{"automation_estimates": [{"automation_id": "a1", "cost_usd": "0.10", "time_saved_secs": 30}]}`,
	"AddWorkspaceBookConnection":              `{"connection_name": "other"}`,
	"UpgradeWorkspaceBookConnection":          `{"new_book_version": "1.0.0"}`,
	"CountConnectionUsage":                    `{"connection_ids": ["{conn}"]}`,
	"TraceConnectionUsage":                    `{"connection_id": "{conn}"}`,
	"DeleteWorkspaceConnection":               `?connection_id={conn}`,
	"QueryDailyRunAggregates":                 `?time_zone=UTC`,
	"QueryMetrics":                            `?metrics=runs`,
	"CountWorkspaceUsers":                     `{"workspace_ids": ["{ws}"]}`,
	"UploadFile":                              `?filename=a.txt`,
}

// unknownIDReal overrides the fixture's real values for one operation.
var unknownIDReal = map[string]map[string]string{
	// Triggers are made on connections of trigger books.
	"AddWorkspaceBookConnectionTriggerInstance": {"book_name": "webhook", "book_version": "1.0.0", "connection_id": "{webhook}"},
}

// unknownIDCase is one operation with an unknown value for one of its path
// variables, and the reasons a right answer may have.
type unknownIDCase struct {
	op       refOp
	variable string
	req      opRequest
	allowed  map[string]bool
}

// unknownIDCases makes, for every operation of the reference and each of
// its path variables in turn, the call with an unknown value for it (the
// variables before it naming real resources, those after it unknown too).
func unknownIDCases(t *testing.T, real map[string]string) []unknownIDCase {
	var cases []unknownIDCase
	for _, op := range referenceOps(t) {
		for i, v := range op.Vars {
			c := unknownIDCase{op: op, variable: v, req: opRequest{vars: map[string]string{}}, allowed: map[string]bool{}}
			if strings.Contains(op.Template, "/schedule") || strings.Contains(op.Template, "AutomationSchedule") {
				// The fixture's automation has no schedule: the singleton
				// is unknown too.
				c.allowed["SCHEDULE_NOT_FOUND"] = true
			}
			for j, w := range op.Vars {
				val := real[w]
				if o, ok := unknownIDReal[op.ID][w]; ok {
					val = real[strings.Trim(o, "{}")]
					if !strings.HasPrefix(o, "{") {
						val = o
					}
				}
				if j >= i || val == "" {
					// Every unknown variable names a resource that does not
					// exist: its reason is a right answer too.
					val = "unknown-" + strings.ReplaceAll(w, "_", "-")
					c.allowed[notFoundReasons[w]] = true
				}
				c.req.vars[w] = val
			}
			body := strings.NewReplacer("{conn}", real["connection_id"], "{ws}", real["workspace_id"]).Replace(unknownIDBodies[op.ID])
			if strings.HasPrefix(body, "?") {
				c.req.query = body[1:]
			} else {
				c.req.body = body
			}
			cases = append(cases, c)
		}
	}
	return cases
}

// TestUnknownPathIDsAreNotFound walks every operation of the reference and,
// for each of its path variables in turn, sends it with an unknown value
// (the variables before it naming real resources), over HTTP and gRPC: the
// answer must be NOT_FOUND (404) with the reason of that variable or, when
// the variables after it are unknown too, of one of them (the resource
// named does not exist either way). No operation may answer 200 or create
// anything for a resource that does not exist. On PostgreSQL too
// (PROSE_TEST_POSTGRES_URL).
func TestUnknownPathIDsAreNotFound(t *testing.T) {
	// OAuth needs a public address: without one, authorizing any
	// connection is FAILED_PRECONDITION before the connection is read.
	e := newTestEnvWith(t, func(c *app.Config) { c.PublicURL = "https://prose.example.test" })
	fx := e.awaitingRun(t)
	crm := e.API(t, "POST", e.WsPath()+"/books/http/1.0.0/connections", `{"connection_name": "crm", "authentication": {"authentication_id": "bearer",
		"authentication_credentials": [{"id": "token", "value": {"text_value": "secret-token"}}]}}`, 200)
	_, webhook := e.TriggersPath(t, e.WsPath(), "webhook", "orders")
	real := map[string]string{
		"organization_id": e.Init.OrganizationID, "workspace_id": e.Init.WorkspaceID,
		"automation_id": fx.automation, "run_id": fx.run, "execution_id": fx.run, "agent_id": "prose",
		"exception_id": fx.exception, "connection_id": fmt.Sprint(testenv.Field(crm, "book_connection_descriptor.connection_id")),
		"name": "http", "version": "1.0.0", "book_name": "http", "book_version": "1.0.0",
		"user_id": e.Init.UserID, "webhook": webhook,
	}
	if n := len(referenceOps(t)); n != 102 {
		t.Errorf("the reference has %d operations, this test expects 102", n)
	}
	cases := unknownIDCases(t, real)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		for _, c := range cases {
			t.Run(c.op.ID+"/"+c.variable, func(t *testing.T) {
				r := e.callOp(t, tr, c.op, c.req)
				at := c.op.Method + " " + c.op.path(c.req.vars)
				if c.variable == "organization_id" {
					// A key is of one organization: naming another, known
					// or not, is refused before any lookup.
					if r.code != codes.PermissionDenied || r.reason != "ORGANIZATION_MISMATCH" {
						t.Errorf("%s: %v %s, want PERMISSION_DENIED ORGANIZATION_MISMATCH", at, r.code, truncate(r.raw, 300))
					}
					return
				}
				if r.code != codes.NotFound || !c.allowed[r.reason] {
					t.Errorf("%s: %v %s %s, want NOT_FOUND %s", at, r.code, r.reason, truncate(r.raw, 300), notFoundReasons[c.variable])
				}
			})
		}
	})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestAuthorizeConnectionRefusesABody: AuthorizeWorkspaceBookConnection has
// no field outside its path, so its body may be empty or {}; a malformed
// body or an unknown field is 400, not ignored.
func TestAuthorizeConnectionRefusesABody(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.PublicURL = "https://prose.example.test" })
	path := e.WsPath() + "/connections/unknown-connection/authorize"
	for _, c := range []struct {
		body string
		want int
	}{
		{"", http.StatusNotFound},
		{"{}", http.StatusNotFound},
		{`{"scopes": ["all"]}`, http.StatusBadRequest},
		{"not json", http.StatusBadRequest},
	} {
		if code, _, raw := e.DoHTTP(t, http.MethodPut, path, c.body, e.Bearer()); code != c.want {
			t.Errorf("body %q: %d %s, want %d", c.body, code, raw, c.want)
		}
	}
}
