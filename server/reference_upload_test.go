package server_test

import (
	"bytes"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/api/httpbody"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

// referenceUploadForm is UploadFile's body as the reference describes it:
// multipart/form-data with a binary part content and a part filename.
func referenceUploadForm(t *testing.T, filename, contentType string, content []byte) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="content"; filename="blob"`)
	h.Set("Content-Type", contentType)
	pw, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := mw.WriteField("filename", filename); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), b.Bytes()
}

// TestUploadFileAsTheReferenceDescribes: a multipart upload with the parts
// content and filename is stored under that file name (the part's own file
// name does not win) and reads back, over HTTP; the raw body with
// ?filename= stays the documented alternative; the same file uploaded over
// gRPC reads back the same. An unknown form field is still refused.
func TestUploadFileAsTheReferenceDescribes(t *testing.T) {
	e := newTestEnv(t)
	org := e.Init.OrganizationID
	path := "/api/v1/organizations/" + org + "/files:upload"
	content := []byte("id,total\n1,120.50\n")

	ct, body := referenceUploadForm(t, "invoices.csv", "text/csv", content)
	code, _, raw := e.fileHTTP(t, "POST", path, ct, body, e.Init.APIKey)
	if code != 200 {
		t.Fatalf("multipart upload: %d %s", code, raw)
	}
	up := jsonMap(t, raw)
	checkSchema(t, "v1UploadFileResponse", up)
	name := fieldString(up, "metadata.name")
	if fieldString(up, "metadata.filename") != "invoices.csv" || fieldString(up, "metadata.mime_type") != "text/csv" {
		t.Fatalf("multipart upload: %s", raw)
	}
	id := name[strings.LastIndexByte(name, '/')+1:]
	code, _, got := e.fileHTTP(t, "GET", "/api/v1/organizations/"+org+"/files/"+id+":download", "", nil, e.Init.APIKey)
	if code != 200 || !bytes.Equal(got, content) {
		t.Fatalf("download: %d %q", code, got)
	}

	code, _, raw = e.fileHTTP(t, "POST", path+"?filename=raw.csv", "text/csv", content, e.Init.APIKey)
	if code != 200 || fieldString(jsonMap(t, raw), "metadata.filename") != "raw.csv" {
		t.Fatalf("raw upload: %d %s", code, raw)
	}

	var extra bytes.Buffer
	mw := multipart.NewWriter(&extra)
	_ = mw.WriteField("filename", "x.csv")
	_ = mw.WriteField("colour", "blue")
	fw, _ := mw.CreateFormFile("content", "x.csv")
	_, _ = fw.Write(content)
	_ = mw.Close()
	code, _, raw = e.fileHTTP(t, "POST", path, mw.FormDataContentType(), extra.Bytes(), e.Init.APIKey)
	if code != 400 || !strings.Contains(string(raw), "colour") {
		t.Errorf("unknown form field: %d %s", code, raw)
	}

	c, ctx := e.files(t)
	g, err := c.UploadFile(ctx, &platformv1.UploadFileRequest{OrganizationId: org, Filename: "invoices.csv",
		Content: &httpbody.HttpBody{ContentType: "text/csv", Data: content}})
	if err != nil || g.GetMetadata().GetFilename() != "invoices.csv" {
		t.Fatalf("gRPC upload: %v %v", g, err)
	}
	gid := g.GetMetadata().GetName()[strings.LastIndexByte(g.GetMetadata().GetName(), '/')+1:]
	d, err := c.DownloadFile(ctx, &platformv1.DownloadFileRequest{OrganizationId: org, File: gid})
	if err != nil || !bytes.Equal(d.GetData(), content) {
		t.Fatalf("gRPC download: %v %v", d, err)
	}
}

func fieldString(m any, path string) string {
	s, _ := testenv.Field(m, path).(string)
	return s
}
