package gateway

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"
)

// IsGRPC reports whether r is a gRPC call (HTTP/2, Content-Type
// application/grpc, application/grpc+proto, …).
func IsGRPC(r *http.Request) bool {
	return r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}

// Handler answers gRPC calls with grpcServer and everything else with
// httpHandler. Serve it with HTTP/2 enabled (Serve does).
func Handler(grpcServer *grpc.Server, httpHandler http.Handler) http.Handler {
	return handler(grpcServer, httpHandler, serveConfig{})
}

// handler is Handler with cfg's checks of gRPC calls (grpc.Server.ServeHTTP
// runs no tap handles, and knows one receive bound for every method):
// cfg.admit, when set, is asked first about every gRPC call: an error is
// the call's answer, before its body is read; the context it returns is
// the call's (done when the call ends). Then cfg.limit, when set, is given
// the length the call's first message declares (its 5-byte gRPC prefix)
// before that message is read: an error is the call's answer, and the
// message is never read. The first message is awaited only for methods
// whose client sends it with the call (unary and server-streaming: every
// method but client-streaming ones, which grpcServer's own bound covers);
// the wait is bounded by the call's context.
func handler(grpcServer *grpc.Server, httpHandler http.Handler, cfg serveConfig) http.Handler {
	clientStreams := sync.OnceValue(func() map[string]bool {
		m := map[string]bool{}
		for svc, info := range grpcServer.GetServiceInfo() {
			for _, md := range info.Methods {
				if md.IsClientStream {
					m["/"+svc+"/"+md.Name] = true
				}
			}
		}
		return m
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsGRPC(r) {
			httpHandler.ServeHTTP(w, r)
			return
		}
		if cfg.admit != nil {
			ctx, err := cfg.admit(r.Context(), &tap.Info{FullMethodName: r.URL.Path, Header: metadata.MD(r.Header)})
			if err != nil {
				writeGRPCStatus(w, status.Convert(err))
				return
			}
			if ctx != r.Context() { // most calls: unchanged, no copy of the request
				r = r.WithContext(ctx)
			}
		}
		if cfg.limit != nil && !clientStreams()[r.URL.Path] {
			pb := &prefixedBody{body: r.Body}
			n, err := io.ReadFull(r.Body, pb.prefix[:])
			if err == nil {
				if err := cfg.limit(r.URL.Path, binary.BigEndian.Uint32(pb.prefix[1:])); err != nil {
					writeGRPCStatus(w, status.Convert(err))
					return
				}
			}
			// What was read goes back in front of the body (an empty or
			// cut body is grpcServer's to answer).
			pb.n = n
			r.Body = pb
		}
		grpcServer.ServeHTTP(w, r)
	})
}

// prefixedBody is a request body with the first bytes already read (a
// gRPC message's 5-byte prefix, or fewer) put back in front: one
// allocation per call.
type prefixedBody struct {
	prefix [5]byte
	off, n int // prefix[off:n] is still to be read
	body   io.ReadCloser
}

func (b *prefixedBody) Read(p []byte) (int, error) {
	if b.off < b.n {
		k := copy(p, b.prefix[b.off:b.n])
		b.off += k
		return k, nil
	}
	return b.body.Read(p)
}

func (b *prefixedBody) Close() error { return b.body.Close() }

// writeGRPCStatus answers a gRPC call with st alone (a trailers-only
// response).
func writeGRPCStatus(w http.ResponseWriter, st *status.Status) {
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(int(st.Code())))
	h.Set("Grpc-Message", url.PathEscape(st.Message()))
	if b, err := proto.Marshal(st.Proto()); err == nil && len(st.Proto().GetDetails()) > 0 {
		h.Set("Grpc-Status-Details-Bin", base64.RawStdEncoding.EncodeToString(b))
	}
	w.WriteHeader(http.StatusOK)
}

// ServeOption tunes Serve and ListenAndServe.
type ServeOption func(*serveConfig)

type serveConfig struct {
	shutdownTimeout time.Duration
	grpcListener    net.Listener
	admit           tap.ServerInHandle
	limit           func(method string, size uint32) error
	tls             *tls.Config
	// native are gRPC servers served by grpc-go's own transport
	// (WithNativeGRPC).
	native []nativeGRPC
}

type nativeGRPC struct {
	lis net.Listener
	srv *grpc.Server
}

// WithGRPCMessageLimit checks the declared length of the first message of
// every gRPC call of the served ports before it is read
// (limits.RequestSizeError: each method's bound): an error is the
// call's answer, and the message is never read.
func WithGRPCMessageLimit(limit func(method string, size uint32) error) ServeOption {
	return func(c *serveConfig) { c.limit = limit }
}

// WithTLS serves HTTPS and gRPC over TLS (HTTP/2 by ALPN, HTTP/1.1) on the
// port instead of plain HTTP/1.1 and h2c; see CertReloader.
func WithTLS(c *tls.Config) ServeOption {
	return func(s *serveConfig) { s.tls = c }
}

// WithGRPCAdmission asks admit about every gRPC call of the shared port
// before its body is read (admission.Admission.Tap: the bound on large
// requests in flight), as the gRPC server's own InTapHandle does on the
// connections it serves itself.
func WithGRPCAdmission(admit tap.ServerInHandle) ServeOption {
	return func(c *serveConfig) { c.admit = admit }
}

// WithShutdownTimeout bounds each drain step of the shutdown (HTTP, then
// gRPC); past it, remaining connections are closed. Default 15s.
func WithShutdownTimeout(d time.Duration) ServeOption {
	return func(c *serveConfig) { c.shutdownTimeout = d }
}

// WithGRPCListener also serves grpcServer on lis, for gRPC calls only
// (HTTP/2 with prior knowledge; anything else is 415). Its calls go through
// the same checks as the shared port's (WithGRPCAdmission,
// WithGRPCMessageLimit), so they are served the same way: net/http's
// HTTP/2 server and grpc.Server.ServeHTTP. (grpc.Server.Serve, grpc-go's
// own transport, is faster but has one receive bound for every method and
// no hook between a message's length and its bytes.)
func WithGRPCListener(lis net.Listener) ServeOption {
	return func(c *serveConfig) { c.grpcListener = lis }
}

// WithNativeGRPC also serves srv on lis with grpc-go's own transport
// (srv.Serve: gRPC only, TLS by srv's credentials), which costs far less
// CPU per call than the shared port's net/http path. srv has its own
// receive bound and tap handles: neither WithGRPCAdmission nor
// WithGRPCMessageLimit applies to it. It stops with the rest: after the
// HTTP drain, srv.GracefulStop within the shutdown timeout (with the other
// gRPC server's), then Stop.
func WithNativeGRPC(lis net.Listener, srv *grpc.Server) ServeOption {
	return func(c *serveConfig) { c.native = append(c.native, nativeGRPC{lis, srv}) }
}

// ListenAndServe listens on addr and calls Serve.
func ListenAndServe(ctx context.Context, addr string, grpcServer *grpc.Server, httpHandler http.Handler, logger *slog.Logger, opts ...ServeOption) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", addr, err)
	}
	return Serve(ctx, lis, grpcServer, httpHandler, logger, opts...)
}

// Serve answers gRPC (by content type, over h2c with prior knowledge, or
// over TLS with WithTLS) and HTTP/1.1 and HTTP/2 (the gateway) on lis until ctx is cancelled, then shuts
// down gracefully: stop accepting, drain HTTP (which includes gRPC calls on
// this port and on WithGRPCListener's) within the shutdown timeout, then
// GracefulStop the gRPC server (and WithNativeGRPC's, together), forcing
// Stop past the timeout. It
// returns nil after a shutdown caused by ctx, or the error that stopped it.
func Serve(ctx context.Context, lis net.Listener, grpcServer *grpc.Server, httpHandler http.Handler, logger *slog.Logger, opts ...ServeOption) error {
	cfg := serveConfig{shutdownTimeout: 15 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if logger == nil {
		logger = slog.Default()
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	h := handler(grpcServer, httpHandler, cfg)
	if cfg.tls != nil {
		protocols.SetHTTP2(true)
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	srv := &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		TLSConfig:         cfg.tls,
	}
	var grpcSrv *http.Server
	if cfg.grpcListener != nil {
		var h2only http.Protocols
		h2only.SetUnencryptedHTTP2(true)
		grpcSrv = &http.Server{
			Handler: handler(grpcServer, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "this port serves gRPC only", http.StatusUnsupportedMediaType)
			}), cfg),
			Protocols:         &h2only,
			ReadHeaderTimeout: srv.ReadHeaderTimeout,
			IdleTimeout:       srv.IdleTimeout,
			ErrorLog:          srv.ErrorLog,
			BaseContext:       srv.BaseContext,
		}
	}

	errc := make(chan error, 2+len(cfg.native))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		serve := func() error { return srv.Serve(lis) }
		if cfg.tls != nil {
			serve = func() error { return srv.ServeTLS(lis, "", "") }
		}
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("gateway: serve http: %w", err)
		}
	}()
	if cfg.grpcListener != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := grpcSrv.Serve(cfg.grpcListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("gateway: serve grpc: %w", err)
			}
		}()
	}
	for _, n := range cfg.native {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.srv.Serve(n.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				errc <- fmt.Errorf("gateway: serve native grpc: %w", err)
			}
		}()
	}
	logger.Debug("gateway: serving", slog.String("addr", lis.Addr().String()))

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}

	grpcServers := []*grpc.Server{grpcServer}
	for _, n := range cfg.native {
		grpcServers = append(grpcServers, n.srv)
	}
	shutdown(grpcServers, cfg.shutdownTimeout, logger, srv, grpcSrv)
	wg.Wait()
	return serveErr
}

func shutdown(grpcServers []*grpc.Server, timeout time.Duration, logger *slog.Logger, servers ...*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, srv := range servers {
		if srv == nil {
			continue
		}
		if err := srv.Shutdown(ctx); err != nil {
			logger.Warn("http drain timed out; closing connections", slog.String("error", err.Error()))
			_ = srv.Close()
		}
	}
	// The gRPC servers drain together, within one timeout.
	stopped := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, g := range grpcServers {
			wg.Add(1)
			go func() { defer wg.Done(); g.GracefulStop() }()
		}
		wg.Wait()
		close(stopped)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		logger.Warn("grpc drain timed out; stopping")
		for _, g := range grpcServers {
			g.Stop()
		}
		<-stopped
	}
	logger.Debug("gateway: shutdown complete")
}
