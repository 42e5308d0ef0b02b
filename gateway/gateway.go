// Package gateway is the HTTP side of Prose: a grpc-gateway mux that turns
// HTTP/JSON into calls on chain.Server's in-process channel (so the
// server's interceptor chain runs for both transports and server streams
// work over HTTP, without HTTP/2 framing or protobuf encoding in memory),
// the JSON marshaler, the error renderers (rpcStatus for /api/v1, the legacy
// shapes for /v1 and /v2), /metrics, /openapi.json, /healthz, and serving
// gRPC and HTTP on one port.
//
// Assembly (cmd/prose/serve.go):
//
//	srv := chain.NewServer(chain.Options{Logger: logger, Authenticator: auth})
//	services.Register(srv)                   // every service, on srv.GRPC and srv.Local
//	h, err := gateway.New(ctx, srv.Local, gateway.Options{OpenAPI: openapi.JSON, Logger: logger},
//		gateway.Handlers()...)
//	err = gateway.ListenAndServe(ctx, addr, srv.GRPC, h, logger) // returns after a graceful shutdown
//
// Error bodies by path prefix (the HTTP status always matches the body; every
// gRPC code has a chosen status, see HTTPStatus):
//
//	/v1/...  {"statusCode": 404, "message": "..."}; UNAUTHENTICATED is 403 {"message": "..."};
//	         PERMISSION_DENIED, INVALID_ARGUMENT, FAILED_PRECONDITION 400, NOT_FOUND 404,
//	         server faults 500 {"statusCode": 500, "message": "Internal server error"}
//	/v2/...  {"status_code": <http>, "message": "...", "details": [...]}
//	others   the reference's rpcStatus: {"code": <google.rpc.Code>, "message": "...", "details": [...]}
//
// A wrong method on a known path is 405 with an Allow header, an unknown path
// 404, each in its prefix's shape. A handler chooses a 2xx status for HTTP
// with transport.SetHTTPStatus (header metadata x-http-code, removed here).
// Only X-Request-Id and the header metadata named in Options.ResponseHeaders
// reach HTTP responses; Authorization, X-Api-Key and X-Request-Id reach gRPC
// metadata.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// RegisterFunc adds a service's routes to the mux, calling the service
// through conn (see Handlers).
type RegisterFunc = func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error

// Options configures New.
type Options struct {
	// OpenAPI is served at GET /openapi.json when not nil.
	OpenAPI []byte
	// Metrics is served at GET /metrics; nil means promhttp.Handler()
	// (the default Prometheus registry).
	Metrics http.Handler
	// DisableMetrics leaves /metrics out.
	DisableMetrics bool
	// Logger receives errors the gateway hides from clients.
	Logger *slog.Logger
	// ResponseHeaders are gRPC response header metadata keys copied to the
	// HTTP response under their own name (e.g. "location"). Nothing else is:
	// no Grpc-Metadata-* header reaches a client.
	ResponseHeaders []string
	// MuxOptions are appended to the gateway's own runtime.ServeMuxOptions.
	// Giving any turns the route index off (routes.go): it could not know
	// what they change in the mux's routing.
	MuxOptions []runtime.ServeMuxOption
	// MaxBodyBytes bounds request bodies other than file uploads (413
	// beyond). 0: DefaultMaxBodyBytes; negative: no bound.
	MaxBodyBytes int64
	// MaxUploadBytes bounds the bodies of the upload paths (IsUploadPath).
	// 0: DefaultMaxUploadBytes; negative: no bound.
	MaxUploadBytes int64
	// MaxUploads bounds the uploads (IsUploadPath) in flight; one more
	// waits up to UploadWait for a slot (its body unread), then is 503
	// UPLOADS_BUSY with Retry-After. 0: DefaultMaxUploads; negative: no
	// bound.
	MaxUploads int
	// UploadWait: 0 is DefaultUploadWait; negative: no wait.
	UploadWait time.Duration
	// UploadTenant names the tenant (organization) of an upload, from its
	// checked credentials ("": unknown; such uploads share one tenant's
	// share). With it, one tenant's uploads hold at most
	// MaxUploadsPerTenant of the MaxUploads slots, so that its slow
	// uploads do not make another's wait or fail. nil: no shares.
	UploadTenant func(*http.Request) string
	// MaxUploadsPerTenant: 0 is half of MaxUploads (at least 1); negative:
	// no shares.
	MaxUploadsPerTenant int
	// BodyReadTimeout bounds the time to read a request body, counted from
	// when the gateway starts on the request (after its headers, and for an
	// upload once it has a slot); past it the request is 408
	// REQUEST_BODY_TIMEOUT and the connection closed. gRPC calls are not
	// concerned. 0: DefaultBodyReadTimeout; negative: none.
	BodyReadTimeout time.Duration
	// ValueExample converts a plain JSON value (120.5) to the JSON of the
	// API's Value ({"number": {"lo": 1205, "flags": 65536}}), for the error
	// of a body that gives a plain value where a Value is expected. nil: the
	// error shows the shape without converting the value.
	ValueExample func(plain []byte) ([]byte, error)
}

type gw struct {
	mux             *runtime.ServeMux
	index           *routeIndex // in front of mux; nil: none (see routes.go)
	log             *slog.Logger
	responseHeaders map[string]bool
}

// New builds the HTTP handler. conn reaches the services through the
// server's interceptor chain: chain.Server's Local (in process), or a
// client connection to the gRPC server; register are the service
// registrations (Handlers). HTTP never bypasses the chain: do not register
// RegisterXxxHandlerServer functions.
func New(ctx context.Context, conn grpc.ClientConnInterface, opts Options, register ...RegisterFunc) (http.Handler, error) {
	_, h, err := build(ctx, conn, opts, register...)
	return h, err
}

func build(ctx context.Context, conn grpc.ClientConnInterface, opts Options, register ...RegisterFunc) (*gw, http.Handler, error) {
	g := &gw{log: opts.Logger, responseHeaders: map[string]bool{}}
	if g.log == nil {
		g.log = slog.Default()
	}
	for _, h := range opts.ResponseHeaders {
		g.responseHeaders[strings.ToLower(h)] = true
	}
	// The request id and the status override are handled apart.
	delete(g.responseHeaders, requestIDMetadata)
	delete(g.responseHeaders, HTTPCodeMetadata)

	// The options that decide routing and its errors, shared by the route
	// index's sub-muxes (routes.go).
	routing := []runtime.ServeMuxOption{
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &Marshaler{HTTPBodyMarshaler: NewMarshaler().HTTPBodyMarshaler, valueExample: opts.ValueExample}),
		runtime.WithErrorHandler(g.errorHandler),
		runtime.WithStreamErrorHandler(g.streamErrorHandler),
		runtime.WithRoutingErrorHandler(g.routingErrorHandler),
	}
	muxOpts := append([]runtime.ServeMuxOption{
		// First, so that every route (generated or HandlePath) is wrapped.
		runtime.WithMiddlewares(probeMiddleware),
	}, routing...)
	muxOpts = append(muxOpts,
		runtime.WithIncomingHeaderMatcher(incomingHeaderMatcher),
		runtime.WithOutgoingHeaderMatcher(g.outgoingHeaderMatcher),
		runtime.WithOutgoingTrailerMatcher(noTrailers),
		runtime.WithForwardResponseOption(httpCodeOption),
		runtime.WithDisableHTTPMethodOverride(),
		runtime.WithHealthzEndpoint(healthpb.NewHealthClient(conn)),
	)
	g.mux = runtime.NewServeMux(append(muxOpts, opts.MuxOptions...)...)

	if opts.OpenAPI != nil {
		doc := opts.OpenAPI
		if err := g.mux.HandlePath(http.MethodGet, "/openapi.json", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
		}); err != nil {
			return nil, nil, fmt.Errorf("gateway: /openapi.json: %w", err)
		}
	}
	if !opts.DisableMetrics {
		metrics := opts.Metrics
		if metrics == nil {
			metrics = promhttp.Handler()
		}
		if err := g.mux.HandlePath(http.MethodGet, "/metrics", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
			metrics.ServeHTTP(w, r)
		}); err != nil {
			return nil, nil, fmt.Errorf("gateway: /metrics: %w", err)
		}
	}
	for i, reg := range register {
		if err := reg(ctx, g.mux, conn); err != nil {
			return nil, nil, fmt.Errorf("gateway: register handler %d: %w", i, err)
		}
	}
	// The route index, unless options of the caller's could change what
	// it reads (it would not know them).
	var routes http.Handler = g.mux
	if len(opts.MuxOptions) == 0 {
		if g.index = newRouteIndex(g.mux, routing...); g.index != nil {
			routes = g.index
		} else {
			g.log.Warn("gateway: runtime.ServeMux's table is not the one the route index reads; routing without it")
		}
	}
	h := g.recoverHTTP(streamErrorShape(routes))
	h = newBodyGuard(opts, h)
	return g, h, nil
}

// Mux is like New but also returns the runtime.ServeMux, for callers that
// add hand-written routes with HandlePath (e.g. a file upload endpoint).
// Routes added this way get the same error shapes, 405 handling and
// request ids.
func Mux(ctx context.Context, conn grpc.ClientConnInterface, opts Options, register ...RegisterFunc) (*runtime.ServeMux, http.Handler, error) {
	g, h, err := build(ctx, conn, opts, register...)
	if err != nil {
		return nil, nil, err
	}
	return g.mux, h, nil
}
