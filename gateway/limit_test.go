package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
	h := newBodyGuard(Options{MaxBodyBytes: 10, MaxUploadBytes: 20}, next)

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

// TestUploadsInFlightBounded: with MaxUploads uploads being read, one more
// upload is 503 UPLOADS_BUSY with Retry-After (in its path's shape) and
// reads nothing; other requests pass; a freed slot takes the next upload.
func TestUploadsInFlightBounded(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("block") != "" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	})
	h := newBodyGuard(Options{MaxUploads: 2, UploadWait: -1}, next)
	do := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader("bytes")))
		return rec
	}
	done := make(chan int, 2)
	for range 2 {
		go func() { done <- do("/files/upload/t?block=1").Code }()
		<-entered
	}
	for _, c := range []struct{ path, want string }{
		{"/files/upload/t", `"code":14`},
		{"/api/v1/organizations/o/files:upload", `"reason":"UPLOADS_BUSY"`},
	} {
		rec := do(c.path)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s with the bound reached: %d %v %s", c.path, rec.Code, rec.Header(), rec.Body)
		}
	}
	if rec := do("/v2/runs"); rec.Code != http.StatusOK {
		t.Errorf("a JSON request while uploads are full: %d", rec.Code)
	}
	release <- struct{}{}
	if c := <-done; c != http.StatusOK {
		t.Errorf("blocked upload: %d", c)
	}
	if rec := do("/files/upload/t"); rec.Code != http.StatusOK {
		t.Errorf("upload after a slot was freed: %d %s", rec.Code, rec.Body)
	}
	release <- struct{}{}
	<-done
}

// TestSlowBodyCut: a body that stops arriving is cut at the read deadline:
// 408 REQUEST_BODY_TIMEOUT in the path's shape and the connection closed.
func TestSlowBodyCut(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			// As the gateway's handlers do: report the read error.
			fileErr := bodyStateFrom(r.Context())
			if fileErr == nil || !fileErr.timedOut.Load() {
				w.WriteHeader(http.StatusTeapot)
				return
			}
			writeStatus(w, r, bodyTimeout(fileErr.timeout), http.StatusRequestTimeout)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	srv := httptest.NewServer(newBodyGuard(Options{BodyReadTimeout: 50 * time.Millisecond}, next))
	defer srv.Close()
	for _, path := range []string{"/files/upload/t", "/v1/invoke/s"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		// Promise 100 bytes, send 3, then nothing.
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a", path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		_ = conn.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "408") && !strings.Contains(string(b), "REQUEST_BODY_TIMEOUT") {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}
