package gateway

import (
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/textproto"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

const (
	requestIDHTTPHeader = "X-Request-Id"
	requestIDMetadata   = "x-request-id"
	// HTTPCodeMetadata is the response header metadata key a handler sets to
	// choose the HTTP status of a successful unary response (e.g. "201").
	// The gateway removes it; it never reaches the HTTP client.
	HTTPCodeMetadata = "x-http-code"
)

// incomingHeaderMatcher forwards only the headers the server reads.
// Authorization is forwarded by grpc-gateway itself (as "authorization").
func incomingHeaderMatcher(key string) (string, bool) {
	switch textproto.CanonicalMIMEHeaderKey(key) {
	case "X-Api-Key":
		return "x-api-key", true
	case requestIDHTTPHeader:
		return requestIDMetadata, true
	}
	return "", false
}

// outgoingHeaderMatcher passes only the header metadata keys named in
// Options.ResponseHeaders, under their own name (never Grpc-Metadata-*).
// x-request-id is written by the request id middleware, x-http-code is
// consumed by httpCodeOption.
func (g *gw) outgoingHeaderMatcher(key string) (string, bool) {
	key = strings.ToLower(key)
	if g.responseHeaders[key] {
		return textproto.CanonicalMIMEHeaderKey(key), true
	}
	return "", false
}

func noTrailers(string) (string, bool) { return "", false }

func (g *gw) copyHeaders(w http.ResponseWriter, md metadata.MD) {
	for k, vs := range md {
		if h, ok := g.outgoingHeaderMatcher(k); ok {
			for _, v := range vs {
				w.Header().Add(h, v)
			}
		}
	}
}

// httpCodeOption sets the status of a successful unary response from the
// x-http-code header metadata, and removes it. Streams always answer 200:
// grpc-gateway calls the option with a nil message before a stream's first
// message, which drops the key.
func httpCodeOption(ctx context.Context, w http.ResponseWriter, resp proto.Message) error {
	md, ok := runtime.ServerMetadataFromContext(ctx)
	if !ok {
		return nil
	}
	vals := md.HeaderMD.Get(HTTPCodeMetadata)
	if len(vals) == 0 {
		return nil
	}
	delete(md.HeaderMD, HTTPCodeMetadata)
	w.Header().Del(HTTPCodeMetadata)
	if resp == nil {
		return nil
	}
	// A value that is not a 2xx status is ignored: the call succeeded.
	if code, ok := successCode(vals[0]); ok {
		w.WriteHeader(code)
	}
	return nil
}

func successCode(v string) (int, bool) {
	code, err := strconv.Atoi(v)
	if err != nil || code < 200 || code > 299 {
		return 0, false
	}
	return code, true
}

// recoverHTTP turns a panic in an HTTP-side handler (a hand-written route)
// into a 500 in the path's error shape instead of a dropped connection.
// gRPC handlers never get here: the server's recovery interceptor has them.
func (g *gw) recoverHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p)
			}
			g.log.ErrorContext(r.Context(), "panic in http handler",
				slog.String("path", r.URL.Path),
				slog.String("request_id", w.Header().Get(requestIDHTTPHeader)),
				slog.String("panic", fmt.Sprint(p)),
				slog.String("stack", string(debug.Stack())))
			g.writeError(w, r, status.New(codes.Internal, "internal error").Proto(), 0, errorsv1.ErrorReason_ERROR_REASON_INTERNAL)
		}()
		next.ServeHTTP(w, r)
	})
}
