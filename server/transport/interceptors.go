package transport

import (
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	"github.com/proserun/prose/ids"
	"github.com/proserun/prose/logctx"

	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"go.einride.tech/aip/fieldbehavior"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// RequestIDHeader is the metadata key (and HTTP header) carrying the request
// id, in both directions.
const RequestIDHeader = "x-request-id"

type requestIDKey struct{}

// callInfo is placed in the context by the outermost interceptor so that
// entries outside the request id one (recovery) can still log the id.
type callInfo struct{ requestID, method string }

type callInfoKey struct{}

// RequestID returns the request id of the call ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// ContextWithRequestID returns ctx carrying id as its request id.
func ContextWithRequestID(ctx context.Context, id string) context.Context {
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		ci.requestID = id
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// serverStream replaces the context of a grpc.ServerStream.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }

func withStreamContext(ss grpc.ServerStream, ctx context.Context) grpc.ServerStream {
	if w, ok := ss.(*serverStream); ok {
		return &serverStream{ServerStream: w.ServerStream, ctx: ctx}
	}
	return &serverStream{ServerStream: ss, ctx: ctx}
}

// --- recovery -------------------------------------------------------------

// The recovery entry is go-grpc-middleware's recovery interceptor; ours
// around it only places the callInfo its handler reads (the request id the
// entry inside it finds, the method) for the log line of the panic.

func recoveryHandler(log *slog.Logger) recovery.Option {
	return recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
		if ci == nil {
			ci = &callInfo{}
		}
		return recovered(log, ci.requestID, ci.method, p)
	})
}

func recoveryUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	rec := recovery.UnaryServerInterceptor(recoveryHandler(log))
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx = context.WithValue(ctx, callInfoKey{}, &callInfo{method: info.FullMethod})
		return rec(ctx, req, info, handler)
	}
}

func recoveryStream(log *slog.Logger) grpc.StreamServerInterceptor {
	rec := recovery.StreamServerInterceptor(recoveryHandler(log))
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ss = withStreamContext(ss, context.WithValue(ss.Context(), callInfoKey{}, &callInfo{method: info.FullMethod}))
		return rec(srv, ss, info, handler)
	}
}

func recovered(log *slog.Logger, requestID, method string, p any) error {
	log.Error("panic in handler",
		slog.String("method", method),
		slog.String("code", codes.Internal.String()),
		slog.String("request_id", requestID),
		slog.String("panic", fmt.Sprint(p)),
		slog.String("stack", string(debug.Stack())),
	)
	return NewError(codes.Internal, ReasonInternal, internalMessage).Err()
}

// --- request id -----------------------------------------------------------

func incomingRequestID(ctx context.Context) string {
	for _, id := range metadata.ValueFromIncomingContext(ctx, RequestIDHeader) {
		if ids.ValidRequestID(id) {
			return id
		}
	}
	return ids.NewRequestID()
}

func requestIDUnary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		id := incomingRequestID(ctx)
		ctx = ContextWithRequestID(logctx.With(ctx, logctx.RequestID, id, logctx.Method, info.FullMethod), id)
		// Header for callers that read headers; trailer too, because an
		// error without a message is sent as a trailers-only response. One
		// map for both: metadata set is not changed afterwards (grpc-go and
		// Local join further metadata into a new map).
		md := metadata.MD{RequestIDHeader: {id}}
		_ = grpc.SetHeader(ctx, md)
		_ = grpc.SetTrailer(ctx, md)
		return handler(ctx, req)
	}
}

func requestIDStream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		id := incomingRequestID(ss.Context())
		_ = ss.SetHeader(metadata.Pairs(RequestIDHeader, id))
		ss.SetTrailer(metadata.Pairs(RequestIDHeader, id))
		ctx := logctx.With(ss.Context(), logctx.RequestID, id, logctx.Method, info.FullMethod)
		return handler(srv, withStreamContext(ss, ContextWithRequestID(ctx, id)))
	}
}

// --- logging --------------------------------------------------------------

func logCall(ctx context.Context, log *slog.Logger, method string, start time.Time, err error) {
	code := status.Code(err)
	level := slog.LevelInfo
	switch code {
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable:
		level = slog.LevelError
	}
	if !log.Enabled(ctx, level) {
		// Not logged (--log-level above info): no duration, no attributes.
		return
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("code", code.String()),
		slog.Float64("duration_ms", float64(time.Since(start))/float64(time.Millisecond)),
		slog.String("request_id", RequestID(ctx)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", status.Convert(err).Message()))
	}
	log.LogAttrs(ctx, level, "rpc", attrs...)
}

func loggingUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		logCall(ctx, log, info.FullMethod, start, err)
		return resp, err
	}
}

func loggingStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		logCall(ss.Context(), log, info.FullMethod, start, err)
		return err
	}
}

// --- error normalisation --------------------------------------------------

func normalise(ctx context.Context, log *slog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	st, replaced := ToStatus(err)
	if replaced {
		log.LogAttrs(ctx, slog.LevelError, "non-status error replaced",
			slog.String("method", method),
			slog.String("request_id", RequestID(ctx)),
			slog.String("error", err.Error()),
			slog.String("code", st.Code().String()),
		)
	}
	return st.Err()
}

// The errors entry also recovers panics of the entries inside it and of the
// handler, so that logging and metrics (outside it) count them as INTERNAL;
// the outermost recovery entry is left for panics in the chain itself.

func errorsUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				resp, err = nil, recovered(log, RequestID(ctx), info.FullMethod, p)
			}
		}()
		resp, err = handler(ctx, req)
		if err != nil {
			return nil, normalise(ctx, log, info.FullMethod, err)
		}
		return resp, nil
	}
}

func errorsStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = recovered(log, RequestID(ss.Context()), info.FullMethod, p)
			}
		}()
		return normalise(ss.Context(), log, info.FullMethod, handler(srv, ss))
	}
}

// --- auth -----------------------------------------------------------------

// Authenticator establishes who is calling. It reads the credential
// (`authorization: Bearer …` or `x-api-key`) from the incoming metadata and
// returns a context carrying the principal, or an error: UNAUTHENTICATED for a
// missing or unknown credential, PERMISSION_DENIED for one that may not call
// fullMethod. Public methods never reach it.
type Authenticator interface {
	Authenticate(ctx context.Context, fullMethod string) (context.Context, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(ctx context.Context, fullMethod string) (context.Context, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, fullMethod string) (context.Context, error) {
	return f(ctx, fullMethod)
}

// ReasonAuthenticatorMissing is the reason of the refusal of a server built
// without an Authenticator.
const ReasonAuthenticatorMissing = errorsv1.ErrorReason_ERROR_REASON_AUTHENTICATOR_NOT_CONFIGURED

// denyAll is the Authenticator of a server configured without one: every
// non-public call is refused.
var denyAll Authenticator = AuthenticatorFunc(func(context.Context, string) (context.Context, error) {
	return nil, Unauthenticated(ReasonAuthenticatorMissing, "this server has no authenticator configured: only public methods are served")
})

// IsPublicMethod reports whether fullMethod is one of DefaultPublicMethods
// (callable without credentials).
func IsPublicMethod(fullMethod string) bool {
	return newPublicSet(DefaultPublicMethods).has(fullMethod)
}

// AllowAll lets every call pass unchanged. Tests of the transport use it
// (with Options.InsecureNoAuthorization); a server never should.
var AllowAll Authenticator = AuthenticatorFunc(func(ctx context.Context, _ string) (context.Context, error) {
	return ctx, nil
})

// DefaultPublicMethods are callable without credentials: gRPC health,
// server reflection and the legacy GET /v2/health. Entries ending in "/"
// match a whole service.
var DefaultPublicMethods = []string{
	"/grpc.health.v1.Health/",
	"/grpc.reflection.v1.ServerReflection/",
	"/grpc.reflection.v1alpha.ServerReflection/",
	"/prose.legacy.v2.LegacyService/Health",
}

type publicSet struct {
	exact    map[string]bool
	prefixes []string
}

func newPublicSet(methods []string) publicSet {
	p := publicSet{exact: map[string]bool{}}
	for _, m := range methods {
		if strings.HasSuffix(m, "/") {
			p.prefixes = append(p.prefixes, m)
		} else {
			p.exact[m] = true
		}
	}
	return p
}

func (p publicSet) has(method string) bool {
	if p.exact[method] {
		return true
	}
	for _, pre := range p.prefixes {
		if strings.HasPrefix(method, pre) {
			return true
		}
	}
	return false
}

// The auth entry authenticates every method but the public ones with the
// Authenticator, given the method the interceptor is told (the gRPC
// server's, or Local's: the same name grpc.Method reads). A service cannot
// replace it (go-grpc-middleware's auth interceptor, used before, let a
// service implementing AuthFuncOverride skip the Authenticator; and its
// selector formatted the method's name again on every call).

func authUnary(a Authenticator, public publicSet) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if public.has(info.FullMethod) {
			return handler(ctx, req)
		}
		ctx, err := a.Authenticate(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

func authStream(a Authenticator, public publicSet) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if public.has(info.FullMethod) {
			return handler(srv, ss)
		}
		ctx, err := a.Authenticate(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, withStreamContext(ss, ctx))
	}
}

// --- validation -----------------------------------------------------------

// Validate checks a request: the sizes and characters of checkLimits (no
// NUL in any string; titles, code, inputs and events within store's
// limits), then every field marked
// `(google.api.field_behavior) = REQUIRED` must be set (INVALID_ARGUMENT with
// one BadRequest violation per missing field), then the message's own
// `Validate() error`, if it has one, is called. A Validate error that is a
// status passes as it is; any other becomes INVALID_ARGUMENT.
func Validate(req any) error { return defaultLimits.validate(req) }

// validate is Validate with the sizes of ls.
func (ls *limitSet) validate(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	if err := ls.checkLimits(m.ProtoReflect()); err != nil {
		return err
	}
	if err := validateConstraints(m); err != nil {
		return err
	}
	if err := fieldbehavior.ValidateRequiredFields(m); err != nil {
		var missing []*FieldViolation
		collectMissing(m.ProtoReflect(), "", &missing)
		if len(missing) == 0 { // cannot happen, but never lose the error
			missing = append(missing, Violation("", err.Error()))
		}
		missing = outsideUpdateMask(m.ProtoReflect(), missing)
		if len(missing) == 0 {
			return validateSelf(req)
		}
		fields := make([]string, len(missing))
		for i, v := range missing {
			fields[i] = v.GetField()
		}
		return NewError(codes.InvalidArgument, ReasonRequiredFieldMissing,
			"missing required field: "+strings.Join(fields, ", ")).
			Meta("fields", strings.Join(fields, ",")).
			Violations(missing...).Err()
	}
	return validateSelf(req)
}

// validateSelf calls the request's own Validate method, if it has one.
func validateSelf(req any) error {
	if v, ok := req.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			if _, isStatus := status.FromError(err); isStatus {
				return err
			}
			return NewError(codes.InvalidArgument, ReasonInvalidRequest, err.Error()).Err()
		}
	}
	return nil
}

// outsideUpdateMask drops, from the missing fields of a partial update
// (AIP-134: a request with a non-empty update_mask), those inside the
// resource that the mask does not name: a partial update leaves them as they
// are. The resource itself, when required, must still be given.
func outsideUpdateMask(m protoreflect.Message, missing []*FieldViolation) []*FieldViolation {
	fd := m.Descriptor().Fields().ByName("update_mask")
	if fd == nil || fd.Kind() != protoreflect.MessageKind || fd.Message().FullName() != "google.protobuf.FieldMask" || !m.Has(fd) {
		return missing
	}
	mask, ok := m.Get(fd).Message().Interface().(*fieldmaskpb.FieldMask)
	if !ok || len(mask.GetPaths()) == 0 || slices.Contains(mask.GetPaths(), "*") {
		return missing
	}
	kept := missing[:0]
	for _, v := range missing {
		resource, rel, nested := strings.Cut(v.GetField(), ".")
		if nested && resource != "update_mask" && !maskCovers(mask.GetPaths(), rel) {
			continue
		}
		kept = append(kept, v)
	}
	return kept
}

// maskCovers reports whether a mask path names field or one of its parents.
func maskCovers(paths []string, field string) bool {
	for _, p := range paths {
		if p == field || strings.HasPrefix(field, p+".") {
			return true
		}
	}
	return false
}

// collectMissing walks m like fieldbehavior.ValidateRequiredFields but
// records every missing required field instead of stopping at the first.
func collectMissing(m protoreflect.Message, path string, out *[]*FieldViolation) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		p := string(f.Name())
		if path != "" {
			p = path + "." + p
		}
		if !present(m, f) {
			if fieldbehavior.Has(f, annotations.FieldBehavior_REQUIRED) {
				*out = append(*out, Violation(p, "required field is missing"))
			}
			continue
		}
		if f.Kind() != protoreflect.MessageKind {
			continue
		}
		v := m.Get(f)
		switch {
		case f.IsList():
			for j := 0; j < v.List().Len(); j++ {
				collectMissing(v.List().Get(j).Message(), fmt.Sprintf("%s[%d]", p, j), out)
			}
		case f.IsMap():
			if f.MapValue().Kind() != protoreflect.MessageKind {
				continue
			}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				collectMissing(mv.Message(), fmt.Sprintf("%s[%v]", p, k.Interface()), out)
				return true
			})
		default:
			collectMissing(v.Message(), p, out)
		}
	}
}

// present mirrors fieldbehavior's notion of a set field: a zero scalar, an
// empty list or map and an unset message are all missing, presence or not.
func present(m protoreflect.Message, f protoreflect.FieldDescriptor) bool {
	v := m.Get(f)
	if !v.IsValid() {
		return false
	}
	switch {
	case f.IsList():
		return v.List().Len() > 0
	case f.IsMap():
		return v.Map().Len() > 0
	}
	switch f.Kind() {
	case protoreflect.EnumKind:
		return v.Enum() != 0
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Int64Kind,
		protoreflect.Sint64Kind, protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		return v.Int() != 0
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return v.Uint() != 0
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float() != 0
	case protoreflect.StringKind:
		return v.String() != ""
	case protoreflect.BytesKind:
		return len(v.Bytes()) > 0
	case protoreflect.MessageKind:
		return v.Message().IsValid()
	}
	return true
}

func validationUnary(ls *limitSet) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := ls.validate(req); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

type validatingStream struct {
	grpc.ServerStream
	ls *limitSet
}

func (s validatingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.ls.validate(m)
}

func validationStream(ls *limitSet) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, validatingStream{ss, ls})
	}
}
