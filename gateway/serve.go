package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
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
	return handler(grpcServer, httpHandler, nil)
}

// handler is Handler; admit, when set, is asked first about every gRPC
// call (grpc.Server.ServeHTTP runs no tap handles): an error is the call's
// answer, before its body is read; the context it returns is the call's
// (done when the call ends).
func handler(grpcServer *grpc.Server, httpHandler http.Handler, admit tap.ServerInHandle) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsGRPC(r) {
			if admit != nil {
				ctx, err := admit(r.Context(), &tap.Info{FullMethodName: r.URL.Path, Header: metadata.MD(r.Header)})
				if err != nil {
					writeGRPCStatus(w, status.Convert(err))
					return
				}
				r = r.WithContext(ctx)
			}
			grpcServer.ServeHTTP(w, r)
			return
		}
		httpHandler.ServeHTTP(w, r)
	})
}

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
}

// WithGRPCAdmission asks admit about every gRPC call of the shared port
// before its body is read (transport.Admission.Tap: the bound on large
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

// WithGRPCListener also serves grpcServer natively on lis (gRPC only,
// faster than the shared port's net/http path).
func WithGRPCListener(lis net.Listener) ServeOption {
	return func(c *serveConfig) { c.grpcListener = lis }
}

// ListenAndServe listens on addr and calls Serve.
func ListenAndServe(ctx context.Context, addr string, grpcServer *grpc.Server, httpHandler http.Handler, logger *slog.Logger, opts ...ServeOption) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", addr, err)
	}
	return Serve(ctx, lis, grpcServer, httpHandler, logger, opts...)
}

// Serve answers gRPC (by content type, over h2c with prior knowledge) and
// HTTP/1.1 and h2c (the gateway) on lis until ctx is cancelled, then shuts
// down gracefully: stop accepting, drain HTTP (which includes gRPC calls on
// this port) within the shutdown timeout, then GracefulStop the gRPC server
// (extra gRPC listeners), forcing Stop past the timeout. It
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
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           handler(grpcServer, httpHandler, cfg.admit),
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}

	errc := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("gateway: serve http: %w", err)
		}
	}()
	if cfg.grpcListener != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := grpcServer.Serve(cfg.grpcListener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				errc <- fmt.Errorf("gateway: serve grpc: %w", err)
			}
		}()
	}
	logger.Debug("gateway: serving", slog.String("addr", lis.Addr().String()))

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}

	shutdown(srv, grpcServer, cfg.shutdownTimeout, logger)
	wg.Wait()
	return serveErr
}

func shutdown(srv *http.Server, grpcServer *grpc.Server, timeout time.Duration, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("http drain timed out; closing connections", slog.String("error", err.Error()))
		_ = srv.Close()
	}
	stopped := make(chan struct{})
	go func() {
		grpcServer.GracefulStop()
		close(stopped)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		logger.Warn("grpc drain timed out; stopping")
		grpcServer.Stop()
		<-stopped
	}
	logger.Debug("gateway: shutdown complete")
}
