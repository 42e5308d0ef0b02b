package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/gateway/uploadslots"
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
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
	// DefaultMaxUploads bounds the uploads in flight (Options.MaxUploads):
	// each holds its file in memory a few times over (~130 MB for 32 MiB).
	DefaultMaxUploads = 8
	// DefaultUploadWait is how long an upload waits for a slot when
	// MaxUploads are in flight (Options.UploadWait).
	DefaultUploadWait = 10 * time.Second
	// DefaultBodyReadTimeout bounds the time to read a request body
	// (Options.BodyReadTimeout): 32 MiB at about 300 KB/s.
	DefaultBodyReadTimeout = 2 * time.Minute
)

// ReasonRequestTooLarge is the ErrorInfo reason of a 413.
const ReasonRequestTooLarge = errorsv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE

// IsUploadPath reports whether path takes a file's bytes as its body (and so
// the upload bound instead of the JSON one).
func IsUploadPath(path string) bool {
	return strings.HasPrefix(path, "/files/upload/") ||
		(strings.HasPrefix(path, "/api/v1/organizations/") && strings.HasSuffix(path, "/files:upload"))
}

// bodyState records, for one request, how reading its body went: past the
// bound, or past the read deadline. The error renderers then answer 413 or
// 408 whatever the decoder made of the cut body.
type bodyState struct {
	max      int64
	timeout  time.Duration
	over     atomic.Bool
	timedOut atomic.Bool
	// decodeStatus, when set, is the status of a body the decoder refused
	// with a diagnosis of its own (valueShapeError): the error renderer
	// answers it, with its details, instead of the bare message.
	decodeStatus atomic.Pointer[spb.Status]
}

type bodyStateKey struct{}

func bodyStateFrom(ctx context.Context) *bodyState {
	o, _ := ctx.Value(bodyStateKey{}).(*bodyState)
	return o
}

// ReasonRequestTimeout is the ErrorInfo reason of a 408, and ReasonUploadsBusy
// of a 503 for an upload when the uploads in flight are at their bound.
const (
	ReasonRequestTimeout = errorsv1.ErrorReason_ERROR_REASON_REQUEST_BODY_TIMEOUT
	ReasonUploadsBusy    = errorsv1.ErrorReason_ERROR_REASON_UPLOADS_BUSY
)

// tooLarge is the status of a body over max bytes.
func tooLarge(max int64) *spb.Status {
	return withErrorInfo(&spb.Status{
		Code:    int32(codes.InvalidArgument),
		Message: fmt.Sprintf("the request body is larger than the limit of %d bytes", max),
	}, ReasonRequestTooLarge)
}

func bodyTimeout(d time.Duration) *spb.Status {
	return withErrorInfo(&spb.Status{
		Code:    int32(codes.DeadlineExceeded),
		Message: fmt.Sprintf("the request body did not arrive within %s", d),
	}, ReasonRequestTimeout)
}

// guardedBody is an http.MaxBytesReader that remembers hitting the bound or
// the read deadline, and lifts the deadline once the body is read.
type guardedBody struct {
	io.ReadCloser
	st *bodyState
	rc *http.ResponseController
}

func (b guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		_ = b.rc.SetReadDeadline(time.Time{}) // read in time: the rest of the call has no deadline
	case errors.As(err, &mbe):
		b.st.over.Store(true)
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.st.timedOut.Store(true)
	}
	return n, err
}

// bodyGuard bounds request bodies: their size (413), the time to read them
// (408, counted from when the body may be read), and the uploads in flight
// (503 with Retry-After after waiting for a slot). See Options.
type bodyGuard struct {
	maxBody, maxUpload int64
	readTimeout        time.Duration
	uploads            chan struct{} // nil: no bound
	uploadWait         time.Duration
	// tenants bounds each tenant's share of uploads (nil: none), tenantOf
	// names the tenant of an upload (Options.UploadTenant).
	tenants  *uploadslots.PerTenant
	tenantOf func(*http.Request) string
	next     http.Handler
}

// acquireUpload takes a slot of the upload's tenant and one of the
// server's, waiting up to uploadWait in all (the body of a waiting upload
// is not read: it costs the server nothing). It returns the release, or
// the message of a 503 (whose bound is full).
func (g *bodyGuard) acquireUpload(r *http.Request) (release func(), busy string) {
	var timer <-chan time.Time
	if g.uploadWait > 0 {
		t := time.NewTimer(g.uploadWait)
		defer t.Stop()
		timer = t.C
	}
	ctx := r.Context()
	releaseTenant := func() {}
	if g.tenants != nil {
		// The tenant's share first: while it is full, its uploads wait
		// without holding any of the server's slots.
		rel, ok := g.tenants.Take(ctx, g.tenantOf(r), timer)
		if !ok {
			return nil, fmt.Sprintf("%d uploads of this organization are in progress, the most one organization may have at once; retry shortly", g.tenants.Max())
		}
		releaseTenant = rel
	}
	if g.uploads != nil && !uploadslots.Take(ctx, g.uploads, timer) {
		releaseTenant()
		return nil, fmt.Sprintf("%d uploads are in progress, the most this server takes at once; retry shortly", cap(g.uploads))
	}
	return func() {
		if g.uploads != nil {
			<-g.uploads
		}
		releaseTenant()
	}, ""
}

// uploadRetryAfter is the Retry-After (seconds) of a 503 for a full upload
// bound: an upload of the largest file takes about that long in process.
const uploadRetryAfter = "1"

func (g *bodyGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		g.next.ServeHTTP(w, r)
		return
	}
	max := g.maxBody
	upload := IsUploadPath(r.URL.Path)
	if upload {
		max = g.maxUpload
	}
	if max > 0 && r.ContentLength > max {
		w.Header().Set("Connection", "close")
		writeStatus(w, r, tooLarge(max), http.StatusRequestEntityTooLarge)
		return
	}
	if upload && (g.uploads != nil || g.tenants != nil) {
		release, busy := g.acquireUpload(r)
		if release == nil {
			w.Header().Set("Retry-After", uploadRetryAfter)
			st := withErrorInfo(&spb.Status{Code: int32(codes.Unavailable), Message: busy}, ReasonUploadsBusy)
			writeStatus(w, r, st, http.StatusServiceUnavailable)
			return
		}
		defer release()
	}
	st := &bodyState{max: max, timeout: g.readTimeout}
	rc := http.NewResponseController(w)
	if g.readTimeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(g.readTimeout))
	}
	r = r.WithContext(context.WithValue(r.Context(), bodyStateKey{}, st))
	body := r.Body
	if max > 0 {
		body = http.MaxBytesReader(w, body, max)
	}
	r.Body = guardedBody{body, st, rc}
	g.next.ServeHTTP(w, r)
}

// writeStatus writes st in the path's error shape with httpStatus.
func writeStatus(w http.ResponseWriter, r *http.Request, st *spb.Status, httpStatus int) {
	code, body := Render(r.URL.Path, st, httpStatus)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// newBodyGuard applies the body bounds of opts (defaults for zeros) to next.
func newBodyGuard(opts Options, next http.Handler) http.Handler {
	g := &bodyGuard{
		maxBody:     orDefault(opts.MaxBodyBytes, DefaultMaxBodyBytes),
		maxUpload:   orDefault(opts.MaxUploadBytes, DefaultMaxUploadBytes),
		readTimeout: orDefault(opts.BodyReadTimeout, DefaultBodyReadTimeout),
		uploadWait:  orDefault(opts.UploadWait, DefaultUploadWait),
		next:        next,
	}
	n := orDefault(opts.MaxUploads, DefaultMaxUploads)
	if n > 0 {
		g.uploads = make(chan struct{}, n)
	}
	if opts.UploadTenant != nil {
		per := opts.MaxUploadsPerTenant
		if per == 0 {
			per = max(1, n/2)
			if n <= 0 {
				per = DefaultMaxUploads / 2
			}
		}
		if per > 0 {
			g.tenants, g.tenantOf = uploadslots.NewPerTenant(per), opts.UploadTenant
		}
	}
	return g
}
