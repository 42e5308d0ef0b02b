package gateway

import (
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"

	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
)

// ErrorDomain is the ErrorInfo domain the gateway uses for errors it makes
// itself (routing, bodies); it is the same as the server's.
const ErrorDomain = "prose.run"

// Shape is the form of an error body, chosen by path prefix.
type Shape int

const (
	// ShapeAIP is the reference's rpcStatus (google.rpc.Status as JSON):
	// {"code": <google.rpc.Code number>, "message", "details"} at the top
	// level of the body. Used for /api/v1 and every path not named below.
	ShapeAIP Shape = iota
	// ShapeLegacyV1 is the deprecated x-api-key API's {statusCode, message}
	// (403 {message} for a bad key), for /v1.
	ShapeLegacyV1
	// ShapeLegacyV2 is {status_code, message, details}, for /v2.
	ShapeLegacyV2
)

// ShapeFor returns the error shape of a request path.
func ShapeFor(path string) Shape {
	switch {
	case path == "/v1" || strings.HasPrefix(path, "/v1/"):
		return ShapeLegacyV1
	case path == "/v2" || strings.HasPrefix(path, "/v2/"):
		return ShapeLegacyV2
	}
	return ShapeAIP
}

// StatusClientClosed is the HTTP status of CANCELED (nginx's 499: the client
// went away); no client reads it, it is for logs and metrics.
const StatusClientClosed = 499

// httpStatusOf is the HTTP status of every gRPC code on /api/v1 and /v2,
// chosen code by code (AIP-193's table): a client mistake is 4xx, a
// condition worth retrying 409/429/503/504, a server fault 500.
var httpStatusOf = map[codes.Code]int{
	codes.OK:                 http.StatusOK,
	codes.Canceled:           StatusClientClosed,
	codes.Unknown:            http.StatusInternalServerError,
	codes.InvalidArgument:    http.StatusBadRequest,
	codes.DeadlineExceeded:   http.StatusGatewayTimeout,
	codes.NotFound:           http.StatusNotFound,
	codes.AlreadyExists:      http.StatusConflict,
	codes.PermissionDenied:   http.StatusForbidden,
	codes.ResourceExhausted:  http.StatusTooManyRequests,
	codes.FailedPrecondition: http.StatusBadRequest,
	codes.Aborted:            http.StatusConflict,
	codes.OutOfRange:         http.StatusBadRequest,
	codes.Unimplemented:      http.StatusNotImplemented,
	codes.Internal:           http.StatusInternalServerError,
	codes.Unavailable:        http.StatusServiceUnavailable,
	codes.DataLoss:           http.StatusInternalServerError,
	codes.Unauthenticated:    http.StatusUnauthorized,
}

// legacyV1StatusOf is the HTTP status of every gRPC code on /v1. The v1
// document names 400 (departmentMismatch and bad requests), 403 (invalid
// API key), 404 (unknown share or worker id) and 500; every client mistake
// maps onto those, and what a client should retry keeps the status that
// says so (409, 429, 503, 504).
var legacyV1StatusOf = map[codes.Code]int{
	codes.OK:                 http.StatusOK,
	codes.Canceled:           StatusClientClosed,
	codes.Unknown:            http.StatusInternalServerError,
	codes.InvalidArgument:    http.StatusBadRequest,
	codes.DeadlineExceeded:   http.StatusGatewayTimeout,
	codes.NotFound:           http.StatusNotFound,
	codes.AlreadyExists:      http.StatusBadRequest,
	codes.PermissionDenied:   http.StatusBadRequest, // departmentMismatch
	codes.ResourceExhausted:  http.StatusTooManyRequests,
	codes.FailedPrecondition: http.StatusBadRequest, // e.g. AUTOMATION_NOT_PUBLISHED
	codes.Aborted:            http.StatusConflict,
	codes.OutOfRange:         http.StatusBadRequest,
	codes.Unimplemented:      http.StatusNotImplemented,
	codes.Internal:           http.StatusInternalServerError,
	codes.Unavailable:        http.StatusServiceUnavailable,
	codes.DataLoss:           http.StatusInternalServerError,
	codes.Unauthenticated:    http.StatusForbidden, // invalidApiKeyResponse
}

// HTTPStatus returns the HTTP status of c for a request path (the /v1
// table for /v1, the common one elsewhere). A code outside google.rpc.Code
// is 500.
func HTTPStatus(path string, c codes.Code) int {
	table := httpStatusOf
	if ShapeFor(path) == ShapeLegacyV1 {
		table = legacyV1StatusOf
	}
	if s, ok := table[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Render returns the HTTP status and JSON body of st for a request path.
// httpStatus, when not zero, overrides the status the code maps to (routing
// errors: 404, 405, 400 for a malformed path; 413 for a body too large).
func Render(path string, st *spb.Status, httpStatus int) (int, []byte) {
	c := codes.Code(st.GetCode())
	routing := httpStatus != 0
	if httpStatus == 0 {
		httpStatus = HTTPStatus(path, c)
	}
	switch ShapeFor(path) {
	case ShapeLegacyV1:
		return legacyV1(c, st.GetMessage(), httpStatus, routing)
	case ShapeLegacyV2:
		body, _ := json.Marshal(struct {
			StatusCode int               `json:"status_code"`
			Message    string            `json:"message"`
			Details    []json.RawMessage `json:"details,omitempty"`
		}{httpStatus, st.GetMessage(), details(st)})
		return httpStatus, body
	}
	return httpStatus, rpcStatusBody(st)
}

// legacyV1 renders the v1 shapes: 403 {message} for a bad key, else
// {statusCode, message}; a server fault's message is hidden, and a status
// the gateway chose itself (unknown path 404, 405, 413) says its name.
func legacyV1(c codes.Code, msg string, status int, override bool) (int, []byte) {
	switch {
	case override:
		msg = http.StatusText(status)
	case c == codes.Unauthenticated:
		// invalidApiKeyResponse: 403 with only a message.
		body, _ := json.Marshal(struct {
			Message string `json:"message"`
		}{msg})
		return status, body
	case status == http.StatusInternalServerError:
		msg = "Internal server error" // internalServerError
	}
	body, _ := json.Marshal(struct {
		StatusCode int    `json:"statusCode"`
		Message    string `json:"message"`
	}{status, msg})
	return status, body
}

// rpcStatusBody renders the reference's rpcStatus: google.rpc.Status as
// JSON, code being the google.rpc.Code number.
func rpcStatusBody(st *spb.Status) []byte {
	d := details(st)
	body, _ := json.Marshal(rpcStatus{Code: st.GetCode(), Message: st.GetMessage(), Details: d})
	return body
}

type rpcStatus struct {
	Code    int32             `json:"code"`
	Message string            `json:"message"`
	Details []json.RawMessage `json:"details"`
}

// codeName is the google.rpc.Code name of c ("NOT_FOUND"), the default
// ErrorInfo reason.
func codeName(c codes.Code) string {
	if n, ok := code.Code_name[int32(c)]; ok {
		return n
	}
	return code.Code_UNKNOWN.String()
}

var detailJSON = protojson.MarshalOptions{UseProtoNames: true}

// details renders each detail as protojson with its "@type"; a detail whose
// type is not linked in is left out rather than failing the whole error.
func details(st *spb.Status) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(st.GetDetails()))
	for _, d := range st.GetDetails() {
		b, err := detailJSON.Marshal(d)
		if err != nil {
			continue
		}
		out = append(out, b)
	}
	return out
}

// withErrorInfo makes sure st carries an ErrorInfo (AIP-193 asks for one),
// adding {reason: <CODE_NAME>, domain: prose.run} when it has none.
func withErrorInfo(st *spb.Status, r errorsv1.ErrorReason) *spb.Status {
	for _, d := range st.GetDetails() {
		if d.MessageIs((*errdetails.ErrorInfo)(nil)) {
			return st
		}
	}
	reason := strings.TrimPrefix(r.String(), "ERROR_REASON_")
	if r == errorsv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		reason = codeName(codes.Code(st.GetCode()))
	}
	info, err := anypb.New(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain})
	if err != nil {
		return st
	}
	return &spb.Status{
		Code:    st.GetCode(),
		Message: st.GetMessage(),
		Details: append([]*anypb.Any{info}, st.GetDetails()...),
	}
}

// errorHandler is the mux's runtime.ErrorHandlerFunc.
func (g *gw) errorHandler(ctx context.Context, mux *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if probeFrom(r.Context()) != nil {
		return // an Allow probe: nothing is written
	}
	httpStatus, reason := 0, errorsv1.ErrorReason_ERROR_REASON_UNSPECIFIED
	var hse *runtime.HTTPStatusError
	if errors.As(err, &hse) {
		httpStatus = hse.HTTPStatus
		err = hse.Err
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() == codes.Unknown {
		// Not a status: the gateway itself failed. Log it, send nothing of it.
		g.log.LogAttrs(ctx, slog.LevelError, "gateway error",
			slog.String("path", r.URL.Path),
			slog.String("request_id", w.Header().Get(requestIDHTTPHeader)),
			slog.String("error", err.Error()))
		st = status.New(codes.Internal, "internal error")
		reason = errorsv1.ErrorReason_ERROR_REASON_INTERNAL
	}
	if md, ok := runtime.ServerMetadataFromContext(ctx); ok {
		g.copyHeaders(w, md.HeaderMD)
	}
	g.writeError(w, r, st.Proto(), httpStatus, reason)
}

func (g *gw) writeError(w http.ResponseWriter, r *http.Request, st *spb.Status, httpStatus int, reason errorsv1.ErrorReason) {
	if b := bodyStateFrom(r.Context()); b != nil {
		// The body went past its bound or its deadline: whatever the
		// decoder made of the cut body, the answer is 413 or 408.
		switch {
		case b.over.Load():
			st, httpStatus = tooLarge(b.max), http.StatusRequestEntityTooLarge
		case b.timedOut.Load():
			st, httpStatus = bodyTimeout(b.timeout), http.StatusRequestTimeout
			w.Header().Set("Connection", "close")
		case b.decodeStatus.Load() != nil && st.GetCode() == int32(codes.InvalidArgument):
			st = b.decodeStatus.Load()
		}
	}
	st = withErrorInfo(st, reason)
	h := w.Header()
	h.Del("Trailer")
	h.Del("Transfer-Encoding")
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	code, body := Render(r.URL.Path, st, httpStatus)
	if code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="`+ErrorDomain+`"`)
	}
	if code == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		// The database restarting or failing over: a client may send the
		// request again in a moment (creates are idempotent by request_id).
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// streamErrorHandler keeps status errors and hides anything else.
func (g *gw) streamErrorHandler(ctx context.Context, err error) *status.Status {
	st, ok := status.FromError(err)
	if !ok || st.Code() == codes.Unknown {
		g.log.LogAttrs(ctx, slog.LevelError, "gateway stream error", slog.String("error", err.Error()))
		return status.New(codes.Internal, "internal error")
	}
	return status.FromProto(withErrorInfo(st.Proto(), errorsv1.ErrorReason_ERROR_REASON_UNSPECIFIED))
}

// routingErrorHandler renders 404 for an unknown path and 405 with an Allow
// header for a known path asked with the wrong method (grpc-gateway's
// default would be 501).
func (g *gw) routingErrorHandler(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	if probeFrom(r.Context()) != nil {
		return
	}
	var st *status.Status
	reason := errorsv1.ErrorReason_ERROR_REASON_UNSPECIFIED
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		allow := g.allowed(r)
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
		st = status.New(codes.Unimplemented, "method "+r.Method+" is not allowed on "+r.URL.Path)
		reason = errorsv1.ErrorReason_ERROR_REASON_METHOD_NOT_ALLOWED
	case http.StatusNotFound:
		st = status.New(codes.NotFound, "no such path: "+r.URL.Path)
		reason = errorsv1.ErrorReason_ERROR_REASON_PATH_NOT_FOUND
	case http.StatusBadRequest:
		st = status.New(codes.InvalidArgument, "malformed path: "+r.URL.Path)
		reason = errorsv1.ErrorReason_ERROR_REASON_MALFORMED_PATH
	default:
		st = status.New(codes.Internal, "internal error")
		httpStatus = http.StatusInternalServerError
	}
	g.writeError(w, r, st.Proto(), httpStatus, reason)
}

// probe marks a request the gateway sends to its own mux to learn which
// methods a path accepts; the first middleware sees it and stops.
type probe struct{ matched bool }

type probeKey struct{}

func probeFrom(ctx context.Context) *probe {
	p, _ := ctx.Value(probeKey{}).(*probe)
	return p
}

func probeMiddleware(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if p := probeFrom(r.Context()); p != nil {
			p.matched = true
			return
		}
		next(w, r, params)
	}
}

var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowed returns the methods the mux has a route for at r's path.
func (g *gw) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range probeMethods {
		if m == r.Method {
			continue
		}
		p := &probe{}
		pr := r.Clone(context.WithValue(r.Context(), probeKey{}, p))
		pr.Method = m
		pr.Header = http.Header{}
		pr.Body = http.NoBody
		pr.ContentLength = 0
		g.mux.ServeHTTP(discardWriter{}, pr)
		if p.matched {
			allow = append(allow, m)
		}
	}
	return allow
}

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
