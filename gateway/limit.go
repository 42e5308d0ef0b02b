package gateway

import (
	"fmt"
	"net/http"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// DefaultMaxBodyBytes bounds request bodies when Options.MaxBodyBytes is 0:
// room for the largest file upload (32 MiB) and its multipart framing.
const DefaultMaxBodyBytes = 40 << 20

// limitBody refuses bodies over max bytes: at once with 413 when the
// Content-Length says so, and by failing the read (the decoder then reports
// an invalid request) when a chunked body grows past it.
func limitBody(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			st := &spb.Status{Code: int32(codes.InvalidArgument), Message: fmt.Sprintf("the request body is larger than %d bytes", max)}
			code, body := Render(r.URL.Path, st, http.StatusRequestEntityTooLarge)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write(body)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		next.ServeHTTP(w, r)
	})
}
