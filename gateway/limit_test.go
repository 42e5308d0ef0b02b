package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIsUploadPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/files/upload/tok":                        true,
		"/api/v1/organizations/o/files:upload":     true,
		"/api/v1/organizations/o/files/f:download": false,
		"/v1/invoke/s":                             false,
		"/v1/upload":                               false,
		"/api/v1/organizations/o/workspaces":       false,
	} {
		if got := IsUploadPath(path); got != want {
			t.Errorf("IsUploadPath(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestLimitBody(t *testing.T) {
	var read int
	var readErr error
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		read, readErr = len(b), err
		w.WriteHeader(http.StatusOK)
	})
	h := limitBody(10, 20, next)

	for _, tc := range []struct {
		name, path, body string
		chunked          bool
		wantCode         int
		wantBody         string
		wantReadErr      bool
	}{
		{name: "within", path: "/api/v1/x", body: "0123456789", wantCode: 200},
		{name: "platform over", path: "/api/v1/x", body: "0123456789A", wantCode: 413, wantBody: `"reason":"REQUEST_TOO_LARGE"`},
		{name: "v1 over", path: "/v1/invoke/s", body: "0123456789A", wantCode: 413, wantBody: `"statusCode":413`},
		{name: "v2 over", path: "/v2/runs", body: "0123456789A", wantCode: 413, wantBody: `"status_code":413`},
		{name: "upload within its bound", path: "/files/upload/t", body: "0123456789ABCDEFGHIJ", wantCode: 200},
		{name: "upload over", path: "/api/v1/organizations/o/files:upload", body: "0123456789ABCDEFGHIJK", wantCode: 413, wantBody: `"code":3`},
		{name: "chunked over", path: "/api/v1/x", body: "0123456789ABCDEF", chunked: true, wantCode: 200, wantReadErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readErr = nil
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			if tc.chunked {
				req.ContentLength = -1
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantCode {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.wantCode, rec.Body)
			}
			if tc.wantBody != "" && !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("body %s, want it to contain %s", rec.Body, tc.wantBody)
			}
			if tc.wantReadErr != (readErr != nil) {
				t.Errorf("read %d bytes, err %v; want an error: %v", read, readErr, tc.wantReadErr)
			}
		})
	}
}
