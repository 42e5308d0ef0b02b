package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// opCase says how to call one operation of the reference with the
// fixture's data. Its strings may hold {placeholders}: the fixture's
// values, those fresh made, and {t} (the transport: "http" or "grpc").
type opCase struct {
	vars  map[string]string // path variables other than opVars'
	body  string            // the JSON body
	query string            // the query string (without "?")
	// fresh makes what one call consumes (a run to pause, a file to
	// delete), once per transport; its values join the placeholders.
	fresh func(t *testing.T, fx *opFixture, tr apiTransport) map[string]string
	// empty: the reference's answer has no fields (a delete).
	empty bool
	// needs names a value of the fixture the case cannot go without; the
	// case is skipped, saying so, when the fixture has none.
	needs string
}

// opVars are the values of the path variables, by the reference's names.
var opVars = map[string]string{
	"organization_id": "{org}", "workspace_id": "{ws}", "automation_id": "{a}", "run_id": "{run}", "execution_id": "{run}",
	"agent_id": "prose", "event_id": "{event}", "exception_id": "{exc}", "connection_id": "{crm}", "trigger_instance_id": "{inst}",
	"name": "http", "version": "1.0.0", "book_name": "http", "book_version": "1.0.0", "file": "{file}", "invitation_id": "{inv}",
	"user_id": "{viewer}", "revision_id": "latest", "guide_entry_id": "{guide}",
}

// onThread is the waiting run's conversation.
var onThread = map[string]string{"run_id": "{wait}"}

var search = func(q string) string { return `{"query": "` + q + `", "top_k": 5}` }

// everyOp is one case per operation of the reference.
var everyOp = map[string]opCase{
	"ListBooks": {}, "ListLatestBooks": {}, "ListTags": {}, "ListBookVersions": {}, "GetBook": {}, "ListBookConcepts": {}, "ListBookProcedures": {},
	"SearchBooks": {body: search("email")}, "SearchBookConcepts": {body: search("recipient")}, "SearchBookProcedures": {body: search("send an email")},
	"CurrentUserOrganizations": {}, "CurrentUserOrganizationWorkspaces": {}, "GetOrganization": {},
	"QueryAutomationEstimates": {}, "QueryInsights": {query: window("filter.time_window.") + "&filter.time_window.time_zone=Europe%2FBerlin"},
	"DeleteFile":          {fresh: freshFile, empty: true},
	"GetFileMetadata":     {},
	"DownloadFile":        {},
	"GenerateDownloadUrl": {body: `{"expire_duration": "600s"}`},
	"GenerateUploadUrl":   {body: `{"expire_duration": "600s"}`},
	"UploadFile":          {query: "filename=upload-{t}.csv", body: everyOpFile},
	"GetInvitation":       {}, "ListOrganizationUserInvites": {},
	"QueryMetrics":               {query: "metrics=runs&metrics=guided_runs&group_by=automation_id&interval=METRIC_INTERVAL_HOUR&" + window("")},
	"GetOrganizationPreferences": {}, "ListOrganizationRoles": {}, "ListOrganizationUsers": {}, "GetUserBasicInfo": {},
	"ListWorkspaces": {}, "GetWorkspace": {}, "ListAutomations": {}, "GetAutomation": {},
	"ListGuideEntries": {}, "GetGuideEntry": {}, "ListAutomationRevisions": {}, "GetAutomationRevision": {},
	"ListRuns": {}, "GetRun": {},
	"CreateEvent":              {vars: onThread, body: `{"user_message": {"content": "Where does the total come from? ({t})"}}`},
	"ListEvents":               {vars: onThread},
	"GetEvent":                 {vars: onThread},
	"CancelGeneration":         {vars: onThread, empty: true},
	"StreamEvents":             {vars: onThread},
	"ListRunEvents":            {},
	"ContinueRun":              {vars: map[string]string{"run_id": "{stopped}"}, fresh: freshStopped},
	"PauseRun":                 {vars: map[string]string{"run_id": "{waiting}"}, body: `{"reason": "checking the invoice"}`, fresh: freshWaiting},
	"CreateAutomationSchedule": {vars: map[string]string{"automation_id": "{bare}"}, body: weekdayBerlin, fresh: freshAutomation},
	"UpdateAutomationSchedule": {body: weekdayBerlin},
	"GetAutomationSchedule":    {},
	"DeleteAutomationSchedule": {vars: map[string]string{"automation_id": "{scheduled}"}, fresh: freshScheduled, empty: true},
	"CreateAutomationTrigger": {body: `{"trigger_id": "{inst}", "phase_type": "PHASE_TYPE_MAIN", "phase_sub_type": "PHASE_SUB_TYPE_WEBHOOK",
		"input_mapping": {"invoice total": "/invoice/total"}, "is_active": true}`},
	"ListAutomationTriggers":     {},
	"GetAutomationVisualization": {},
	"AddAutomationConnections": {vars: map[string]string{"automation_id": "{bound}"}, fresh: freshBound,
		body: `{"connections": [{"book": "http", "book_version": "1.0.0", "connection_alias": "crm", "connection_id": "{crm}"}]}`},
	"RemoveAutomationConnections": {vars: map[string]string{"automation_id": "{bound}"}, fresh: freshBoundTo("crm"),
		body: `{"removals": [{"connection_id": "{crm}", "connection_alias": "crm"}]}`},
	"SwitchAutomationConnections": {vars: map[string]string{"automation_id": "{bound}"}, fresh: freshBoundTo("crm"),
		body: `{"switches": [{"old_connection_id": "{crm}", "new_connection_id": "{crm2}", "connection_alias": "crm"}]}`},
	"UpgradeAutomationConnections": {vars: map[string]string{"automation_id": "{bound}"}, fresh: freshBoundTo("stamps"),
		body: `{"upgrades": [{"old_connection_id": "{stamps}", "new_connection_id": "{stamps2}", "connection_alias": "stamps"}]}`},
	"DisableAutomationSchedule":        {},
	"EnableAutomationSchedule":         {},
	"ExtractAutomationCodeConnections": {vars: map[string]string{"automation_id": "{uses}"}},
	"InvokeAutomation":                 {body: `{"stage": "AUTOMATION_STAGE_PUBLISHED", "inputs": {"invoice total": {"number": {"lo": 40}}}}`},
	"ListDefaultInputsHistory":         {},
	"QueryAutomation":                  {query: "stage=AUTOMATION_STAGE_PUBLISHED"},
	"CountConnectionUsage":             {body: `{"connection_ids": ["{crm}", "{mail}"]}`},
	"DeleteWorkspaceConnection":        {query: "connection_id={gone}", fresh: freshUsedConnection},
	"TraceConnectionUsage":             {body: `{"connection_id": "{crm}"}`},
	"ListWorkspaceBooks":               {},
	"AddWorkspaceBookConnection": {body: `{"connection_name": "crm {t}", "authentication": {"authentication_id": "basic", "authentication_credentials": [
		{"id": "username", "value": {"text_value": "ana"}}, {"id": "password", "value": {"sensitive_value": {"value": {"text_value": "pw"}}}}]},
		"config_map": {"base url": {"text_value": "https://crm.example.test"}}, "labels": [{"key": "team", "value": "ops"}]}`},
	"ListWorkspaceBookConnections": {},
	"UpdateWorkspaceBookConnection": {body: `{"connection_name": "crm", "config_map": {"base url": {"text_value": "https://crm.example.test"}, "timeout seconds": {"number_value": 20}},
		"labels": [{"key": "team", "value": "ops"}]}`},
	"AddWorkspaceBookConnectionTriggerInstance": {vars: map[string]string{"book_name": "webhook", "connection_id": "{hook}"},
		body: `{"name": "Orders {t}", "trigger_id": "webhook", "filter_expression": {"unary_expression": {"operator": "UnaryOperatorExists",
			"inner": {"noun_phrases_expression": {"noun_phrases": [{"head": "invoice"}, {"head": "total"}]}}}}}`},
	"UpgradeWorkspaceBookConnection": {vars: map[string]string{"book_name": "test.stamps", "connection_id": "{old}"}, fresh: freshStampsConnection,
		body: `{"new_book_version": "2.0.0"}`},
	"ListWorkspaceBookConcepts":                {vars: map[string]string{"name": "test.stamps"}},
	"ListWorkspaceBookProcedures":              {vars: map[string]string{"name": "test.stamps"}},
	"SearchWorkspaceBooks":                     {body: search("stamp")},
	"SearchWorkspaceBookConcepts":              {body: search("ticket")},
	"SearchWorkspaceBookProcedures":            {body: search("stamp a ticket")},
	"ListAllWorkspaceBookConnections":          {},
	"GetWorkspaceBookConnection":               {},
	"AuthorizeWorkspaceBookConnection":         {vars: map[string]string{"connection_id": "{oauth}"}},
	"SetDiscovered":                            {vars: map[string]string{"connection_id": "{db}"}, body: `{"what": ["{table}"]}`, fresh: freshTable, needs: "db", empty: true},
	"ListWorkspaceBookConnectionDiscoverables": {vars: map[string]string{"connection_id": "{db}"}, query: "limit=5", needs: "db"},
	"ListWorkspaceBookConnectionProcedures":    {vars: map[string]string{"connection_id": "{stamps}"}},
	"SearchWorkspaceBookConnectionProcedures":  {vars: map[string]string{"connection_id": "{stamps}"}, body: search("stamp")},
	"RemoveWorkspaceBookConnectionTriggerInstance": {vars: map[string]string{"connection_id": "{hook}", "trigger_instance_id": "{doomed}"},
		fresh: freshInstance, empty: true},
	"GetWorkspaceBookConnectionUserInfo": {vars: map[string]string{"connection_id": "{mail}"}},
	"ConfigureAutomationEstimates":       {body: `{"automation_estimates": [{"automation_id": "{a}", "cost_usd": "0.25", "time_saved_secs": 90}]}`},
	"ListExceptionGroups":                {}, "ListExceptions": {}, "GetException": {}, "CountExceptionsByAutomation": {}, "CountExceptionsByGroup": {},
	"GetExecutionOutputs":      {},
	"ListWorkspaceUserInvites": {}, "GetWorkspacePreferences": {}, "ListWorkspaceRoles": {}, "ListWorkspaceTriggerInstances": {},
	"SetAutomationsForTriggerInstance": {body: `{"automation_ids": ["{a}"], "connection_id": "{hook}"}`},
	"ListWorkspaceUsers":               {},
	"QueryAutomationRunAggregates":     {},
	"QueryDailyRunAggregates":          {query: today()},
	"CountWorkspaceUsers":              {body: `{"workspace_ids": ["{ws}"]}`},
}

func freshFile(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
	_, id := fx.upload(t, "doomed-"+tr.name+".csv")
	return map[string]string{"file": id}
}

func freshWaiting(t *testing.T, fx *opFixture, _ apiTransport) map[string]string {
	run, _ := fx.awaiting(t)
	return map[string]string{"waiting": run}
}

func freshStopped(t *testing.T, fx *opFixture, _ apiTransport) map[string]string {
	run, _ := fx.awaiting(t)
	fx.e.API(t, "POST", fx.e.RunPath(fx.vals["a"], run)+":pause", `{"reason": "later"}`, 200)
	fx.e.WaitRunState(t, fx.vals["a"], run, store.RunStopped)
	return map[string]string{"stopped": run}
}

func freshAutomation(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
	return map[string]string{"bare": fx.e.MkAutomation(t, "Bare "+tr.name, everyOpCode, true).ID}
}

func freshScheduled(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
	a := fx.e.MkAutomation(t, "Scheduled "+tr.name, everyOpCode, true).ID
	fx.e.API(t, "POST", fx.e.AutomationsPath()+"/"+a+"/schedule", weekdayBerlin, 200)
	return map[string]string{"scheduled": a}
}

// boundCode calls both books whose connections the automation cases bind.
const boundCode = "call the api at \"/customers\" with\n  the connection is \"crm\"\nstamp \"T1\" with\n  the connection is \"stamps\"\n"

func freshBound(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
	return map[string]string{"bound": fx.e.MkAutomation(t, "Bound "+tr.name, boundCode, false).ID}
}

// freshBoundTo is freshBound with the connection of alias (crm or stamps)
// bound.
func freshBoundTo(alias string) func(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
	return func(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
		v := freshBound(t, fx, tr)
		book := map[string]string{"crm": "http", "stamps": "test.stamps"}[alias]
		fx.e.API(t, "POST", fx.e.AutomationsPath()+"/"+v["bound"]+":addConnections", fmt.Sprintf(
			`{"connections": [{"book": %q, "book_version": "1.0.0", "connection_alias": %q, "connection_id": %q}]}`, book, alias, fx.vals[alias]), 200)
		return v
	}
}

func freshUsedConnection(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
	id := fx.add(t, "http", "1.0.0", `{"connection_name": "gone `+tr.name+`"}`)
	fx.e.MkAutomation(t, "Uses gone "+tr.name, "call the api at \"/x\" with\n  the connection is \"gone "+tr.name+"\"\n", false)
	return map[string]string{"gone": id}
}

func freshStampsConnection(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
	return map[string]string{"old": fx.add(t, "test.stamps", "1.0.0", `{"connection_name": "old stamps `+tr.name+`", "config_map": {"region": {"text_value": "us"}}}`)}
}

func freshInstance(t *testing.T, fx *opFixture, tr apiTransport) map[string]string {
	m := fx.e.API(t, "POST", fx.e.WsPath()+"/books/webhook/1.0.0/connections/"+fx.vals["hook"]+"/triggers", `{"name": "Doomed `+tr.name+`"}`, 200)
	return map[string]string{"doomed": fmt.Sprint(testenv.Field(m, "trigger_instance.id"))}
}

// freshTable is the first table the database connection discovers.
func freshTable(t *testing.T, fx *opFixture, _ apiTransport) map[string]string {
	m := fx.e.API(t, "GET", fx.e.WsPath()+"/connections/"+fx.vals["db"]+"/discoverables?limit=1", "", 200)
	return map[string]string{"table": fmt.Sprint(testenv.Field(m, "discoverables.0.name"))}
}

// request is the case's call with its placeholders replaced.
func (c opCase) request(op refOp, vals map[string]string) opRequest {
	pairs := make([]string, 0, 2*len(vals))
	for k, v := range vals {
		pairs = append(pairs, "{"+k+"}", v)
	}
	r := strings.NewReplacer(pairs...)
	req := opRequest{vars: map[string]string{}, body: r.Replace(c.body), query: r.Replace(c.query)}
	for _, v := range op.Vars {
		val := opVars[v]
		if o, ok := c.vars[v]; ok {
			val = o
		}
		req.vars[v] = r.Replace(val)
	}
	return req
}

// TestEveryOperationFitsTheReference calls each of the reference's 102
// operations over HTTP and over gRPC with the data of a workspace that has
// some of everything (newOpFixture), and checks each HTTP answer field by
// field against the reference's 200 schema: every field is one the schema
// has (or one the served OpenAPI document marks x-prose-extension), of its
// JSON type, enums by a name of theirs, required fields present, and lists
// not empty. The gRPC answer must succeed and fit the same schema. On
// PostgreSQL too (PROSE_TEST_POSTGRES_URL).
func TestEveryOperationFitsTheReference(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.PublicURL = "https://prose.example.test" })
	fx := newOpFixture(t, e)
	served := servedDoc(t, e)
	w := newTwin(t, served)
	w.answered = map[string]bool{}
	defer func() {
		var never []string
		for k, v := range w.answered {
			if !v {
				never = append(never, k)
			}
		}
		sort.Strings(never)
		t.Logf("never answered (%d): %s", len(never), strings.Join(never, " "))
	}()
	ops := referenceOps(t)
	if len(ops) != 102 {
		t.Errorf("the reference has %d operations, this test expects 102", len(ops))
	}
	for _, op := range ops {
		if _, ok := everyOp[op.ID]; !ok {
			t.Errorf("no case for %s", op.ID)
		}
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		for _, op := range ops {
			c := everyOp[op.ID]
			t.Run(op.ID, func(t *testing.T) {
				if c.needs != "" && fx.vals[c.needs] == "" {
					t.Skipf("no %s: neither MariaDB on 127.0.0.1:3306 nor PROSE_TEST_POSTGRES_URL answers", c.needs)
				}
				vals := map[string]string{"t": tr.name}
				for k, v := range fx.vals {
					vals[k] = v
				}
				if c.fresh != nil {
					for k, v := range c.fresh(t, fx, tr) {
						vals[k] = v
					}
				}
				fx.check(t, tr, w, op, c, c.request(op, vals))
			})
		}
	})
}

// check makes one call and checks its answer.
func (fx *opFixture) check(t *testing.T, tr apiTransport, w *twin, op refOp, c opCase, req opRequest) {
	t.Helper()
	var m map[string]any
	switch op.ID {
	case "UploadFile", "DownloadFile", "StreamEvents":
		if m = fx.special(t, tr, op, req); m == nil {
			return
		}
	default:
		r := fx.e.callOp(t, tr, op, req)
		if r.code != codes.OK {
			t.Fatalf("%s %s over %s: %v %s %s", op.Method, op.path(req.vars), tr, r.code, r.reason, truncate(r.raw, 600))
		}
		m = r.m
	}
	rs, ss := answerSchemas(t, op, w.doc)
	raw, _ := json.Marshal(m)
	for _, p := range w.answer(rs, ss, m, "$") {
		t.Errorf("%s over %s: %s\n%s", op.ID, tr, p, truncate(string(raw), 2000))
	}
	if c.empty {
		if len(m) != 0 {
			t.Errorf("%s over %s answers %s, want {}", op.ID, tr, raw)
		}
		return
	}
	if len(m) == 0 {
		t.Errorf("%s over %s answers {}: the fixture should make it say something", op.ID, tr)
	}
	for _, k := range emptyLists(w, rs, m) {
		t.Errorf("%s over %s: the list %s is empty: the fixture should fill it\n%s", op.ID, tr, k, truncate(string(raw), 600))
	}
}

// emptyLists names the top-level arrays of the reference's schema that the
// answer leaves empty or out.
func emptyLists(w *twin, rs map[string]any, m map[string]any) []string {
	rs, _ = resolve(rs, w.ref)
	var out []string
	for k, p := range props(rs) {
		ps, _ := resolve(p.(map[string]any), w.ref)
		if jsonType(ps) != "array" {
			continue
		}
		if l, _ := m[k].([]any); len(l) == 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// special makes the calls whose HTTP answer is not one JSON object: the
// multipart upload, the file's bytes, the NDJSON stream. It answers the
// JSON to check against the schema (nil when there is none to check).
func (fx *opFixture) special(t *testing.T, tr apiTransport, op refOp, req opRequest) map[string]any {
	t.Helper()
	e := fx.e
	if tr.grpc {
		if op.ID == "UploadFile" {
			req.contentType = "text/csv"
		}
		r := e.callOp(t, tr, op, req)
		if r.code != codes.OK {
			t.Fatalf("%s over gRPC: %v %s", op.ID, r.code, r.raw)
		}
		switch op.ID {
		case "DownloadFile":
			if data, _ := base64.StdEncoding.DecodeString(fmt.Sprint(r.m["data"])); string(data) != everyOpFile {
				t.Errorf("DownloadFile over gRPC: %v", r.m)
			}
			return nil
		case "StreamEvents":
			checkSchema(t, "v1Event", r.m["event"])
			return nil
		}
		return r.m
	}
	path := op.path(req.vars)
	switch op.ID {
	case "UploadFile":
		ct, body := referenceUploadForm(t, "upload-http.csv", "text/csv", []byte(everyOpFile))
		code, _, raw := e.fileHTTP(t, "POST", path, ct, body, e.Init.APIKey)
		if code != 200 {
			t.Fatalf("multipart upload: %d %s", code, raw)
		}
		return jsonMap(t, raw)
	case "DownloadFile":
		code, h, raw := e.fileHTTP(t, "GET", path, "", nil, e.Init.APIKey)
		if code != 200 || string(raw) != everyOpFile || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") {
			t.Errorf("DownloadFile: %d %s %q", code, h.Get("Content-Type"), raw)
		}
		return nil
	}
	line := fx.firstLine(t, path)
	checkSchema(t, "v1Event", testenv.Field(line, "result.event"))
	return nil
}

// firstLine reads the first message of an NDJSON stream.
func (fx *opFixture) firstLine(t *testing.T, path string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Limit(testtime.Wait))
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, http.MethodGet, fx.e.Srv.URL+path, nil)
	hr.Header.Set("Authorization", "Bearer "+fx.e.Init.APIKey)
	resp, err := fx.e.Srv.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		t.Fatalf("StreamEvents: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(line), &m); err != nil {
		t.Fatalf("StreamEvents: %q: %v", line, err)
	}
	return m
}

// TestServedOpenAPIFitsTheReference compares the served OpenAPI document
// (GET /openapi.json) with the reference, operation by operation: the
// schema of each operation's 200 answer, walked side by side in both down
// to every field, must have the reference's JSON types, string formats and
// enum values, and every property the reference requires; a property the
// reference does not have must be marked x-prose-extension, and one it has
// must not be.
func TestServedOpenAPIFitsTheReference(t *testing.T) {
	e := newTestEnv(t)
	served := servedDoc(t, e)
	w := newTwin(t, served)
	ops := referenceOps(t)
	compared := 0
	for _, op := range ops {
		rs, ss := answerSchemas(t, op, served)
		if rs == nil {
			continue // not JSON: a file's bytes, an NDJSON stream
		}
		if ss == nil {
			t.Errorf("%s %s: the served document has no 200 schema", op.Method, op.Template)
			continue
		}
		compared++
		for _, p := range w.document(rs, ss, op.ID, map[string]bool{}) {
			t.Errorf("%s", p)
		}
	}
	if compared < 99 {
		t.Errorf("only %d operations compared", compared)
	}
}

// TestTwinCheckerFindsDeviations: the checkers of the two tests above find
// what does not fit: an unknown field, an extension marked or not, a value
// of another type, an enum value the reference lacks, a required field
// left out; and in the documents, a property the reference lacks.
func TestTwinCheckerFindsDeviations(t *testing.T) {
	e := newTestEnv(t)
	served := servedDoc(t, e)
	w := newTwin(t, served)
	ref := func(n string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + n} }
	def := func(n string) map[string]any { return map[string]any{"$ref": "#/definitions/" + n} }
	got := w.answer(ref("v1Automation"), def("v1Automation"), map[string]any{
		"display_name": "x", "english_code": "x", // required
		"draft_share_id":   "s",    // marked: fine
		"colour":           "blue", // unknown
		"activation_state": "ON",   // not an enum name
		"input_specs":      []any{map[string]any{"name": 3}},
	}, "$")
	want := []string{"$.activation_state", "$.colour", "$.input_specs[0].name"}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, w+":") }) {
			t.Errorf("answer: nothing found at %s in %v", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("answer: %d findings, want %d: %v", len(got), len(want), got)
	}
	// A required field left out.
	if got := w.answer(ref("v1AutomationInputSpec"), nil, map[string]any{}, "$"); len(got) != 1 || !strings.Contains(got[0], "required") {
		t.Errorf("required: %v", got)
	}
	// A served property the reference lacks, one of another type.
	local := &twin{ref: w.ref, served: map[string]any{"r": map[string]any{"type": "object", "properties": map[string]any{
		"name": map[string]any{"type": "string"}, "colour": map[string]any{"type": "string"}, "state": map[string]any{"type": "integer"}}}}}
	docs := local.document(ref("v1Run"), map[string]any{"$ref": "#/definitions/r"}, "Run", map[string]bool{})
	if all := strings.Join(docs, "\n"); !strings.Contains(all, "Run.colour: served") || !strings.Contains(all, "Run.state: the reference's") ||
		!strings.Contains(all, "Run.stage: required") {
		t.Errorf("document: %v", docs)
	}
}
