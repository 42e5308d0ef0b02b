package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
)

// heldUpload is an upload the server has taken (it holds an upload slot)
// whose body the test has not sent yet.
type heldUpload struct {
	conn net.Conn
	r    *bufio.Reader
}

// holdUpload starts an upload of 10 bytes with Expect: 100-continue and
// sends no byte of its body. The server answers 100 Continue when the
// upload's handler first reads the body, which it does only after the
// upload took its slot; an upload refused for want of a slot is answered
// at once, without reading. holdUpload returns the held upload, or nil and
// the refusal's status and body.
func holdUpload(t *testing.T, addr, path, key string) (*heldUpload, int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: text/plain\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n", path, key)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("an upload held: %v", err)
	}
	if resp.StatusCode == http.StatusContinue {
		return &heldUpload{conn, r}, 0, ""
	}
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	resp.Body.Close()
	return nil, resp.StatusCode, b.String()
}

// finish sends the held upload's body and returns its answer's status.
func (h *heldUpload) finish(t *testing.T) int {
	t.Helper()
	fmt.Fprint(h.conn, "helloworld")
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		t.Fatalf("the held upload: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestUploadSlotsPerOrganization: one organization's slow uploads hold at
// most its share of the upload slots (--max-uploads-per-organization), so
// another organization's small upload is taken at once instead of waiting
// for a slot and failing 503; the slow organization's next upload is the
// one refused (503 UPLOADS_BUSY).
func TestUploadSlotsPerOrganization(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) { c.MaxUploads, c.MaxUploadsPerOrg, c.UploadWait = 2, 1, -1 })
	other, err := app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Other org", Email: "other-" + e.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(e.Srv.URL, "http://")
	path := func(org string) string { return "/api/v1/organizations/" + org + "/files:upload?filename=a.bin" }
	// The first organization's slow upload takes its share (one of the
	// server's two slots); its next upload is refused.
	held, code, raw := holdUpload(t, addr, path(e.Init.OrganizationID), e.Init.APIKey)
	if held == nil {
		t.Fatalf("the first slow upload: %d %s", code, raw)
	}
	if again, code, raw := holdUpload(t, addr, path(e.Init.OrganizationID), e.Init.APIKey); again != nil || code != http.StatusServiceUnavailable || testenv.HTTPReason(jsonMap(t, []byte(raw))) != "UPLOADS_BUSY" {
		t.Fatalf("a second upload of the organization at its share: %d %s", code, raw)
	}
	// The other organization's upload is taken.
	code, _, body := e.fileHTTP(t, "POST", path(other.OrganizationID), "text/plain", []byte("hello"), other.APIKey)
	if code != 200 {
		t.Fatalf("the other organization's upload: %d %s", code, body)
	}
	if code := held.finish(t); code != 200 {
		t.Errorf("the slow upload: %d", code)
	}
}
