package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// violationFields returns the BadRequest fields of an rpcStatus body.
func violationFields(m map[string]any) []string {
	var out []string
	details, _ := m["details"].([]any)
	for _, d := range details {
		dm, _ := d.(map[string]any)
		vs, _ := dm["field_violations"].([]any)
		for _, v := range vs {
			out = append(out, fmt.Sprint(v.(map[string]any)["field"]))
		}
	}
	return out
}

func grpcViolationFields(err error) []string {
	var out []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField())
			}
		}
	}
	return out
}

// TestLimitsOnWrite: a title, english_code, run inputs or event over its
// limit, and a NUL character in any string, are INVALID_ARGUMENT with a
// violation naming the field, over HTTP and gRPC, and nothing is stored.
func TestLimitsOnWrite(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Greeter", greetCode, true)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	longTitle := strings.Repeat("t", store.MaxTitleBytes+1)
	bigText := strings.Repeat("x", store.MaxInputBytes+1)
	bigCode := "the output note is \"" + strings.Repeat("c", store.MaxCodeBytes) + "\"\n"
	bigEvent := strings.Repeat("e", store.MaxEventBytes+1)
	wsPath := "/api/v1/organizations/" + org + "/workspaces"
	evPath := e.RunPath(a.ID, "r0") + "/agents/prose/events"
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	wsc := platformv1.NewWorkspaceServiceClient(e.Conn)
	ac := platformv1.NewAutomationServiceClient(e.Conn)

	for _, c := range []struct {
		name, method, path, body string
		legacy                   bool
		grpc                     func() error
		reason, field            string
	}{
		{
			name: "workspace title too long", method: "POST", path: wsPath, body: `{"title":` + testenv.JSONStr(longTitle) + `}`,
			grpc: func() error {
				_, err := wsc.CreateWorkspace(ctx, &platformv1.CreateWorkspaceRequest{OrganizationId: org, Workspace: &platformv1.Workspace{Title: longTitle}})
				return err
			},
			reason: "FIELD_TOO_LARGE", field: "workspace.title",
		},
		{
			name: "NUL in a workspace title", method: "POST", path: wsPath, body: `{"title":"Sales\u0000Ops"}`,
			grpc: func() error {
				_, err := wsc.CreateWorkspace(ctx, &platformv1.CreateWorkspaceRequest{OrganizationId: org, Workspace: &platformv1.Workspace{Title: "Sales\x00Ops"}})
				return err
			},
			reason: "INVALID_CHARACTER", field: "workspace.title",
		},
		{
			name: "NUL in an automation's name", method: "POST", path: e.AutomationsPath(), body: `{"display_name":"a\u0000b","english_code":"the output x is 1\n"}`,
			grpc: func() error {
				_, err := ac.CreateAutomation(ctx, &platformv1.CreateAutomationRequest{OrganizationId: org, WorkspaceId: ws,
					Automation: &platformv1.Automation{DisplayName: "a\x00b", EnglishCode: "the output x is 1\n"}})
				return err
			},
			reason: "INVALID_CHARACTER", field: "automation.display_name",
		},
		{
			name: "description too long", method: "POST", path: e.AutomationsPath(),
			body: `{"display_name":"d","english_code":"the output x is 1\n","description":` + testenv.JSONStr(strings.Repeat("d", store.MaxTextBytes+1)) + `}`,
			grpc: func() error {
				_, err := ac.CreateAutomation(ctx, &platformv1.CreateAutomationRequest{OrganizationId: org, WorkspaceId: ws,
					Automation: &platformv1.Automation{DisplayName: "d", EnglishCode: "the output x is 1\n", Description: strings.Repeat("d", store.MaxTextBytes+1)}})
				return err
			},
			reason: "FIELD_TOO_LARGE", field: "automation.description",
		},
		{
			name: "english_code too large", method: "POST", path: e.AutomationsPath(), body: `{"display_name":"big","english_code":` + testenv.JSONStr(bigCode) + `}`,
			grpc: func() error {
				_, err := ac.CreateAutomation(ctx, &platformv1.CreateAutomationRequest{OrganizationId: org, WorkspaceId: ws,
					Automation: &platformv1.Automation{DisplayName: "big", EnglishCode: bigCode}})
				return err
			},
			reason: "FIELD_TOO_LARGE", field: "automation.english_code",
		},
		{
			name: "run inputs too large", method: "POST", path: e.AutomationsPath() + "/" + a.ID + ":invoke",
			body: `{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"customer_name":{"text":` + testenv.JSONStr(bigText) + `}}}`,
			grpc: func() error {
				_, err := ac.InvokeAutomation(ctx, &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID,
					Stage:  platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT,
					Inputs: map[string]*platformv1.Value{"customer_name": {Kind: &platformv1.Value_Text{Text: bigText}}}})
				return err
			},
			reason: "FIELD_TOO_LARGE", field: "inputs",
		},
		{
			name: "event too large", method: "POST", path: evPath,
			body: `{"user_message":{"content_list":{"items":[{"text":` + testenv.JSONStr(bigEvent) + `}]}}}`,
			grpc: func() error {
				_, err := platformv1.NewEventServiceClient(e.Conn).CreateEvent(ctx, &platformv1.CreateEventRequest{OrganizationId: org, WorkspaceId: ws,
					AutomationId: a.ID, RunId: "r0", AgentId: "prose",
					Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{
						ContentList: &platformv1.InputContentList{Items: []*platformv1.InputContent{{Content: &platformv1.InputContent_Text{Text: bigEvent}}}}}}}})
				return err
			},
			reason: "FIELD_TOO_LARGE", field: "event",
		},
		{
			name: "v1 parameters too large", method: "POST", path: "/v1/invoke/" + a.PublishedShare, legacy: true,
			body: `{"customer_name":` + testenv.JSONStr(bigText) + `}`,
			grpc: func() error {
				p, _ := structpb.NewStruct(map[string]any{"customer_name": bigText})
				_, err := legacyv1.NewLegacyServiceClient(e.Conn).Invoke(metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-api-key", e.Init.APIKey)),
					&legacyv1.InvokeRequest{ShareId: a.PublishedShare, Parameters: p})
				return err
			},
			reason: "FIELD_TOO_LARGE", field: "parameters",
		},
		{
			name: "NUL in a v2 run name", method: "POST", path: "/v2/runs", legacy: true,
			body: `{"name":"a\u0000","process_id":"` + a.ID + `","agent_id":"` + ws + `","stage":"Draft"}`,
			grpc: func() error {
				_, err := legacyv2.NewLegacyServiceClient(e.Conn).CreateRun(metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-api-key", e.Init.APIKey)),
					&legacyv2.CreateRunRequest{Name: "a\x00", ProcessId: a.ID, AgentId: ws, Stage: "Draft"})
				return err
			},
			reason: "INVALID_CHARACTER", field: "name",
		},
	} {
		t.Run(c.name+"/http", func(t *testing.T) {
			h := map[string]string{"Authorization": "Bearer " + e.Init.APIKey}
			if c.legacy {
				h = map[string]string{"x-api-key": e.Init.APIKey}
			}
			code, m, raw := e.DoHTTP(t, c.method, c.path, c.body, h)
			if code != http.StatusBadRequest {
				t.Fatalf("HTTP %d, want 400: %.300s", code, raw)
			}
			if c.legacy && strings.HasPrefix(c.path, "/v1/") {
				if !strings.Contains(fmt.Sprint(m["message"]), c.field) {
					t.Errorf("v1 message %q does not name %s", m["message"], c.field)
				}
				return
			}
			if c.legacy {
				m["code"] = float64(codes.InvalidArgument) // v2 has status_code; its details are the same
			}
			if m["code"] != float64(codes.InvalidArgument) || testenv.HTTPReason(m) != c.reason || !slices.Contains(violationFields(m), c.field) {
				t.Errorf("body %.500s, want %s naming %s", raw, c.reason, c.field)
			}
		})
		t.Run(c.name+"/grpc", func(t *testing.T) {
			err := c.grpc()
			if status.Code(err) != codes.InvalidArgument || testenv.GRPCReason(err) != c.reason || !slices.Contains(grpcViolationFields(err), c.field) {
				t.Errorf("error %.300v, want INVALID_ARGUMENT %s naming %s (fields %v)", err, c.reason, c.field, grpcViolationFields(err))
			}
		})
	}
	// Nothing was stored.
	page, err := e.Store.ListWorkspaces(context.Background(), store.ListWorkspacesRequest{OrganizationID: org})
	if err != nil || len(page.Items) != 1 {
		t.Errorf("workspaces after refused creates: %d %v", len(page.Items), err)
	}
	// At the limit is fine.
	e.API(t, "POST", wsPath, `{"title":`+testenv.JSONStr(strings.Repeat("t", store.MaxTitleBytes))+`}`, 200)
}

// TestStoredIsReadable: what the limits let in can be read back, one by one
// and in whole list pages, over HTTP and over a gRPC client with the default
// 4 MiB receive limit: a list stops a page at its byte budget and gives a
// next_page_token. (Before, a page of large automations or runs answered
// 429 over HTTP.)
func TestStoredIsReadable(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	// Code just under the limit: a program with one long text.
	code := "the output note is \"" + strings.Repeat("n", store.MaxCodeBytes-64) + "\"\n"
	const n = 5 // published too: ~2 MiB each, ~10 MiB in all
	for i := range n {
		e.MkAutomation(t, fmt.Sprintf("Big %d", i), code, true)
	}
	text := strings.Repeat("i", store.MaxInputBytes-64)
	small := e.MkAutomation(t, "Echo", "get the customer name\nthe output name is the customer name\n", false)
	var runIDs []string
	for range 4 {
		m := e.API(t, "POST", e.AutomationsPath()+"/"+small.ID+":invoke",
			`{"stage":"AUTOMATION_STAGE_DRAFT","inputs":{"customer_name":{"text":`+testenv.JSONStr(text)+`}}}`, 200)
		runIDs = append(runIDs, fmt.Sprint(m["run_id"]))
	}
	for _, id := range runIDs {
		e.WaitRun(t, small.ID, id, "completed")
	}

	// HTTP: page through automations and runs.
	countHTTP := func(path, key string) (items, pages int) {
		tok := ""
		for {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			m := e.API(t, "GET", path+sep+"page_size=1000&page_token="+tok, "", 200)
			list, _ := m[key].([]any)
			items += len(list)
			pages++
			tok, _ = m["next_page_token"].(string)
			if tok == "" || pages > 20 {
				return items, pages
			}
		}
	}
	if items, pages := countHTTP(e.AutomationsPath(), "automations"); items != n+1 || pages < 3 {
		t.Errorf("HTTP automations: %d in %d pages, want %d in at least 3", items, pages, n+1)
	}
	if items, pages := countHTTP(e.AutomationsPath()+"/-/runs", "runs"); items != 4 || pages < 2 {
		t.Errorf("HTTP runs: %d in %d pages, want 4 in at least 2", items, pages)
	}
	if m := e.API(t, "GET", e.RunPath(small.ID, runIDs[0]), "", 200); testenv.Field(m, "user_inputs.customer_name.text") != text {
		t.Errorf("HTTP run inputs not read back")
	}

	// gRPC with a stock client (4 MiB receive limit).
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	ac := platformv1.NewAutomationServiceClient(e.Conn)
	items, tok, pages := 0, "", 0
	for {
		resp, err := ac.ListAutomations(ctx, &platformv1.ListAutomationsRequest{OrganizationId: org, WorkspaceId: ws, PageSize: 1000, PageToken: tok})
		if err != nil {
			t.Fatalf("gRPC ListAutomations page %d: %v", pages+1, err)
		}
		items += len(resp.GetAutomations())
		pages++
		if tok = resp.GetNextPageToken(); tok == "" || pages > 20 {
			break
		}
	}
	if items != n+1 {
		t.Errorf("gRPC automations: %d in %d pages", items, pages)
	}
	rc := platformv1.NewRunServiceClient(e.Conn)
	got, err := rc.GetRun(ctx, &platformv1.GetRunRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: small.ID, RunId: runIDs[1]})
	if err != nil || got.GetUserInputs()["customer_name"].GetText() != text {
		t.Errorf("gRPC GetRun: %v", err)
	}
}

// TestBodyOverLimit: a JSON body over the bound is 413 on every prefix,
// whether its Content-Length says so or it is sent chunked, and the body of
// an upload path has its own, larger bound. (Before, a 33–40 MiB /v1/invoke
// body answered 500, and 429 on /api/v1.)
func TestBodyOverLimit(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "Greeter", greetCode, true)
	big := `{"customer_name":"` + strings.Repeat("x", 9<<20) + `"}` // over the 8 MiB JSON bound
	for _, c := range []struct {
		path, header, value string
		want                string // a piece of the body
	}{
		{"/v1/invoke/" + a.PublishedShare, "x-api-key", e.Init.APIKey, `"statusCode":413`},
		{"/v2/runs", "x-api-key", e.Init.APIKey, `"status_code":413`},
		{e.AutomationsPath() + "/" + a.ID + ":invoke", "Authorization", "Bearer " + e.Init.APIKey, `"REQUEST_TOO_LARGE"`},
	} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s chunked=%v", c.path, chunked), func(t *testing.T) {
				var body io.Reader = strings.NewReader(big)
				if chunked {
					body = io.MultiReader(bytes.NewReader([]byte(big))) // no length: sent chunked
				}
				req, err := http.NewRequest("POST", e.Srv.URL+c.path, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(c.header, c.value)
				resp, err := e.Srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(raw), c.want) {
					t.Errorf("HTTP %d %.300s, want 413 with %s", resp.StatusCode, raw, c.want)
				}
			})
		}
	}
}

// TestInvokeUnpublishedIsBadRequest: /v1/invoke with the published share id
// of an automation never published answers 400, as POST /v2/runs does (it
// was 500).
func TestInvokeUnpublishedIsBadRequest(t *testing.T) {
	e := newTestEnv(t)
	m := e.API(t, "POST", e.AutomationsPath(), `{"display_name":"Draft only","english_code":`+testenv.JSONStr(greetCode)+`}`, 200)
	share := fmt.Sprint(m["published_share_id"])
	id := store.LastSegment(fmt.Sprint(m["name"]))
	got := e.legacyErr(t, "POST", "/v1/invoke/"+share, `{}`, e.Init.APIKey, http.StatusBadRequest)
	if got["statusCode"] != float64(400) {
		t.Errorf("v1 body %v", got)
	}
	e.legacyErr(t, "POST", "/v2/runs", `{"name":"n","process_id":"`+id+`","agent_id":"`+e.Init.WorkspaceID+`","stage":"Published"}`, e.Init.APIKey, http.StatusBadRequest)
}

// slowRequest sends a request whose body promises more bytes than it sends
// and stalls, and returns the response.
func slowRequest(t *testing.T, addr, path string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var hs strings.Builder
	for k, v := range header {
		hs.WriteString(k + ": " + v + "\r\n")
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: 1000\r\n\r\n{\"a", path, hs.String())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestSlowBodyIsCut: a body that stops arriving is cut at the read deadline
// with 408 in its path's shape (it used to hold the connection for as long
// as the client liked).
func TestSlowBodyIsCut(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.BodyReadTimeout = 100 * time.Millisecond })
	a := e.MkAutomation(t, "Greeter", greetCode, true)
	addr := strings.TrimPrefix(e.Srv.URL, "http://")
	bearer := map[string]string{"Authorization": "Bearer " + e.Init.APIKey, "Content-Type": "application/octet-stream"}
	for _, c := range []struct {
		path   string
		header map[string]string
		want   string
	}{
		{"/v1/invoke/" + a.PublishedShare, map[string]string{"x-api-key": e.Init.APIKey, "Content-Type": "application/json"}, `"statusCode":408`},
		{"/v2/runs", map[string]string{"x-api-key": e.Init.APIKey, "Content-Type": "application/json"}, `"status_code":408`},
		{"/api/v1/organizations/" + e.Init.OrganizationID + "/files:upload?filename=a.bin", bearer, `"REQUEST_BODY_TIMEOUT"`},
	} {
		code, _, body := slowRequest(t, addr, c.path, c.header)
		if code != http.StatusRequestTimeout || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 408 with %s", c.path, code, body, c.want)
		}
	}
}

// TestUploadsInFlightBounded: with --max-uploads uploads being read, one
// more is 503 UPLOADS_BUSY with Retry-After; once the first is done, uploads
// are taken again.
func TestUploadsInFlightBounded(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.MaxUploads, c.UploadWait = 1, -1 })
	addr := strings.TrimPrefix(e.Srv.URL, "http://")
	path := "/api/v1/organizations/" + e.Init.OrganizationID + "/files:upload?filename=a.bin"
	// Hold the one slot; one more upload is refused at once.
	h, code, raw := holdUpload(t, addr, path, e.Init.APIKey)
	if h == nil {
		t.Fatalf("the held upload: %d %s", code, raw)
	}
	upload := func() (int, http.Header, []byte) {
		return e.fileHTTP(t, "POST", path, "text/plain", []byte("x"), e.Init.APIKey)
	}
	code, hdr, body := upload()
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || testenv.HTTPReason(jsonMap(t, body)) != "UPLOADS_BUSY" {
		t.Errorf("an upload while one is held: %d %v %s", code, hdr, body)
	}
	// Other requests are not bounded by it.
	e.API(t, "GET", "/api/v1/organizations/"+e.Init.OrganizationID+"/workspaces", "", 200)
	// Finish the held upload; its slot frees.
	if code := h.finish(t); code != 200 {
		t.Fatalf("held upload: %d", code)
	}
	// The slot is released as the held upload's handler returns, which may
	// be just after its answer arrived.
	for deadline := testtime.Deadline(testtime.Wait); ; {
		code, _, raw := upload()
		if code == 200 {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("upload after the slot freed: %d %s", code, raw)
		}
	}
}

// TestOrderByTitleAsAPersonReads: order_by=title puts "ops-east" before
// "Sales Ops" (byte order put every capital first) and folds Unicode
// ("Éclair" and "ÉCOLE" among the e's, "straße" as "strasse"), over HTTP
// and gRPC, page by page.
func TestOrderByTitleAsAPersonReads(t *testing.T) {
	e := newTestEnv(t) // its first workspace is "Ops"
	for _, title := range []string{"Sales Ops", "ops-east", "apac", "Zeta", "Zebra", "straße", "ÉCOLE", "Éclair"} {
		e.API(t, "POST", "/api/v1/organizations/"+e.Init.OrganizationID+"/workspaces", `{"title":`+testenv.JSONStr(title)+`}`, 200)
	}
	want := []string{"apac", "Éclair", "ÉCOLE", "Ops", "ops-east", "Sales Ops", "straße", "Zebra", "Zeta"}
	var got []string
	tok := ""
	for {
		m := e.API(t, "GET", "/api/v1/organizations/"+e.Init.OrganizationID+"/workspaces?order_by=title&page_size=2&page_token="+tok, "", 200)
		for _, w := range m["workspaces"].([]any) {
			got = append(got, fmt.Sprint(w.(map[string]any)["title"]))
		}
		if tok, _ = m["next_page_token"].(string); tok == "" {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("HTTP order_by=title: %q, want %q", got, want)
	}
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	resp, err := platformv1.NewWorkspaceServiceClient(e.Conn).ListWorkspaces(ctx, &platformv1.ListWorkspacesRequest{OrganizationId: e.Init.OrganizationID, OrderBy: "title desc"})
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, w := range resp.GetWorkspaces() {
		got = append(got, w.GetTitle())
	}
	if fmt.Sprint(got) != "[Zeta Zebra straße Sales Ops ops-east Ops ÉCOLE Éclair apac]" {
		t.Errorf("gRPC order_by=title desc: %q", got)
	}
}

// TestUploadBodySizes: between the file limit (32 MiB) and the upload body
// bound (40 MiB) an upload is 400 FILE_TOO_LARGE (it was 429: the gRPC
// receive bound sat at 33 MiB); above the bound it is 413.
func TestUploadBodySizes(t *testing.T) {
	e := newTestEnv(t)
	path := "/api/v1/organizations/" + e.Init.OrganizationID + "/files:upload?filename=big.bin"
	code, _, raw := e.fileHTTP(t, "POST", path, "application/octet-stream", make([]byte, 36<<20), e.Init.APIKey)
	if m := jsonMap(t, raw); code != http.StatusBadRequest || testenv.HTTPReason(m) != "FILE_TOO_LARGE" {
		t.Errorf("36 MiB: %d %.300s", code, raw)
	}
	code, _, raw = e.fileHTTP(t, "POST", path, "application/octet-stream", make([]byte, 41<<20), e.Init.APIKey)
	if m := jsonMap(t, raw); code != http.StatusRequestEntityTooLarge || testenv.HTTPReason(m) != "REQUEST_TOO_LARGE" {
		t.Errorf("41 MiB: %d %.300s", code, raw)
	}
}
