package server_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"google.golang.org/genproto/googleapis/api/httpbody"

	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/server/transport"
)

// fileHTTP sends a request with raw bytes; key "" sends none.
func (e *testEnv) fileHTTP(t *testing.T, method, target, contentType string, body []byte, key string) (int, http.Header, []byte) {
	t.Helper()
	if strings.HasPrefix(target, "/") {
		target = e.Srv.URL + target
	}
	req, err := http.NewRequest(method, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := e.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, raw
}

func jsonMap(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	return m
}

// multipartBody builds a form with fields (in order) and a file part.
func multipartBody(t *testing.T, fields [][2]string, filename string, content []byte) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if filename != "" {
		fw, err := mw.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(content)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), b.Bytes()
}

func (e *testEnv) files(t *testing.T) (platformv1.FileServiceClient, context.Context) {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+e.Init.APIKey)
	return platformv1.NewFileServiceClient(e.Conn), ctx
}

var bigCall = grpc.MaxCallRecvMsgSize(64 << 20)

func TestFilesHTTP(t *testing.T) {
	e := newTestEnv(t)
	key, org := e.Init.APIKey, e.Init.OrganizationID
	base := "/api/v1/organizations/" + org + "/files"

	code, _, raw := e.fileHTTP(t, "POST", base+":upload?filename=notes.txt", "text/plain", []byte("hello"), key)
	if code != 200 {
		t.Fatalf("upload: %d %s", code, raw)
	}
	meta := jsonMap(t, raw)["metadata"].(map[string]any)
	name := fmt.Sprint(meta["name"])
	id := name[strings.LastIndexByte(name, '/')+1:]
	if !strings.HasPrefix(name, "organizations/"+org+"/files/") || meta["filename"] != "notes.txt" || meta["mime_type"] != "text/plain" ||
		meta["size_bytes"] != "5" || meta["create_time"] == nil {
		t.Fatalf("upload metadata: %v", meta)
	}

	code, _, raw = e.fileHTTP(t, "GET", base+"/"+id+"/metadata", "", nil, key)
	if code != 200 || jsonMap(t, raw)["size_bytes"] != "5" || jsonMap(t, raw)["name"] != name {
		t.Fatalf("metadata: %d %s", code, raw)
	}
	code, h, raw := e.fileHTTP(t, "GET", base+"/"+id+":download", "", nil, key)
	if code != 200 || string(raw) != "hello" || h.Get("Content-Type") != "text/plain" {
		t.Fatalf("download: %d %v %q", code, h, raw)
	}

	// A missing filename, no key, another organization's path.
	code, _, raw = e.fileHTTP(t, "POST", base+":upload", "text/plain", []byte("x"), key)
	if m := jsonMap(t, raw); code != 400 || testenv.HTTPReason(m) != "REQUIRED_FIELD_MISSING" && testenv.HTTPReason(m) != transport.ReasonName(server.ReasonFilenameInvalid) {
		t.Errorf("upload without filename: %d %s", code, raw)
	}
	if code, _, raw = e.fileHTTP(t, "GET", base+"/"+id+"/metadata", "", nil, ""); code != 401 {
		t.Errorf("metadata without a key: %d %s", code, raw)
	}
	if code, _, raw = e.fileHTTP(t, "GET", "/api/v1/organizations/other/files/"+id+"/metadata", "", nil, key); code != 403 {
		t.Errorf("metadata of another organization: %d %s", code, raw)
	}

	// Signed download URL: no key.
	code, _, raw = e.fileHTTP(t, "POST", base+"/"+id+":generateDownloadUrl", "application/json", []byte(`{"expire_duration":"60s"}`), key)
	if code != 200 {
		t.Fatalf("generateDownloadUrl: %d %s", code, raw)
	}
	durl := fmt.Sprint(jsonMap(t, raw)["download_uri"])
	if !strings.HasPrefix(durl, e.Srv.URL+"/files/download/") {
		t.Fatalf("download_uri %q", durl)
	}
	code, h, raw = e.fileHTTP(t, "GET", durl, "", nil, "")
	if code != 200 || string(raw) != "hello" || h.Get("Content-Type") != "text/plain" || !strings.Contains(h.Get("Content-Disposition"), "notes.txt") {
		t.Fatalf("signed download: %d %v %q", code, h, raw)
	}
	if code, _, raw = e.fileHTTP(t, "POST", base+"/"+id+":generateDownloadUrl", "application/json", []byte(`{"expire_duration":"800000s"}`), key); code != 400 {
		t.Errorf("a lifetime over 7 days: %d %s", code, raw)
	}

	// Signed upload URL: raw PUT with ?filename=, and multipart POST.
	code, _, raw = e.fileHTTP(t, "POST", base+":generateUploadUrl", "application/json", []byte(`{}`), key)
	if code != 200 {
		t.Fatalf("generateUploadUrl: %d %s", code, raw)
	}
	uurl := fmt.Sprint(jsonMap(t, raw)["upload_uri"])
	code, _, raw = e.fileHTTP(t, "PUT", uurl+"?filename=data.csv", "text/csv", []byte("a,b\n"), "")
	if m := jsonMap(t, raw); code != 200 || testenv.Field(m, "metadata.filename") != "data.csv" || testenv.Field(m, "metadata.size_bytes") != "4" || testenv.Field(m, "metadata.mime_type") != "text/csv" {
		t.Fatalf("signed PUT: %d %s", code, raw)
	}
	ct, body := multipartBody(t, nil, "pic.png", []byte{0x89, 'P', 'N', 'G'})
	code, _, raw = e.fileHTTP(t, "POST", uurl, ct, body, "")
	if m := jsonMap(t, raw); code != 200 || testenv.Field(m, "metadata.filename") != "pic.png" || testenv.Field(m, "metadata.mime_type") != "image/png" {
		t.Fatalf("signed multipart POST: %d %s", code, raw)
	}
	if code, _, raw = e.fileHTTP(t, "PUT", uurl, "text/plain", []byte("x"), ""); code != 400 {
		t.Errorf("signed PUT without a filename: %d %s", code, raw)
	}
	// An upload URL does not download, nor a download URL upload.
	if code, _, raw = e.fileHTTP(t, "GET", strings.Replace(uurl, "/upload/", "/download/", 1), "", nil, ""); code != 403 {
		t.Errorf("upload token used to download: %d %s", code, raw)
	}

	// Delete.
	if code, _, raw = e.fileHTTP(t, "DELETE", base+"/"+id, "", nil, key); code != 200 {
		t.Fatalf("delete: %d %s", code, raw)
	}
	code, _, raw = e.fileHTTP(t, "GET", base+"/"+id+"/metadata", "", nil, key)
	if m := jsonMap(t, raw); code != 404 || testenv.HTTPReason(m) != transport.ReasonName(server.ReasonFileNotFound) {
		t.Errorf("metadata after delete: %d %s", code, raw)
	}
	if code, _, raw = e.fileHTTP(t, "GET", durl, "", nil, ""); code != 404 {
		t.Errorf("signed download after delete: %d %s", code, raw)
	}
	if code, _, _ = e.fileHTTP(t, "DELETE", base+"/"+id, "", nil, key); code != 404 {
		t.Errorf("delete twice: %d", code)
	}
}

func TestFilesGRPC(t *testing.T) {
	e := newTestEnv(t)
	c, ctx := e.files(t)
	org := e.Init.OrganizationID
	up, err := c.UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: "r.json",
		Content: &httpbody.HttpBody{ContentType: "application/json", Data: []byte(`{"a":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	m := up.GetMetadata()
	id := m.GetName()[strings.LastIndexByte(m.GetName(), '/')+1:]
	if m.GetSizeBytes() != 7 || m.GetMimeType() != "application/json" || m.GetFilename() != "r.json" {
		t.Fatalf("upload: %v", m)
	}
	got, err := c.GetFileMetadata(ctx, &platformv1.GetFileMetadataRequest{OrganizationId: org, File: id})
	if err != nil || got.GetName() != m.GetName() || got.GetSizeBytes() != 7 {
		t.Fatalf("metadata: %v %v", got, err)
	}
	body, err := c.DownloadFile(ctx, &platformv1.DownloadFileRequest{OrganizationId: org, File: id})
	if err != nil || string(body.GetData()) != `{"a":1}` || body.GetContentType() != "application/json" {
		t.Fatalf("download: %v %v", body, err)
	}
	du, err := c.GenerateDownloadUrl(ctx, &platformv1.GenerateDownloadUrlRequest{OrganizationId: org, File: id, ExpireDuration: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// Over gRPC the host is the :authority; fetch the path from the HTTP side.
	u, _ := url.Parse(du.GetDownloadUri())
	if code, _, raw := e.fileHTTP(t, "GET", u.Path, "", nil, ""); code != 200 || string(raw) != `{"a":1}` {
		t.Fatalf("signed download of a gRPC URL: %d %s", code, raw)
	}
	uu, err := c.GenerateUploadUrl(ctx, &platformv1.GenerateUploadUrlRequest{OrganizationId: org})
	if err != nil || !strings.Contains(uu.GetUploadUri(), "/files/upload/") {
		t.Fatalf("upload url: %v %v", uu, err)
	}
	if _, err := c.GenerateUploadUrl(ctx, &platformv1.GenerateUploadUrlRequest{OrganizationId: org, ExpireDuration: durationpb.New(-time.Second)}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("negative lifetime: %v", err)
	}
	if _, err := c.UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: "../x", Content: &httpbody.HttpBody{Data: []byte("x")}}); status.Code(err) != codes.InvalidArgument || testenv.GRPCReason(err) != transport.ReasonName(server.ReasonFilenameInvalid) {
		t.Errorf("path in filename: %v", err)
	}
	if _, err := c.GetFileMetadata(ctx, &platformv1.GetFileMetadataRequest{OrganizationId: "other", File: id}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another organization: %v", err)
	}
	if _, err := c.DeleteFile(ctx, &platformv1.DeleteFileRequest{OrganizationId: org, File: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DownloadFile(ctx, &platformv1.DownloadFileRequest{OrganizationId: org, File: id}); status.Code(err) != codes.NotFound || testenv.GRPCReason(err) != transport.ReasonName(server.ReasonFileNotFound) {
		t.Errorf("download after delete: %v", err)
	}
	// A read-only key reads but does not upload.
	ro := e.NewKey(t, testenv.KeySpec{Level: "read_only"})
	roCtx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+ro)
	if _, err := c.UploadFile(roCtx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: "a", Content: &httpbody.HttpBody{Data: []byte("x")}}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("read-only upload: %v", err)
	}
}

func TestFilesSizeLimit(t *testing.T) {
	e := newTestEnv(t)
	c, ctx := e.files(t)
	key, org := e.Init.APIKey, e.Init.OrganizationID
	base := "/api/v1/organizations/" + org + "/files"

	// Over gRPC's default 4 MiB, under the limit: both ways, both transports.
	big := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16)
	code, _, raw := e.fileHTTP(t, "POST", base+":upload?filename=big.bin", "application/octet-stream", big, key)
	if code != 200 {
		t.Fatalf("5 MiB upload: %d %.300s", code, raw)
	}
	id := fmt.Sprint(testenv.Field(jsonMap(t, raw), "metadata.name"))
	id = id[strings.LastIndexByte(id, '/')+1:]
	if code, _, raw = e.fileHTTP(t, "GET", base+"/"+id+":download", "", nil, key); code != 200 || !bytes.Equal(raw, big) {
		t.Fatalf("5 MiB download over HTTP: %d, %d bytes", code, len(raw))
	}
	body, err := c.DownloadFile(ctx, &platformv1.DownloadFileRequest{OrganizationId: org, File: id}, bigCall)
	if err != nil || !bytes.Equal(body.GetData(), big) {
		t.Fatalf("5 MiB download over gRPC: %v", err)
	}

	over := make([]byte, server.MaxFileBytes+1)
	code, _, raw = e.fileHTTP(t, "POST", base+":upload?filename=over.bin", "application/octet-stream", over, key)
	if m := jsonMap(t, raw); code != 400 || testenv.HTTPReason(m) != transport.ReasonName(server.ReasonFileTooLarge) || !strings.Contains(fmt.Sprint(m["message"]), "32 MiB") {
		t.Errorf("over the limit over HTTP: %d %.300s", code, raw)
	}
	_, err = c.UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: "over.bin", Content: &httpbody.HttpBody{Data: over}})
	if status.Code(err) != codes.InvalidArgument || testenv.GRPCReason(err) != transport.ReasonName(server.ReasonFileTooLarge) {
		t.Errorf("over the limit over gRPC: %v", err)
	}
	uu, err := c.GenerateUploadUrl(ctx, &platformv1.GenerateUploadUrlRequest{OrganizationId: org})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(uu.GetUploadUri())
	code, _, raw = e.fileHTTP(t, "PUT", u.Path+"?filename=over.bin", "", over, "")
	if m := jsonMap(t, raw); code != 400 || testenv.HTTPReason(m) != transport.ReasonName(server.ReasonFileTooLarge) {
		t.Errorf("over the limit to a signed URL: %d %.300s", code, raw)
	}
}

// signToken makes a token the way the server does, with its key, for
// grants the API would not make (already expired).
func (e *testEnv) signToken(t *testing.T, grant map[string]any) string {
	t.Helper()
	k, err := e.Store.ServerSecret(t.Context(), "file-url-signing", func() []byte { t.Fatal("no signing key yet"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(grant)
	payload := base64.RawURLEncoding.EncodeToString(body)
	h := hmac.New(sha256.New, k)
	h.Write([]byte("prose-file-url\n" + payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func TestFilesSignedURLsRejected(t *testing.T) {
	e := newTestEnv(t)
	c, ctx := e.files(t)
	org := e.Init.OrganizationID
	up, err := c.UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: "a.txt", Content: &httpbody.HttpBody{Data: []byte("secret")}})
	if err != nil {
		t.Fatal(err)
	}
	id := up.GetMetadata().GetName()[strings.LastIndexByte(up.GetMetadata().GetName(), '/')+1:]
	du, err := c.GenerateDownloadUrl(ctx, &platformv1.GenerateDownloadUrlRequest{OrganizationId: org, File: id})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(du.GetDownloadUri())
	tok := strings.TrimPrefix(u.Path, "/files/download/")
	payload, sig, _ := strings.Cut(tok, ".")
	// A grant for another file of the same organization, with the old signature.
	forged, _ := json.Marshal(map[string]any{"op": "download", "o": org, "f": "other", "exp": time.Now().Add(time.Hour).Unix()})
	flip := []byte(sig)
	if flip[0] == 'A' {
		flip[0] = 'B'
	} else {
		flip[0] = 'A'
	}
	expired := e.signToken(t, map[string]any{"op": "download", "o": org, "f": id, "exp": time.Now().Add(-time.Minute).Unix()})
	expiredUp := e.signToken(t, map[string]any{"op": "upload", "o": org, "exp": time.Now().Add(-time.Minute).Unix()})

	for _, c := range []struct {
		name, method, path string
		want               int
		reason             string
	}{
		{"valid", "GET", "/files/download/" + tok, 200, ""},
		{"tampered signature", "GET", "/files/download/" + payload + "." + string(flip), 403, transport.ReasonName(server.ReasonSignedURLInvalid)},
		{"tampered grant", "GET", "/files/download/" + base64.RawURLEncoding.EncodeToString(forged) + "." + sig, 403, transport.ReasonName(server.ReasonSignedURLInvalid)},
		{"expired", "GET", "/files/download/" + expired, 403, transport.ReasonName(server.ReasonSignedURLExpired)},
		{"expired upload", "PUT", "/files/upload/" + expiredUp + "?filename=x", 403, transport.ReasonName(server.ReasonSignedURLExpired)},
		{"malformed", "GET", "/files/download/garbage", 400, transport.ReasonName(server.ReasonSignedURLMalformed)},
		{"bad base64 signature", "GET", "/files/download/" + payload + ".!!", 400, transport.ReasonName(server.ReasonSignedURLMalformed)},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, raw := e.fileHTTP(t, c.method, c.path, "text/plain", []byte("x"), "")
			if code != c.want {
				t.Fatalf("HTTP %d, want %d: %s", code, c.want, raw)
			}
			if c.want == 200 {
				return
			}
			m := jsonMap(t, raw)
			if testenv.HTTPReason(m) != c.reason || m["code"] == nil || m["message"] == nil {
				t.Errorf("body %s, want reason %s in an rpcStatus", raw, c.reason)
			}
		})
	}
}

func TestLegacyV2FilesWorkflow(t *testing.T) {
	e := newTestEnv(t)
	key, org, ws := e.Init.APIKey, e.Init.OrganizationID, e.Init.WorkspaceID
	hdr := map[string]string{"x-api-key": key}

	code, m, raw := e.DoHTTP(t, "POST", "/v2/files", `{"file_name":"invoice.pdf","agent_id":"`+ws+`"}`, hdr)
	if code != 200 {
		t.Fatalf("POST /v2/files: %d %s", code, raw)
	}
	id, uploadURL := fmt.Sprint(m["id"]), fmt.Sprint(m["upload_url"])
	fields := map[string]string{}
	for k, v := range m["upload_fields"].(map[string]any) {
		fields[k] = fmt.Sprint(v)
	}
	for _, k := range []string{"key", "AWSAccessKeyId", "x-amz-security-token", "policy", "signature", "Content-Type"} {
		if fields[k] == "" {
			t.Errorf("upload_fields has no %s: %v", k, fields)
		}
	}
	if fields["Content-Type"] != "application/pdf" || !strings.HasPrefix(uploadURL, e.Srv.URL+"/files/upload/") {
		t.Errorf("fields %v, url %s", fields, uploadURL)
	}
	ordered := func(skip string, extra ...[2]string) [][2]string {
		var out [][2]string
		for _, k := range []string{"key", "AWSAccessKeyId", "x-amz-security-token", "policy", "signature", "Content-Type"} {
			if k != skip {
				out = append(out, [2]string{k, fields[k]})
			}
		}
		return append(out, extra...)
	}
	pdf := []byte("%PDF-1.7 fake")

	// Before the upload: metadata with size 0, no download.
	if code, _, raw = e.fileHTTP(t, "GET", "/api/v1/organizations/"+org+"/files/"+id+"/metadata", "", nil, key); code != 200 || jsonMap(t, raw)["size_bytes"] != nil && jsonMap(t, raw)["size_bytes"] != "0" {
		t.Fatalf("metadata before upload: %d %s", code, raw)
	}
	if code, _, raw = e.fileHTTP(t, "GET", "/api/v1/organizations/"+org+"/files/"+id+":download", "", nil, key); code != 400 {
		t.Errorf("download before upload: %d %s", code, raw)
	}

	// Forms that are not exactly the fields plus the file.
	for _, c := range []struct {
		name   string
		fields [][2]string
		file   bool
		want   int
	}{
		{"missing field", ordered("x-amz-security-token"), true, 400},
		{"extra field", ordered("", [2]string{"acl", "public-read"}), true, 400},
		{"changed key", append(ordered("key"), [2]string{"key", "organizations/" + org + "/files/other"}), true, 400},
		{"changed content type", append(ordered("Content-Type"), [2]string{"Content-Type", "text/html"}), true, 400},
		{"other signature", append(ordered("signature"), [2]string{"signature", "AAAA"}), true, 403},
		{"no file", ordered(""), false, 400},
	} {
		name := ""
		if c.file {
			name = "invoice.pdf"
		}
		ct, body := multipartBody(t, c.fields, name, pdf)
		if code, _, raw := e.fileHTTP(t, "POST", uploadURL, ct, body, ""); code != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, code, c.want, raw)
		}
	}
	if code, _, raw := e.fileHTTP(t, "PUT", uploadURL, "application/pdf", pdf, ""); code != 400 {
		t.Errorf("raw PUT to a form URL: %d %s", code, raw)
	}

	// The form as given: every field plus the file.
	ct, body := multipartBody(t, ordered(""), "invoice.pdf", pdf)
	if code, _, raw = e.fileHTTP(t, "POST", uploadURL, ct, body, ""); code != 200 {
		t.Fatalf("multipart upload: %d %s", code, raw)
	}
	code, _, raw = e.fileHTTP(t, "GET", "/api/v1/organizations/"+org+"/files/"+id+"/metadata", "", nil, key)
	if m := jsonMap(t, raw); code != 200 || m["size_bytes"] != fmt.Sprint(len(pdf)) || m["filename"] != "invoice.pdf" || m["mime_type"] != "application/pdf" {
		t.Fatalf("metadata after upload: %d %s", code, raw)
	}
	if code, _, raw = e.fileHTTP(t, "GET", "/api/v1/organizations/"+org+"/files/"+id+":download", "", nil, key); code != 200 || !bytes.Equal(raw, pdf) {
		t.Fatalf("download: %d %q", code, raw)
	}
	// The form takes one upload.
	ct, body = multipartBody(t, ordered(""), "invoice.pdf", []byte("%PDF-1.7 other"))
	if code, _, raw = e.fileHTTP(t, "POST", uploadURL, ct, body, ""); code != 400 || testenv.HTTPReason(jsonMap(t, raw)) != transport.ReasonName(server.ReasonUploadURLUsed) {
		t.Errorf("second upload of the form: %d %s, want 400 %s", code, raw, transport.ReasonName(server.ReasonUploadURLUsed))
	}
	if code, _, raw = e.fileHTTP(t, "GET", "/api/v1/organizations/"+org+"/files/"+id+":download", "", nil, key); code != 200 || !bytes.Equal(raw, pdf) {
		t.Fatalf("download after a refused second upload: %d %q", code, raw)
	}

	// The id resolves to a run input.
	in, f, err := server.FileInput(t.Context(), e.Store, org, id)
	if err != nil || f.ID != id || !strings.Contains(in.GetFile().GetRemote(), "/files/download/") {
		t.Fatalf("FileInput: %v %v %v", in, f, err)
	}

	// Errors in the v2 shape; gRPC.
	code, m, raw = e.DoHTTP(t, "POST", "/v2/files", `{"file_name":"a.pdf","agent_id":"nope"}`, hdr)
	if code != 404 && code != 403 || m["status_code"] != float64(code) {
		t.Errorf("unknown agent: %d %s", code, raw)
	}
	code, m, raw = e.DoHTTP(t, "POST", "/v2/files", `{"file_name":"","agent_id":"`+ws+`"}`, hdr)
	if code != 400 || m["status_code"] != float64(400) {
		t.Errorf("no file name: %d %s", code, raw)
	}
	g, err := e.DoGRPC(t, v2Svc+"CreateFile", &legacyv2.CreateFileRequest{FileName: "b.txt", AgentId: ws}, metadata.Pairs("x-api-key", key))
	if err != nil || g["id"] == nil || g["upload_fields"].(map[string]any)["Content-Type"] != "text/plain; charset=utf-8" {
		t.Fatalf("gRPC CreateFile: %v %v", g, err)
	}
}

func TestLegacyV1Upload(t *testing.T) {
	e := newTestEnv(t)
	key, org := e.Init.APIKey, e.Init.OrganizationID
	hdr := map[string]string{"x-api-key": key}
	code, m, raw := e.DoHTTP(t, "POST", "/v1/upload", `{"file_name":"scan.png","content_type":"image/png"}`, hdr)
	if code != 200 {
		t.Fatalf("POST /v1/upload: %d %s", code, raw)
	}
	uploadURL, blobURL := fmt.Sprint(m["upload_url"]), fmt.Sprint(m["blob_url"])
	exp, err := time.Parse(time.RFC3339, fmt.Sprint(m["expires_at"]))
	if err != nil || exp.Before(time.Now()) || exp.After(time.Now().Add(16*time.Minute)) {
		t.Errorf("expires_at %v: %v", m["expires_at"], err)
	}
	png := []byte{0x89, 'P', 'N', 'G', 0, 1}
	if code, _, raw = e.fileHTTP(t, "PUT", uploadURL, "", png, ""); code != 200 {
		t.Fatalf("PUT to upload_url: %d %s", code, raw)
	}
	meta := testenv.Field(jsonMap(t, raw), "metadata").(map[string]any)
	if meta["size_bytes"] != "6" || meta["mime_type"] != "image/png" || meta["filename"] != "scan.png" {
		t.Errorf("uploaded: %v", meta)
	}
	code, h, raw := e.fileHTTP(t, "GET", blobURL, "", nil, "")
	if code != 200 || !bytes.Equal(raw, png) || h.Get("Content-Type") != "image/png" {
		t.Fatalf("GET blob_url: %d %v %q", code, h, raw)
	}
	// The blob URL names the file for a run.
	f, err := server.ResolveFile(t.Context(), e.Store, org, blobURL)
	if err != nil || f.Filename != "scan.png" {
		t.Fatalf("ResolveFile(blob_url): %v %v", f, err)
	}
	if _, err := server.ResolveFile(t.Context(), e.Store, "other", blobURL); status.Code(err) != codes.NotFound {
		t.Errorf("blob URL of another organization: %v", err)
	}
	// The URL takes one upload: a second PUT or POST is refused and the
	// file keeps its bytes.
	ct, body := multipartBody(t, nil, "scan.png", png[:3])
	for _, again := range []struct{ method, ct string }{{"PUT", ""}, {"POST", ct}} {
		code, _, raw = e.fileHTTP(t, again.method, uploadURL, again.ct, body, "")
		if code != 400 || testenv.HTTPReason(jsonMap(t, raw)) != transport.ReasonName(server.ReasonUploadURLUsed) {
			t.Errorf("second %s to upload_url: %d %s, want 400 %s", again.method, code, raw, transport.ReasonName(server.ReasonUploadURLUsed))
		}
	}
	if code, _, raw = e.fileHTTP(t, "GET", blobURL, "", nil, ""); code != 200 || !bytes.Equal(raw, png) {
		t.Errorf("after refused uploads: %d %q", code, raw)
	}
	// A POST of a multipart form with the file works too.
	_, m, _ = e.DoHTTP(t, "POST", "/v1/upload", `{"file_name":"scan.png","content_type":"image/png"}`, hdr)
	if code, _, raw = e.fileHTTP(t, "POST", fmt.Sprint(m["upload_url"]), ct, body, ""); code != 200 || testenv.Field(jsonMap(t, raw), "metadata.size_bytes") != "3" {
		t.Errorf("multipart POST to upload_url: %d %s", code, raw)
	}

	// v1 errors; gRPC.
	code, m, raw = e.DoHTTP(t, "POST", "/v1/upload", `{"content_type":"image/png"}`, hdr)
	if code != 400 || m["statusCode"] != float64(400) {
		t.Errorf("no file name: %d %s", code, raw)
	}
	if code, m, raw = e.DoHTTP(t, "POST", "/v1/upload", `{"file_name":"a"}`, map[string]string{"x-api-key": "nope"}); code != 403 || m["message"] == nil {
		t.Errorf("bad key: %d %s", code, raw)
	}
	g, err := e.DoGRPC(t, v1Svc+"Upload", &legacyv1.UploadRequest{FileName: "a.txt"}, metadata.Pairs("x-api-key", key))
	if err != nil || !strings.Contains(fmt.Sprint(g["upload_url"]), "/files/upload/") || !strings.Contains(fmt.Sprint(g["blob_url"]), "/files/download/") {
		t.Fatalf("gRPC Upload: %v %v", g, err)
	}
}
