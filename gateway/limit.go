package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// Request body bounds (Options.MaxBodyBytes, Options.MaxUploadBytes).
const (
	// DefaultMaxBodyBytes bounds a JSON request body: room for the largest
	// english_code (1 MiB) or run inputs (1 MiB) even when JSON escaping
	// makes them several times longer.
	DefaultMaxBodyBytes = 8 << 20
	// DefaultMaxUploadBytes bounds the body of a file upload path
	// (files:upload, signed upload URLs): the largest file (32 MiB) and
	// its multipart framing.
	DefaultMaxUploadBytes = 40 << 20
)

// ReasonRequestTooLarge is the ErrorInfo reason of a 413.
const ReasonRequestTooLarge = "REQUEST_TOO_LARGE"

// IsUploadPath reports whether path takes a file's bytes as its body (and so
// the upload bound instead of the JSON one).
func IsUploadPath(path string) bool {
	return strings.HasPrefix(path, "/files/upload/") ||
		(strings.HasPrefix(path, "/api/v1/organizations/") && strings.HasSuffix(path, "/files:upload"))
}

// overLimit records, for one request, that its body went past the bound;
// the error renderers then answer 413 whatever the decoder made of the cut
// body.
type overLimit struct {
	max int64
	hit atomic.Bool
}

type overLimitKey struct{}

func overLimitFrom(ctx context.Context) *overLimit {
	o, _ := ctx.Value(overLimitKey{}).(*overLimit)
	return o
}

// tooLarge is the status of a body over max bytes.
func tooLarge(max int64) *spb.Status {
	return withErrorInfo(&spb.Status{
		Code:    int32(codes.InvalidArgument),
		Message: fmt.Sprintf("the request body is larger than the limit of %d bytes", max),
	}, ReasonRequestTooLarge)
}

// limitedBody is an http.MaxBytesReader that remembers hitting the bound.
type limitedBody struct {
	io.ReadCloser
	o *overLimit
}

func (b limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.o.hit.Store(true)
	}
	return n, err
}

// limitBody refuses bodies over their bound (upload paths: maxUpload; the
// rest: maxBody; a bound ≤ 0 is none) with 413 in the path's error shape:
// at once when the Content-Length says so, and when a chunked body grows
// past it (the read fails; whatever error the handler then reports is
// rendered as 413).
func limitBody(maxBody, maxUpload int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		max := maxBody
		if IsUploadPath(r.URL.Path) {
			max = maxUpload
		}
		if max <= 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > max {
			code, body := Render(r.URL.Path, tooLarge(max), http.StatusRequestEntityTooLarge)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Connection", "close")
			w.WriteHeader(code)
			_, _ = w.Write(body)
			return
		}
		o := &overLimit{max: max}
		r = r.WithContext(context.WithValue(r.Context(), overLimitKey{}, o))
		r.Body = limitedBody{http.MaxBytesReader(w, r.Body, max), o}
		next.ServeHTTP(w, r)
	})
}
