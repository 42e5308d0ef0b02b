package chain

import (
	"context"
	"io"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Server is a gRPC server and its in-process channel (Local): the same
// services, behind the same interceptor chain. Register services on the
// Server (it is a grpc.ServiceRegistrar): each lands on both.
type Server struct {
	// GRPC serves gRPC clients.
	GRPC *grpc.Server
	// Local is the in-process channel the gateway and the console call.
	Local *Local
	// GRPCOnly, when Options.GRPCOnly is set, serves gRPC clients on a
	// port of its own with grpc-go's transport (grpc.Server.Serve): GRPC's
	// chain and options, a receive bound of GRPCOnlyMaxRequestBytes for
	// every method. Nil otherwise.
	GRPCOnly *grpc.Server
}

// RegisterService registers impl on the gRPC server, on the gRPC-only
// server if there is one,
// and on the in-process channel.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.GRPC.RegisterService(desc, impl)
	if s.GRPCOnly != nil {
		s.GRPCOnly.RegisterService(desc, impl)
	}
	s.Local.RegisterService(desc, impl)
}

// Local is an in-process grpc.ClientConnInterface: a call runs the
// interceptor chain and the service's method on the caller's goroutine (a
// server stream on its own goroutine), with no HTTP/2 framing and no
// protobuf encoding. It behaves as a connection to the gRPC server would:
//
//   - the server's context carries the caller's outgoing metadata as
//     incoming metadata, the caller's deadline and cancellation, and none of
//     the caller's other context values;
//   - header and trailer metadata reach the grpc.Header and grpc.Trailer
//     call options (and a stream's Header and Trailer), on success and on
//     error;
//   - an error reaches the caller as a *status.Status error (a plain error
//     as UNKNOWN, a context error as CANCELLED or DEADLINE_EXCEEDED), as
//     grpc-go's server sends it;
//   - messages are copied field by field (a shallow copy: the caller's
//     request and the method's response share their nested values, which
//     neither side changes after the call), not encoded.
//
// It has no message size bound: its callers (the gateway) bound request
// bodies themselves. The only way to make one is NewServer, so that no
// service is reachable through it without the chain.
type Local struct {
	// unary is the chain's unary interceptors, outermost first: each
	// method's chain is built once, when it is registered (unaryCall).
	unary  []grpc.UnaryServerInterceptor
	stream grpc.StreamServerInterceptor
	// tracer, when set, starts a span per call (startSpan).
	tracer trace.Tracer

	mu      sync.RWMutex
	methods map[string]localMethod
}

type localMethod struct {
	impl any
	// unary is the method's interceptor chain and handler (unaryCall).
	unary  grpc.UnaryHandler
	stream *grpc.StreamDesc
}

var _ grpc.ClientConnInterface = (*Local)(nil)

// RegisterService makes desc's methods callable on l.
func (l *Local) RegisterService(desc *grpc.ServiceDesc, impl any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range desc.Methods {
		m := &desc.Methods[i]
		name := "/" + desc.ServiceName + "/" + m.MethodName
		l.methods[name] = localMethod{impl: impl, unary: l.unaryCall(name, impl, m.Handler)}
	}
	for i := range desc.Streams {
		s := &desc.Streams[i]
		l.methods["/"+desc.ServiceName+"/"+s.StreamName] = localMethod{impl: impl, stream: s}
	}
}

func (l *Local) method(name string) (localMethod, bool) {
	l.mu.RLock()
	m, ok := l.methods[name]
	l.mu.RUnlock()
	return m, ok
}

// Invoke implements grpc.ClientConnInterface.
func (l *Local) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	m, ok := l.method(method)
	if !ok || m.unary == nil {
		return status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	in, ok := args.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "local call %s: the request is not a protobuf message", method)
	}
	// The method's request: a copy, as a gRPC server decodes its own.
	req := in.ProtoReflect().Type().New().Interface()
	if err := shallowCopy(req, in); err != nil {
		return err
	}
	sts := &localTransportStream{method: method}
	spanCtx, span := l.startSpan(ctx, method)
	sctx := grpc.NewContextWithServerTransportStream(serverContext(spanCtx), sts)
	resp, err := m.unary(sctx, req)
	header, trailer := sts.done()
	setCallMetadata(opts, header, trailer)
	if err != nil {
		err = toStatus(err)
		endSpan(span, err)
		return err
	}
	endSpan(span, nil)
	if err := shallowCopy(reply, resp); err != nil {
		return status.Errorf(codes.Internal, "local call %s: %v", method, err)
	}
	return nil
}

// NewStream implements grpc.ClientConnInterface: the method runs on its own
// goroutine until it returns or ctx ends.
func (l *Local) NewStream(ctx context.Context, _ *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	m, ok := l.method(method)
	if !ok || m.stream == nil {
		return nil, status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	spanCtx, span := l.startSpan(ctx, method)
	sctx, cancel := context.WithCancel(spanCtx)
	s := &localStream{
		method: method, opts: opts, cctx: ctx, cancel: cancel,
		toServer:  make(chan proto.Message, 1),
		toClient:  make(chan proto.Message, localStreamBuffer),
		headerSet: make(chan struct{}),
		finished:  make(chan struct{}),
	}
	s.sctx = grpc.NewContextWithServerTransportStream(serverContext(sctx), (*localStreamTransport)(s))
	info := &grpc.StreamServerInfo{FullMethod: method, IsClientStream: m.stream.ClientStreams, IsServerStream: m.stream.ServerStreams}
	ss := (*localServerStream)(s)
	go func() {
		var err error
		if l.stream != nil {
			err = l.stream(m.impl, ss, info, m.stream.Handler)
		} else {
			err = m.stream.Handler(m.impl, ss)
		}
		s.finish(err)
		endSpan(span, toStatus(err))
	}()
	return s, nil
}

// localStreamBuffer is how many messages a server stream sends ahead of
// its reader (a connection's flow-control window plays that part).
const localStreamBuffer = 16

// serverContext is the context a method sees: ctx's deadline and
// cancellation, its outgoing metadata as incoming, none of its values but
// its trace span (the HTTP request's, when tracing is on), as the trace
// context a gRPC call carries in its metadata.
func serverContext(ctx context.Context) context.Context {
	sctx := context.Context(valuesHidden{ctx})
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		sctx = metadata.NewIncomingContext(sctx, md)
	}
	if span := trace.SpanFromContext(ctx); span.SpanContext().IsValid() {
		sctx = trace.ContextWithSpan(sctx, span)
	}
	return sctx
}

// valuesHidden is ctx without its values. A context the method derives
// from it with a cancel (a timeout, the database driver's) follows it with
// a goroutine of its own, as the context package cannot see through it; a
// server context built on context.Background with context.AfterFunc
// instead was measured 3 % slower on GET workspace (BENCHMARKS.md).
type valuesHidden struct{ context.Context }

func (valuesHidden) Value(any) any { return nil }

// unaryCall is the unary method name of impl (h, its generated handler)
// behind l's interceptors, outermost first, as grpc.ChainUnaryInterceptor
// runs them: each interceptor gets the UnaryServerInfo the generated
// handler would give it (Server impl, FullMethod name) and the next one as
// its handler; the innermost handler gives the request it is called with
// to h, with no interceptor. The chain's closures and the info are built
// here, once per method, not on every call (grpc-go's chain and the
// generated handler make one closure per interceptor and call, and the
// info: about ten allocations per call).
func (l *Local) unaryCall(name string, impl any, h grpc.MethodHandler) grpc.UnaryHandler {
	next := func(ctx context.Context, req any) (any, error) {
		return h(impl, ctx, func(v any) error { return shallowCopy(v, req) }, nil)
	}
	info := &grpc.UnaryServerInfo{Server: impl, FullMethod: name}
	for i := len(l.unary) - 1; i >= 0; i-- {
		interceptor, handler := l.unary[i], next
		next = func(ctx context.Context, req any) (any, error) {
			return interceptor(ctx, req, info, handler)
		}
	}
	return next
}

// chainStream is interceptors as one, outermost first.
func chainStream(interceptors []grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	switch len(interceptors) {
	case 0:
		return nil
	case 1:
		return interceptors[0]
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		var next func(i int) grpc.StreamHandler
		next = func(i int) grpc.StreamHandler {
			if i == len(interceptors) {
				return handler
			}
			return func(srv any, ss grpc.ServerStream) error {
				return interceptors[i](srv, ss, info, next(i+1))
			}
		}
		return interceptors[0](srv, ss, info, next(1))
	}
}

// toStatus is err as grpc-go's server sends it.
func toStatus(err error) error {
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	return status.FromContextError(err).Err()
}

// setCallMetadata fills the grpc.Header and grpc.Trailer call options.
func setCallMetadata(opts []grpc.CallOption, header, trailer metadata.MD) {
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = header
		case grpc.TrailerCallOption:
			*o.TrailerAddr = trailer
		}
	}
}

// shallowCopy sets every populated field of src on dst (messages of one
// type), sharing nested messages, lists, maps and bytes.
func shallowCopy(dst, src any) error {
	d, ok1 := dst.(proto.Message)
	s, ok2 := src.(proto.Message)
	if !ok1 || !ok2 {
		return status.Errorf(codes.Internal, "local call: %T and %T are not both protobuf messages", dst, src)
	}
	dm, sm := d.ProtoReflect(), s.ProtoReflect()
	if dm.Descriptor().FullName() != sm.Descriptor().FullName() {
		return status.Errorf(codes.Internal, "local call: %s is not %s", sm.Descriptor().FullName(), dm.Descriptor().FullName())
	}
	if !sm.IsValid() {
		return nil // a nil message of the type: nothing set
	}
	if c := copierFor(reflect.TypeOf(d)); c != nil && reflect.TypeOf(s) == reflect.TypeOf(d) {
		c.copy(reflect.ValueOf(d).Elem(), reflect.ValueOf(s).Elem())
		if u := sm.GetUnknown(); len(u) > 0 {
			dm.SetUnknown(u)
		}
		return nil
	}
	sm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dm.Set(fd, v)
		return true
	})
	if u := sm.GetUnknown(); len(u) > 0 {
		dm.SetUnknown(u)
	}
	return nil
}

// localTransportStream collects a unary method's header and trailer
// metadata (grpc.SetHeader, grpc.SendHeader, grpc.SetTrailer).
type localTransportStream struct {
	method string

	mu              sync.Mutex
	header, trailer metadata.MD
	sent, finished  bool
}

func (t *localTransportStream) Method() string { return t.method }

func (t *localTransportStream) SetHeader(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sent || t.finished {
		return status.Error(codes.Internal, "transport: the header was already sent")
	}
	t.header = join(t.header, md)
	return nil
}

func (t *localTransportStream) SendHeader(md metadata.MD) error {
	if err := t.SetHeader(md); err != nil {
		return err
	}
	t.mu.Lock()
	t.sent = true
	t.mu.Unlock()
	return nil
}

func (t *localTransportStream) SetTrailer(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return status.Error(codes.Internal, "transport: the call has ended")
	}
	t.trailer = join(t.trailer, md)
	return nil
}

func (t *localTransportStream) done() (header, trailer metadata.MD) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.finished = true
	return t.header, t.trailer
}

// join is metadata.Join without a copy when there is nothing to join to
// (the usual case: one SetHeader per call; callers do not change metadata
// they have set).
func join(to, md metadata.MD) metadata.MD {
	if len(to) == 0 {
		return md
	}
	return metadata.Join(to, md)
}

// localStream is both ends of one streaming call: the caller's
// grpc.ClientStream (its methods) and, converted, the method's
// grpc.ServerStream (localServerStream) and grpc.ServerTransportStream
// (localStreamTransport).
type localStream struct {
	method string
	opts   []grpc.CallOption
	cctx   context.Context    // the caller's
	sctx   context.Context    // the method's: cctx's deadline, no values
	cancel context.CancelFunc // ends sctx

	toServer chan proto.Message // closed by CloseSend
	toClient chan proto.Message
	sendOnce sync.Once

	mu         sync.Mutex
	header     metadata.MD
	trailer    metadata.MD
	headerSent bool
	headerSet  chan struct{} // closed when the header is sent
	err        error         // the method's status, once finished
	finished   chan struct{} // closed when the method returned
}

// Header implements grpc.ClientStream.
func (s *localStream) Header() (metadata.MD, error) {
	select {
	case <-s.headerSet:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.header, nil
	case <-s.finished:
		// As grpc-go: the header metadata set before the method returned
		// (nil, and no error, for a trailers-only response); the status
		// comes from RecvMsg.
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.header, nil
	case <-s.cctx.Done():
		return nil, toStatus(s.cctx.Err())
	}
}

// Trailer implements grpc.ClientStream (after RecvMsg returned an error).
func (s *localStream) Trailer() metadata.MD {
	select {
	case <-s.finished:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.trailer
	default:
		return nil
	}
}

// CloseSend implements grpc.ClientStream.
func (s *localStream) CloseSend() error {
	s.sendOnce.Do(func() { close(s.toServer) })
	return nil
}

// Context implements grpc.ClientStream.
func (s *localStream) Context() context.Context { return s.cctx }

// SendMsg implements grpc.ClientStream.
func (s *localStream) SendMsg(m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "local stream %s: %T is not a protobuf message", s.method, m)
	}
	select {
	case s.toServer <- pm:
		return nil
	case <-s.finished:
		return io.EOF // as grpc-go: the status comes from RecvMsg
	case <-s.cctx.Done():
		return toStatus(s.cctx.Err())
	}
}

// RecvMsg implements grpc.ClientStream.
func (s *localStream) RecvMsg(m any) error {
	select {
	case msg := <-s.toClient:
		return shallowCopy(m, msg)
	default:
	}
	select {
	case msg := <-s.toClient:
		return shallowCopy(m, msg)
	case <-s.finished:
		// Messages sent before the method returned come first.
		select {
		case msg := <-s.toClient:
			return shallowCopy(m, msg)
		default:
		}
		s.mu.Lock()
		err := s.err
		s.mu.Unlock()
		if err == nil {
			return io.EOF
		}
		return err
	case <-s.cctx.Done():
		return toStatus(s.cctx.Err())
	}
}

// finish records the method's result and ends the call.
func (s *localStream) finish(err error) {
	s.mu.Lock()
	if err != nil {
		s.err = toStatus(err)
	}
	header, trailer := s.header, s.trailer
	s.mu.Unlock()
	setCallMetadata(s.opts, header, trailer)
	close(s.finished)
	// The method's context ends with the call, as in grpc-go; the caller's
	// (cctx) stays for reading what was buffered.
	s.cancel()
}

// localServerStream is the method's side of a localStream.
type localServerStream localStream

func (ss *localServerStream) s() *localStream { return (*localStream)(ss) }

func (ss *localServerStream) SetHeader(md metadata.MD) error {
	s := ss.s()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.headerSent {
		return status.Error(codes.Internal, "transport: the header was already sent")
	}
	s.header = metadata.Join(s.header, md)
	return nil
}

func (ss *localServerStream) SendHeader(md metadata.MD) error {
	s := ss.s()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.headerSent {
		return status.Error(codes.Internal, "transport: the header was already sent")
	}
	s.header = metadata.Join(s.header, md)
	s.headerSent = true
	close(s.headerSet)
	return nil
}

func (ss *localServerStream) SetTrailer(md metadata.MD) {
	s := ss.s()
	s.mu.Lock()
	s.trailer = metadata.Join(s.trailer, md)
	s.mu.Unlock()
}

func (ss *localServerStream) Context() context.Context { return ss.sctx }

func (ss *localServerStream) SendMsg(m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "local stream %s: %T is not a protobuf message", ss.method, m)
	}
	s := ss.s()
	s.mu.Lock()
	if !s.headerSent {
		s.headerSent = true
		close(s.headerSet)
	}
	s.mu.Unlock()
	select {
	case s.toClient <- pm:
		return nil
	case <-s.sctx.Done():
		return toStatus(s.sctx.Err())
	}
}

func (ss *localServerStream) RecvMsg(m any) error {
	s := ss.s()
	select {
	case msg, ok := <-s.toServer:
		if !ok {
			return io.EOF
		}
		return shallowCopy(m, msg)
	case <-s.sctx.Done():
		return toStatus(s.sctx.Err())
	}
}

// localStreamTransport lets grpc.SetHeader and grpc.SetTrailer reach a
// localStream from the method's context.
type localStreamTransport localStream

func (t *localStreamTransport) Method() string { return t.method }

func (t *localStreamTransport) SetHeader(md metadata.MD) error {
	return (*localServerStream)(t).SetHeader(md)
}

func (t *localStreamTransport) SendHeader(md metadata.MD) error {
	return (*localServerStream)(t).SendHeader(md)
}

func (t *localStreamTransport) SetTrailer(md metadata.MD) error {
	(*localServerStream)(t).SetTrailer(md)
	return nil
}

// fieldCopier copies the populated fields of one generated message type
// by their Go struct fields: what shallowCopy's Range and Set do, without
// boxing each scalar into a protoreflect.Value (two allocations per string
// field, twelve per GET workspace over HTTP).
type fieldCopier struct {
	fields []int // the struct's exported fields: its proto fields and oneofs
}

// copiers holds a *fieldCopier, or a nil one (use Range), per message type.
var copiers sync.Map

// copierFor is t's copier, nil unless t is a pointer to a struct whose
// only unexported fields are protoc-gen-go's message state, size cache and
// unknown fields (extensions, weak fields, the opaque API and dynamic
// messages go through Range).
func copierFor(t reflect.Type) *fieldCopier {
	if c, ok := copiers.Load(t); ok {
		return c.(*fieldCopier)
	}
	c := newFieldCopier(t)
	copiers.Store(t, c)
	return c
}

func newFieldCopier(t reflect.Type) *fieldCopier {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	st := t.Elem()
	c := &fieldCopier{}
	for i := range st.NumField() {
		f := st.Field(i)
		if f.IsExported() {
			c.fields = append(c.fields, i)
			continue
		}
		switch f.Name {
		case "state", "sizeCache", "unknownFields":
		default:
			return nil
		}
	}
	return c
}

// copy sets on dst every field of src that Range would visit: a non-zero
// scalar, a set pointer or oneof, a non-empty list, map or bytes. As Set
// does, dst shares src's nested messages, lists, maps and bytes (and, here,
// its oneof wrappers).
func (c *fieldCopier) copy(dst, src reflect.Value) {
	for _, i := range c.fields {
		v := src.Field(i)
		switch v.Kind() {
		case reflect.Slice, reflect.Map:
			if v.Len() == 0 {
				continue
			}
		default:
			if v.IsZero() {
				continue
			}
		}
		dst.Field(i).Set(v)
	}
}
