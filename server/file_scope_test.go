package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

const fileSvc = "/prose.platform.v1.FileService/"

// storedFile makes an uploaded file of workspace ws ("" for the
// organization as a whole).
func (e *testEnv) storedFile(t *testing.T, ws string) string {
	t.Helper()
	f, err := e.Store.CreateFile(context.Background(), store.File{
		OrganizationID: e.Init.OrganizationID, WorkspaceID: ws, Filename: "f.txt", MimeType: "text/plain",
	}, []byte("secret of "+ws), true)
	if err != nil {
		t.Fatal(err)
	}
	return f.ID
}

// TestFilesHonourWorkspaceScope is the authorization matrix of files: the
// metadata, download, signed download URL and delete of a file of the
// caller's workspace, of another workspace and of the organization as a
// whole, for a key of all workspaces, a key scoped to the first workspace,
// a key scoped to both and a read-only key, over HTTP and gRPC. Out of
// scope is PERMISSION_DENIED WORKSPACE_OUT_OF_SCOPE, as for every resource
// found by id (v2 runs, v1 workers).
func TestFilesHonourWorkspaceScope(t *testing.T) {
	e := newTestEnv(t)
	wsA, wsB := e.Init.WorkspaceID, e.NewWorkspace(t, "B")
	callers := []struct {
		name string
		key  string
		// may reports whether the caller reaches a file of ws ("": the
		// organization's) for reading and for deleting.
		read, del func(ws string) bool
	}{
		{"all workspaces", e.Init.APIKey, func(string) bool { return true }, func(string) bool { return true }},
		{"scoped to A", e.NewKey(t, testenv.KeySpec{Workspaces: []string{wsA}}), func(ws string) bool { return ws == wsA }, func(ws string) bool { return ws == wsA }},
		{"scoped to A and B", e.NewKey(t, testenv.KeySpec{Workspaces: []string{wsA, wsB}}), func(ws string) bool { return ws != "" }, func(ws string) bool { return ws != "" }},
		{"read-only", e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly}), func(string) bool { return true }, func(string) bool { return false }},
	}
	type op struct {
		name, rpc, method, path, body string
		req                           func(id string) proto.Message
		write                         bool
	}
	org := e.Init.OrganizationID
	ops := []op{
		{name: "metadata", rpc: "GetFileMetadata", method: http.MethodGet, path: "/files/%s/metadata",
			req: func(id string) proto.Message {
				return &platformv1.GetFileMetadataRequest{OrganizationId: org, File: id}
			}},
		{name: "download", rpc: "DownloadFile", method: http.MethodGet, path: "/files/%s:download",
			req: func(id string) proto.Message { return &platformv1.DownloadFileRequest{OrganizationId: org, File: id} }},
		{name: "signed download URL", rpc: "GenerateDownloadUrl", method: http.MethodPost, path: "/files/%s:generateDownloadUrl", body: "{}",
			req: func(id string) proto.Message {
				return &platformv1.GenerateDownloadUrlRequest{OrganizationId: org, File: id}
			}},
		{name: "delete", rpc: "DeleteFile", method: http.MethodDelete, path: "/files/%s", write: true,
			req: func(id string) proto.Message { return &platformv1.DeleteFileRequest{OrganizationId: org, File: id} }},
	}
	for _, c := range callers {
		for _, fileWS := range []struct{ name, ws string }{{"A", wsA}, {"B", wsB}, {"organization", ""}} {
			for _, o := range ops {
				allowed, reason := c.read(fileWS.ws), transport.ReasonName(transport.ReasonWorkspaceOutOfScope)
				if o.write {
					allowed = c.del(fileWS.ws)
					if c.name == "read-only" {
						reason = transport.ReasonName(transport.ReasonAPIKeyReadOnly)
					}
				}
				name := c.name + "/" + o.name + " of a file of " + fileWS.name
				t.Run(name+"/http", func(t *testing.T) {
					id := e.storedFile(t, fileWS.ws)
					st, _, raw := e.fileHTTP(t, o.method, "/api/v1/organizations/"+org+fmt.Sprintf(o.path, id), "application/json", []byte(o.body), c.key)
					if allowed {
						if st != http.StatusOK {
							t.Fatalf("HTTP %d %s, want 200", st, raw)
						}
						if o.name == "signed download URL" {
							u := fmt.Sprint(jsonMap(t, raw)["download_uri"])
							if st, _, got := e.fileHTTP(t, http.MethodGet, u, "", nil, ""); st != 200 || string(got) != "secret of "+fileWS.ws {
								t.Errorf("GET the signed URL: %d %q", st, got)
							}
						}
						return
					}
					if m := jsonMap(t, raw); st != http.StatusForbidden || testenv.HTTPReason(m) != reason {
						t.Errorf("HTTP %d %s, want 403 %s", st, raw, reason)
					}
					if _, err := e.Store.GetFile(context.Background(), org, id); err != nil {
						t.Errorf("the file is gone after a refused call: %v", err)
					}
				})
				t.Run(name+"/grpc", func(t *testing.T) {
					id := e.storedFile(t, fileWS.ws)
					_, err := e.DoGRPC(t, fileSvc+o.rpc, o.req(id), metadata.Pairs("authorization", "Bearer "+c.key))
					if allowed {
						if err != nil {
							t.Fatalf("%v, want OK", err)
						}
						return
					}
					if status.Code(err) != codes.PermissionDenied || testenv.GRPCReason(err) != reason {
						t.Errorf("%v, want PERMISSION_DENIED %s", err, reason)
					}
				})
			}
		}
	}
}

// TestFilesMadeInScope: a file made without naming a workspace
// (files:upload, files:generateUploadUrl, /v1/upload) belongs to the
// organization when the key is for all workspaces and to the key's
// workspace when it is scoped to one; a key scoped to several cannot place
// it and is refused. /v2/files places it in agent_id, which must be in
// scope. A run can only be given a file its caller may read.
func TestFilesMadeInScope(t *testing.T) {
	e := newTestEnv(t)
	org, wsA, wsB := e.Init.OrganizationID, e.Init.WorkspaceID, e.NewWorkspace(t, "B")
	keys := map[string]string{
		"all":  e.Init.APIKey,
		"A":    e.NewKey(t, testenv.KeySpec{Workspaces: []string{wsA}}),
		"A+B":  e.NewKey(t, testenv.KeySpec{Workspaces: []string{wsA, wsB}}),
		"read": e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly}),
	}
	wantWS := map[string]string{"all": "", "A": wsA}
	fileWS := func(t *testing.T, id string) string {
		t.Helper()
		f, err := e.Store.GetFile(context.Background(), org, id)
		if err != nil {
			t.Fatal(err)
		}
		return f.WorkspaceID
	}
	for _, who := range []string{"all", "A", "A+B", "read"} {
		key := keys[who]
		ws, ok := wantWS[who]
		reason := transport.ReasonName(transport.ReasonWorkspaceOutOfScope)
		if who == "read" {
			reason = transport.ReasonName(transport.ReasonAPIKeyReadOnly)
		}
		t.Run(who+"/files:upload/http", func(t *testing.T) {
			st, _, raw := e.fileHTTP(t, http.MethodPost, "/api/v1/organizations/"+org+"/files:upload?filename=a.txt", "text/plain", []byte("a"), key)
			m := jsonMap(t, raw)
			if !ok {
				if st != http.StatusForbidden || testenv.HTTPReason(m) != reason {
					t.Errorf("HTTP %d %s, want 403 %s", st, raw, reason)
				}
				return
			}
			if st != http.StatusOK {
				t.Fatalf("HTTP %d %s", st, raw)
			}
			if got := fileWS(t, store.LastSegment(fmt.Sprint(testenv.Field(m, "metadata.name")))); got != ws {
				t.Errorf("file of workspace %q, want %q", got, ws)
			}
		})
		t.Run(who+"/files:upload/grpc", func(t *testing.T) {
			m, err := e.DoGRPC(t, fileSvc+"UploadFile", &platformv1.UploadFileRequest{OrganizationId: org, Filename: "a.txt",
				Content: httpBody("text/plain", "a")}, metadata.Pairs("authorization", "Bearer "+key))
			if !ok {
				if status.Code(err) != codes.PermissionDenied || testenv.GRPCReason(err) != reason {
					t.Errorf("%v, want PERMISSION_DENIED %s", err, reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fileWS(t, store.LastSegment(fmt.Sprint(testenv.Field(m, "metadata.name")))); got != ws {
				t.Errorf("file of workspace %q, want %q", got, ws)
			}
		})
		t.Run(who+"/files:generateUploadUrl", func(t *testing.T) {
			st, _, raw := e.fileHTTP(t, http.MethodPost, "/api/v1/organizations/"+org+"/files:generateUploadUrl", "application/json", []byte("{}"), key)
			m := jsonMap(t, raw)
			if !ok {
				if st != http.StatusForbidden || testenv.HTTPReason(m) != reason {
					t.Errorf("HTTP %d %s, want 403 %s", st, raw, reason)
				}
				_, err := e.DoGRPC(t, fileSvc+"GenerateUploadUrl", &platformv1.GenerateUploadUrlRequest{OrganizationId: org}, metadata.Pairs("authorization", "Bearer "+key))
				if status.Code(err) != codes.PermissionDenied || testenv.GRPCReason(err) != reason {
					t.Errorf("gRPC: %v, want PERMISSION_DENIED %s", err, reason)
				}
				return
			}
			if st != http.StatusOK {
				t.Fatalf("HTTP %d %s", st, raw)
			}
			st, _, raw = e.fileHTTP(t, http.MethodPut, fmt.Sprint(m["upload_uri"])+"?filename=b.txt", "text/plain", []byte("b"), "")
			if st != http.StatusOK {
				t.Fatalf("PUT to the upload URL: %d %s", st, raw)
			}
			if got := fileWS(t, store.LastSegment(fmt.Sprint(testenv.Field(jsonMap(t, raw), "metadata.name")))); got != ws {
				t.Errorf("file of workspace %q, want %q", got, ws)
			}
		})
		t.Run(who+"/v1/upload", func(t *testing.T) {
			st, m, raw := e.DoHTTP(t, http.MethodPost, "/v1/upload", `{"file_name":"c.txt"}`, map[string]string{"x-api-key": key})
			_, gerr := e.DoGRPC(t, v1Svc+"Upload", &legacyv1.UploadRequest{FileName: "c.txt"}, metadata.Pairs("x-api-key", key))
			if !ok {
				if st != http.StatusBadRequest || m["statusCode"] != float64(400) {
					t.Errorf("HTTP %d %s, want the v1 400 of a key outside its scope", st, raw)
				}
				if status.Code(gerr) != codes.PermissionDenied || testenv.GRPCReason(gerr) != reason {
					t.Errorf("gRPC: %v, want PERMISSION_DENIED %s", gerr, reason)
				}
				return
			}
			if st != http.StatusOK || gerr != nil {
				t.Fatalf("HTTP %d %s; gRPC %v", st, raw, gerr)
			}
			st, _, raw = e.fileHTTP(t, http.MethodPut, fmt.Sprint(m["upload_url"]), "", []byte("c"), "")
			if st != http.StatusOK {
				t.Fatalf("PUT to upload_url: %d %s", st, raw)
			}
			if got := fileWS(t, store.LastSegment(fmt.Sprint(testenv.Field(jsonMap(t, raw), "metadata.name")))); got != ws {
				t.Errorf("file of workspace %q, want %q", got, ws)
			}
		})
	}
	// /v2/files: agent_id must be in the key's scope.
	st, m, raw := e.DoHTTP(t, http.MethodPost, "/v2/files", `{"file_name":"d.txt","agent_id":"`+wsB+`"}`, map[string]string{"x-api-key": keys["A"]})
	if st != http.StatusForbidden || m["status_code"] != float64(403) {
		t.Errorf("/v2/files for another agent: HTTP %d %s", st, raw)
	}
	if _, err := e.DoGRPC(t, v2Svc+"CreateFile", &legacyv2.CreateFileRequest{FileName: "d.txt", AgentId: wsB}, metadata.Pairs("x-api-key", keys["A"])); status.Code(err) != codes.PermissionDenied {
		t.Errorf("/v2/files for another agent over gRPC: %v", err)
	}

	// A run is given only files its caller may read: the organization's
	// file is outside a scoped key, even for a run of its workspace.
	a := e.ExcAutomation(t, "the x is 1")
	for _, c := range []struct {
		name, file string
		want       int
	}{
		{"a file of the workspace", e.storedFile(t, wsA), http.StatusOK},
		{"a file of the organization", e.storedFile(t, ""), http.StatusBadRequest},
		{"a file of another workspace", e.storedFile(t, wsB), http.StatusBadRequest},
	} {
		body := `{"name":"r","process_id":"` + a.ID + `","agent_id":"` + wsA + `","stage":"Draft","file_ids":["` + c.file + `"]}`
		st, _, raw := e.DoHTTP(t, http.MethodPost, "/v2/runs", body, map[string]string{"x-api-key": keys["A"]})
		if st != c.want {
			t.Errorf("/v2/runs with %s: HTTP %d %s, want %d", c.name, st, raw, c.want)
		}
		_, err := e.DoGRPC(t, v2Svc+"CreateRun", &legacyv2.CreateRunRequest{Name: "r", ProcessId: a.ID, AgentId: wsA, Stage: "Draft", FileIds: []string{c.file}},
			metadata.Pairs("x-api-key", keys["A"]))
		if wantOK := c.want == http.StatusOK; (err == nil) != wantOK || !wantOK && !strings.Contains(err.Error(), "file") {
			t.Errorf("CreateRun over gRPC with %s: %v", c.name, err)
		}
	}
}

func httpBody(contentType, data string) *httpbody.HttpBody {
	return &httpbody.HttpBody{ContentType: contentType, Data: []byte(data)}
}
