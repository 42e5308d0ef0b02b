package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/testenv"
)

// TestUploadKeepsNameAndType: the platform upload takes a multipart form
// (the part's file name and type) as well as raw bytes (?filename= or the
// Content-Disposition's name; the type from Content-Type, else from the
// name when the client sent only its default), and the metadata keeps
// them.
func TestUploadKeepsNameAndType(t *testing.T) {
	e := newTestEnv(t)
	key, org := e.Init.APIKey, e.Init.OrganizationID
	upload := "/api/v1/organizations/" + org + "/files:upload"
	meta := func(raw []byte) (string, string, string) {
		t.Helper()
		m, _ := jsonMap(t, raw)["metadata"].(map[string]any)
		return fmt.Sprint(m["filename"]), fmt.Sprint(m["mime_type"]), fmt.Sprint(m["name"])
	}
	ct, body := multipartBody(t, nil, "orders may.csv", []byte("a,b\n"))
	code, _, raw := e.fileHTTP(t, "POST", upload, ct, body, key)
	if n, mt, _ := meta(raw); code != 200 || n != "orders may.csv" || mt != "text/csv; charset=utf-8" {
		t.Fatalf("multipart upload: %d %s", code, raw)
	}
	code, _, raw = e.fileHTTP(t, "POST", upload+"?filename=renamed.csv", ct, body, key)
	if n, _, _ := meta(raw); code != 200 || n != "renamed.csv" {
		t.Fatalf("multipart upload with ?filename: %d %s", code, raw)
	}
	code, _, raw = e.fileHTTP(t, "POST", upload+"?filename=notes.txt", "application/x-www-form-urlencoded", []byte("hello"), key)
	if n, mt, _ := meta(raw); code != 200 || n != "notes.txt" || mt != "text/plain; charset=utf-8" {
		t.Fatalf("raw upload with curl's default type: %d %s", code, raw)
	}
	req, _ := http.NewRequest("POST", e.Srv.URL+upload, strings.NewReader("%PDF-1.7"))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/pdf")
	req.Header.Set("Content-Disposition", `attachment; filename="scan 1.pdf"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw = readAll(t, resp)
	if n, mt, _ := meta(raw); resp.StatusCode != 200 || n != "scan 1.pdf" || mt != "application/pdf" {
		t.Fatalf("raw upload named by Content-Disposition: %d %s", resp.StatusCode, raw)
	}
	ct, body = multipartBody(t, [][2]string{{"acl", "x"}}, "a.csv", []byte("a"))
	if code, _, raw := e.fileHTTP(t, "POST", upload, ct, body, key); code != 400 || !strings.Contains(string(raw), "unexpected form fields: acl") {
		t.Fatalf("multipart with another field: %d %s", code, raw)
	}
}

// TestRunSeesUploadedFileName: a file passed to a run (v2 file_ids, v1
// attachments, a signed download URL on the platform API) keeps the name
// given at upload: `the name of the document` is it, and the signed URL ends
// with it.
func TestRunSeesUploadedFileName(t *testing.T) {
	e := newTestEnv(t)
	key, org, ws := e.Init.APIKey, e.Init.OrganizationID, e.Init.WorkspaceID
	ct, body := multipartBody(t, nil, "invoice 7.pdf", []byte("%PDF-1.7"))
	code, _, raw := e.fileHTTP(t, "POST", "/api/v1/organizations/"+org+"/files:upload", ct, body, key)
	if code != 200 {
		t.Fatalf("upload: %d %s", code, raw)
	}
	m, _ := jsonMap(t, raw)["metadata"].(map[string]any)
	fileName := fmt.Sprint(m["name"])
	fileID := names.ID(fileName)

	c := client.New(e.Conn)
	ctx := testenv.WithKey(context.Background(), key)
	code0 := "the document is the first of the files\nthe output is the name of the document\n"
	if _, err := c.Automations.CreateAutomation(ctx, &platformv1.CreateAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "names",
		Automation: &platformv1.Automation{DisplayName: "names", EnglishCode: code0}}); err != nil {
		t.Fatal(err)
	}
	wait := func(run string) string {
		t.Helper()
		r, err := c.WaitForRun(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		out, err := client.PlainMap(r.GetState().GetCompleted().GetOutputs())
		if err != nil || len(out) == 0 {
			t.Fatalf("run %s: %v %v (inputs %v)", client.StateName(r), r.GetState(), err, r.GetUserInputs())
		}
		return string(out["output"])
	}

	// v2: file_ids reach the program as the files.
	code, vm, raw := e.DoHTTP(t, "POST", "/v2/runs", `{"name":"r","process_id":"names","agent_id":"`+ws+`","stage":"Draft","file_ids":["`+fileID+`"]}`, map[string]string{"x-api-key": key})
	if code != 200 && code != 201 {
		t.Fatalf("v2 run: %d %s", code, raw)
	}
	if got := wait(names.Run(org, ws, "names", fmt.Sprint(vm["id"]))); got != `"invoice 7.pdf"` {
		t.Errorf("v2 run: the name of the document is %s", got)
	}

	// Platform: a signed download URL, as GenerateDownloadUrl makes it.
	du, err := c.Files.GenerateDownloadUrl(ctx, &platformv1.GenerateDownloadUrlRequest{OrganizationId: org, File: fileName})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(du.GetDownloadUri(), "/"+url.PathEscape("invoice 7.pdf")) {
		t.Errorf("download URL %s does not end with the file's name", du.GetDownloadUri())
	}
	pu, _ := url.Parse(du.GetDownloadUri()) // made over gRPC: its host is the channel's
	if code, h, raw := e.fileHTTP(t, "GET", pu.EscapedPath(), "", nil, ""); code != 200 || string(raw) != "%PDF-1.7" || h.Get("Content-Type") != "application/pdf" {
		t.Errorf("download by the named URL: %d %v %q", code, h, raw)
	}
	files := &platformv1.Value{Kind: &platformv1.Value_List{List: &platformv1.List{Items: []*platformv1.Value{
		{Kind: &platformv1.Value_File{File: &platformv1.FileValue{Kind: &platformv1.FileValue_Remote{Remote: du.GetDownloadUri()}}}},
	}}}}
	run, err := c.Invoke(ctx, names.Automation(org, ws, "names"), map[string]any{"files": files}, client.Draft())
	if err != nil {
		t.Fatal(err)
	}
	if got := wait(run); got != `"invoice 7.pdf"` {
		t.Errorf("platform run: the name of the document is %s", got)
	}
	// The URL still resolves as a v1 attachment (its name segment cut off).
	a, err := c.Automations.GetAutomation(ctx, &platformv1.GetAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: "names"})
	if err != nil {
		t.Fatal(err)
	}
	code, vm, raw = e.DoHTTP(t, "POST", "/v1/invoke/"+a.GetDraftShareId()+"?attachments_key=files", `{"files":["`+du.GetDownloadUri()+`"]}`, map[string]string{"x-api-key": key})
	if code != 201 {
		t.Fatalf("v1 invoke with the URL as an attachment: %d %s", code, raw)
	}
	if got := wait(names.Run(org, ws, "names", fmt.Sprint(vm["worker_id"]))); got != `"invoice 7.pdf"` {
		t.Errorf("v1 run: the name of the document is %s", got)
	}
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}
