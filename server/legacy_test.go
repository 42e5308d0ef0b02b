package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const (
	v1Svc = "/prose.legacy.v1.LegacyService/"
	v2Svc = "/prose.legacy.v2.LegacyService/"
)

// legacyErr makes a legacy HTTP call that must fail with status want and
// returns the body.
func (e *testEnv) legacyErr(t *testing.T, method, path, body, key string, want int) map[string]any {
	t.Helper()
	code, m, raw := e.DoHTTP(t, method, path, body, map[string]string{"x-api-key": key})
	if code != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, raw)
	}
	return m
}

func TestLegacyV1(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Greeter", greetCode, true)
	key := e.Init.APIKey
	md := metadata.Pairs("x-api-key", key)

	// Parameters given directly, wrapped in body, and over gRPC; draft and
	// published share ids.
	direct := fmt.Sprint(e.Legacy(t, "POST", "/v1/invoke/"+a.PublishedShare, `{"amount":4,"customer_name":"Cy"}`, 201)["worker_id"])
	wrapped := fmt.Sprint(e.Legacy(t, "POST", "/v1/invoke/"+a.DraftShare, `{"body":{"amount":0.1,"customer_name":"Di"}}`, 201)["worker_id"])
	blob, _ := e.uploadBlob(t, "a.pdf", []byte("%PDF-1.4"))
	params := mustStruct(t, map[string]any{"amount": 1.5, "customer_name": "Ed", "files": []any{blob}})
	g, err := e.DoGRPC(t, v1Svc+"Invoke", &legacyv1.InvokeRequest{ShareId: a.PublishedShare, AttachmentsKey: "files", Parameters: params}, md)
	if err != nil {
		t.Fatal(err)
	}
	viaGRPC := fmt.Sprint(g["worker_id"])

	for _, c := range []struct {
		id, greeting string
		total        float64
		stage        string
	}{{direct, "Hello, Cy", 8, "AUTOMATION_STAGE_PUBLISHED"}, {wrapped, "Hello, Di", 0.2, "AUTOMATION_STAGE_DRAFT"}, {viaGRPC, "Hello, Ed", 3, "AUTOMATION_STAGE_PUBLISHED"}} {
		r := e.WaitRun(t, a.ID, c.id, "completed")
		if r["stage"] != c.stage {
			t.Errorf("run %s stage %v, want %s", c.id, r["stage"], c.stage)
		}
		m := e.Legacy(t, "GET", "/v1/run/"+c.id, "", 200)
		if m["state"] != "done" || testenv.Field(m, "answer.output greeting") != c.greeting || testenv.Field(m, "answer.output total") != c.total {
			t.Errorf("v1 status of %s: %v", c.id, m)
		}
		g, err := e.DoGRPC(t, v1Svc+"GetRunStatus", &legacyv1.GetRunStatusRequest{WorkerId: c.id}, md)
		if err != nil || g["state"] != "done" || testenv.Field(g, "answer.output greeting") != c.greeting {
			t.Errorf("gRPC v1 status of %s: %v %v", c.id, err, g)
		}
	}
	// The attachments became a list of files.
	r := e.API(t, "GET", e.RunPath(a.ID, viaGRPC), "", 200)
	if u := fmt.Sprint(testenv.Field(r, "user_inputs.files.list.items.0.file.remote")); !strings.HasPrefix(u, "http") || !strings.Contains(u, server.SignedDownloadPath) {
		t.Errorf("attachments: %v", r["user_inputs"])
	}
	// An attachment that is no uploaded file is refused, and starts nothing.
	before := e.RunCount(t)
	e.Legacy(t, "POST", "/v1/invoke/"+a.PublishedShare+"?attachments_key=files", `{"files":["https://blobs.example/nope.pdf"]}`, 400)
	if e.RunCount(t) != before {
		t.Error("a run was created for an unknown attachment")
	}
	// A run waiting for guidance is "waiting".
	guided := e.MkAutomation(t, "Guided", guidedCode, false)
	w := fmt.Sprint(e.Legacy(t, "POST", "/v1/invoke/"+guided.DraftShare, ``, 201)["worker_id"])
	e.WaitRun(t, guided.ID, w, "awaiting_guidance")
	if m := e.Legacy(t, "GET", "/v1/run/"+w, "", 200); m["state"] != "waiting" || m["answer"] != nil {
		t.Errorf("waiting run: %v", m)
	}

	// Errors, in the v1 shapes; none creates a run.
	before = e.RunCount(t)
	other := e.NewWorkspace(t, "Elsewhere")
	scoped := e.NewKey(t, testenv.KeySpec{Workspaces: []string{other}})
	readOnly := e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly})
	errs := []struct {
		name, method, path, body, key string
		want                          int
		msg                           string
	}{
		{"unknown share id", "POST", "/v1/invoke/nope", `{}`, key, 404, "not found"},
		{"unknown worker id", "GET", "/v1/run/nope", ``, key, 404, "not found"},
		{"bad key", "POST", "/v1/invoke/" + a.PublishedShare, `{}`, "wrong", 403, "API key"},
		{"key scoped to another workspace", "POST", "/v1/invoke/" + a.PublishedShare, `{}`, scoped, 400, "scoped"},
		{"key scoped to another workspace reads", "GET", "/v1/run/" + direct, ``, scoped, 400, "scoped"},
		{"read-only key", "POST", "/v1/invoke/" + a.PublishedShare, `{}`, readOnly, 400, ""},
		{"attachments not a list", "POST", "/v1/invoke/" + a.PublishedShare + "?attachments_key=files", `{"files":"x"}`, key, 400, "list"},
		{"attachment not a string", "POST", "/v1/invoke/" + a.PublishedShare + "?attachments_key=files", `{"files":[1]}`, key, 400, "blob URL"},
		{"body not an object", "POST", "/v1/invoke/" + a.PublishedShare, `{"body":5}`, key, 400, "object"},
		{"not JSON", "POST", "/v1/invoke/" + a.PublishedShare, `{`, key, 400, ""},
		{"parameters not an object", "POST", "/v1/invoke/" + a.PublishedShare, `[1]`, key, 400, ""},
	}
	for _, c := range errs {
		t.Run(c.name, func(t *testing.T) {
			m := e.legacyErr(t, c.method, c.path, c.body, c.key, c.want)
			if c.want != 403 && m["statusCode"] != float64(c.want) {
				t.Errorf("body: %v", m)
			}
			if !strings.Contains(fmt.Sprint(m["message"]), c.msg) {
				t.Errorf("message %q does not say %q", m["message"], c.msg)
			}
		})
	}
	// The same over gRPC.
	for _, c := range []struct {
		name string
		req  *legacyv1.InvokeRequest
		key  string
		want codes.Code
	}{
		{"unknown share id", &legacyv1.InvokeRequest{ShareId: "nope"}, key, codes.NotFound},
		{"scoped key", &legacyv1.InvokeRequest{ShareId: a.PublishedShare}, scoped, codes.PermissionDenied},
		{"bad attachments", &legacyv1.InvokeRequest{ShareId: a.PublishedShare, AttachmentsKey: "f", Parameters: mustStruct(t, map[string]any{"f": 1})}, key, codes.InvalidArgument},
	} {
		if _, err := e.DoGRPC(t, v1Svc+"Invoke", c.req, metadata.Pairs("x-api-key", c.key)); status.Code(err) != c.want {
			t.Errorf("gRPC %s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := e.DoGRPC(t, v1Svc+"GetRunStatus", &legacyv1.GetRunStatusRequest{WorkerId: "nope"}, md); status.Code(err) != codes.NotFound {
		t.Errorf("gRPC unknown worker: %v", err)
	}
	if got := e.RunCount(t); got != before {
		t.Errorf("runs = %d after bad calls, want %d", got, before)
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustValue(t *testing.T, v any) *structpb.Value {
	t.Helper()
	s, err := structpb.NewValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLegacyV2(t *testing.T) {
	e := newTestEnv(t)
	ws := e.Init.WorkspaceID
	a := e.MkAutomation(t, "Greeter", greetCode, true)
	draftOnly := e.MkAutomation(t, "Draft only", greetCode, false)
	key := e.Init.APIKey
	md := metadata.Pairs("x-api-key", key)

	// Processes.
	m := e.Legacy(t, "GET", "/v2/processes?agent_id="+ws, "", 200)
	if count(m, "processes") != 2 || testenv.Field(m, "processes.0.id") != draftOnly.ID || testenv.Field(m, "processes.0.agent_id") != ws {
		t.Errorf("processes: %v", m)
	}
	if m := e.Legacy(t, "GET", "/v2/processes?agent_id="+ws+"&limit=1", "", 200); count(m, "processes") != 1 {
		t.Errorf("limit 1: %v", m)
	}
	p := e.Legacy(t, "GET", "/v2/processes/"+a.ID+"?agent_id="+ws, "", 200)
	if p["name"] != "Greeter" || fmt.Sprint(p["stages"]) != "[Draft Published]" || p["published_version"] != "2" || strings.ContainsAny(fmt.Sprint(p["created_at"])[19:], "Z+") {
		t.Errorf("process: %v", p)
	}
	g, err := e.DoGRPC(t, v2Svc+"ListProcesses", &legacyv2.ListProcessesRequest{AgentId: ws}, md)
	if err != nil || count(g, "processes") != 2 {
		t.Errorf("gRPC processes: %v %v", err, g)
	}
	g, err = e.DoGRPC(t, v2Svc+"GetProcess", &legacyv2.GetProcessRequest{Id: draftOnly.ID, AgentId: ws}, md)
	if err != nil || fmt.Sprint(g["stages"]) != "[Draft]" {
		t.Errorf("gRPC process: %v %v", err, g)
	}

	// Runs: inputs as an object, stage in any case, file ids; over gRPC with
	// inputs as an array.
	_, fileID := e.uploadBlob(t, "f1.csv", []byte("a,b\n1,2\n"))
	r1 := e.Legacy(t, "POST", "/v2/runs", `{"name":"One","process_id":"`+a.ID+`","agent_id":"`+ws+`","stage":"DRAFT","inputs":{"amount":2.5,"customer_name":"Flo"},"file_ids":["`+fileID+`"]}`, 200)
	if r1["status"] != "Created" || r1["stage"] != "Draft" || fmt.Sprint(r1["file_ids"]) != "["+fileID+"]" {
		t.Errorf("create run: %v", r1)
	}
	if r := e.API(t, "GET", e.RunPath(a.ID, fmt.Sprint(r1["id"])), "", 200); testenv.Field(r, "user_inputs.files.list.items.0.file.remote") == nil {
		t.Errorf("file_ids did not become the input `the files`: %v", r["user_inputs"])
	}
	e.Legacy(t, "POST", "/v2/runs", `{"name":"Bad","process_id":"`+a.ID+`","agent_id":"`+ws+`","stage":"DRAFT","file_ids":["nope"]}`, 400)
	inputs := mustValue(t, []any{map[string]any{"name": "amount", "value": 7}, map[string]any{"name": "customer_name", "value": "Gus"}})
	g, err = e.DoGRPC(t, v2Svc+"CreateRun", &legacyv2.CreateRunRequest{Name: "Two", ProcessId: a.ID, AgentId: ws, Stage: "Published", Inputs: inputs}, md)
	if err != nil || g["status"] != "Created" || g["stage"] != "Published" {
		t.Fatalf("gRPC create run: %v %v", err, g)
	}
	id1, id2 := fmt.Sprint(r1["id"]), fmt.Sprint(g["id"])
	e.WaitRun(t, a.ID, id1, "completed")
	e.WaitRun(t, a.ID, id2, "completed")
	got := e.Legacy(t, "GET", "/v2/runs/"+id1, "", 200)
	if got["status"] != "Completed" || got["name"] != "One" || testenv.Field(got, "outputs.1.name") != "output total" || testenv.Field(got, "outputs.1.value") != 5.0 {
		t.Errorf("get run: %v", got)
	}
	g, err = e.DoGRPC(t, v2Svc+"GetRun", &legacyv2.GetRunRequest{Id: id2}, md)
	if err != nil || g["status"] != "Completed" || testenv.Field(g, "outputs.0.value") != "Hello, Gus" || testenv.Field(g, "outputs.1.value") != 14.0 {
		t.Errorf("gRPC get run: %v %v", err, g)
	}
	list := e.Legacy(t, "GET", "/v2/runs?process_id="+a.ID+"&agent_id="+ws, "", 200)
	if count(list, "runs") != 2 || testenv.Field(list, "runs.0.id") != id2 || testenv.Field(list, "runs.1.id") != id1 {
		t.Errorf("list runs (newest first): %v", list)
	}
	if l := e.Legacy(t, "GET", "/v2/runs?process_id="+a.ID+"&agent_id="+ws+"&limit=1", "", 200); count(l, "runs") != 1 {
		t.Errorf("limit 1: %v", l)
	}
	g, err = e.DoGRPC(t, v2Svc+"ListRuns", &legacyv2.ListRunsRequest{ProcessId: a.ID, AgentId: ws}, md)
	if err != nil || count(g, "runs") != 2 {
		t.Errorf("gRPC list runs: %v %v", err, g)
	}

	// Errors in the v2 shape; none creates a run.
	before := e.RunCount(t)
	other := e.NewWorkspace(t, "Elsewhere")
	scoped := e.NewKey(t, testenv.KeySpec{Workspaces: []string{other}})
	run := func(extra string) string {
		return `{"name":"n","process_id":"` + a.ID + `","agent_id":"` + ws + `"` + extra + `}`
	}
	errs := []struct {
		name, method, path, body, key string
		want                          int
	}{
		{"processes without agent", "GET", "/v2/processes", "", key, 400},
		{"processes negative limit", "GET", "/v2/processes?agent_id=" + ws + "&limit=-1", "", key, 400},
		{"processes of unknown agent", "GET", "/v2/processes?agent_id=nope", "", key, 404},
		{"processes of agent out of scope", "GET", "/v2/processes?agent_id=" + ws, "", scoped, 403},
		{"unknown process", "GET", "/v2/processes/nope?agent_id=" + ws, "", key, 404},
		{"unknown run", "GET", "/v2/runs/nope", "", key, 404},
		{"run out of scope", "GET", "/v2/runs/" + id1, "", scoped, 403},
		{"runs of unknown process", "GET", "/v2/runs?process_id=nope&agent_id=" + ws, "", key, 404},
		{"runs without process", "GET", "/v2/runs?agent_id=" + ws, "", key, 400},
		{"create without stage", "POST", "/v2/runs", run(``), key, 400},
		{"create bad stage", "POST", "/v2/runs", run(`,"stage":"Live"`), key, 400},
		{"create without name", "POST", "/v2/runs", `{"process_id":"` + a.ID + `","agent_id":"` + ws + `","stage":"Draft"}`, key, 400},
		{"create unknown process", "POST", "/v2/runs", `{"name":"n","process_id":"nope","agent_id":"` + ws + `","stage":"Draft"}`, key, 404},
		{"create published never published", "POST", "/v2/runs", `{"name":"n","process_id":"` + draftOnly.ID + `","agent_id":"` + ws + `","stage":"Published"}`, key, 400},
		{"create inputs a string", "POST", "/v2/runs", run(`,"stage":"Draft","inputs":"x"`), key, 400},
		{"create input without name", "POST", "/v2/runs", run(`,"stage":"Draft","inputs":[{"value":1}]`), key, 400},
		{"create input unknown field", "POST", "/v2/runs", run(`,"stage":"Draft","inputs":[{"name":"a","valeu":1}]`), key, 400},
		{"create out of scope", "POST", "/v2/runs", run(`,"stage":"Draft"`), scoped, 403},
		{"create unknown field", "POST", "/v2/runs", run(`,"stage":"Draft","bogus":1`), key, 400},
	}
	for _, c := range errs {
		t.Run(c.name, func(t *testing.T) {
			m := e.legacyErr(t, c.method, c.path, c.body, c.key, c.want)
			if m["status_code"] != float64(c.want) || m["message"] == nil {
				t.Errorf("body: %v", m)
			}
		})
	}
	if _, err := e.DoGRPC(t, v2Svc+"CreateRun", &legacyv2.CreateRunRequest{Name: "n", ProcessId: a.ID, AgentId: ws, Stage: "Live"}, md); status.Code(err) != codes.InvalidArgument {
		t.Errorf("gRPC bad stage: %v", err)
	}
	if _, err := e.DoGRPC(t, v2Svc+"GetRun", &legacyv2.GetRunRequest{Id: "nope"}, md); status.Code(err) != codes.NotFound {
		t.Errorf("gRPC unknown run: %v", err)
	}
	if got := e.RunCount(t); got != before {
		t.Errorf("runs = %d after bad calls, want %d", got, before)
	}
	// Files: see TestLegacyV2FilesWorkflow (files_test.go).
	if code, _, raw := e.DoHTTP(t, "POST", "/v2/files", `{"file_name":"a.pdf","agent_id":"`+ws+`"}`, map[string]string{"x-api-key": key}); code != http.StatusOK {
		t.Errorf("POST /v2/files: %d %s", code, raw)
	}
}

// uploadBlob uploads content through POST /v1/upload and returns its blob URL
// and file id.
func (e *testEnv) uploadBlob(t *testing.T, name string, content []byte) (string, string) {
	t.Helper()
	m := e.Legacy(t, "POST", "/v1/upload", `{"file_name":"`+name+`","content_type":"application/octet-stream"}`, 200)
	if code, _, raw := e.fileHTTP(t, "PUT", fmt.Sprint(m["upload_url"]), "", content, ""); code != 200 {
		t.Fatalf("upload: %d %s", code, raw)
	}
	blob := fmt.Sprint(m["blob_url"])
	f, err := server.ResolveFile(t.Context(), e.Store, e.Init.OrganizationID, blob)
	if err != nil {
		t.Fatal(err)
	}
	return blob, f.ID
}
