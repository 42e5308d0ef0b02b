package transport

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/tap"

	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
)

// ReasonUploadsBusy is the reason of the RESOURCE_EXHAUSTED a call of a
// large-payload method gets while the bound of them are in flight: that of
// the HTTP side's 503 (gateway).
const ReasonUploadsBusy = errorsv1.ErrorReason_ERROR_REASON_UPLOADS_BUSY

// DefaultMaxLargeRequests is the default bound of NewAdmission: as many as
// the HTTP side's uploads read at once (gateway.DefaultMaxUploads).
const DefaultMaxLargeRequests = 8

// LargeRequestMethods are the methods whose request may be far above the
// JSON body bound (8 MiB), up to MaxRequestBytes: a file's bytes. Each call
// of one holds its message in memory (and more) while it runs.
var LargeRequestMethods = []string{
	"/prose.platform.v1.FileService/UploadFile",
}

var largeRequestMethods = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range LargeRequestMethods {
		m[name] = true
	}
	return m
}()

// Admission bounds the calls of LargeRequestMethods in flight, before
// their messages are read. Its Tap is both the gRPC server's InTapHandle
// (Options.Admission: calls served by grpc.Server.Serve) and the HTTP
// side's check of the gRPC calls it hands to grpc.Server.ServeHTTP (the
// shared port: gateway.WithGRPCAdmission), which does not run tap
// handles. It runs when a call's headers arrive, so a refused call costs
// the server no more than its headers and the flow-control window of data
// already sent. A call admitted holds its slot until its context is done
// (its stream ended).
type Admission struct {
	slots   chan struct{}
	methods map[string]bool
}

// NewAdmission returns the bound of max calls of LargeRequestMethods in
// flight (0: DefaultMaxLargeRequests; negative: nil, no bound). It admits
// native gRPC calls only: the HTTP gateway calls the services in process
// (Local) and bounds its uploads itself.
func NewAdmission(max int) *Admission {
	if max == 0 {
		max = DefaultMaxLargeRequests
	}
	if max < 0 {
		return nil
	}
	a := &Admission{slots: make(chan struct{}, max), methods: map[string]bool{}}
	for _, m := range LargeRequestMethods {
		a.methods[m] = true
	}
	return a
}

// serverOption is the InTapHandle of a (none when a is nil).
func (a *Admission) serverOption() []grpc.ServerOption {
	if a == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.InTapHandle(a.Tap)}
}

// Tap admits a call of a large-payload method if a slot is free, and
// refuses it at once otherwise with RESOURCE_EXHAUSTED
// UPLOADS_BUSY (a tap must not block: it runs on the connection's
// reader). Other methods pass. A nil Admission admits everything.
func (a *Admission) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if a == nil || !a.methods[info.FullMethodName] {
		return ctx, nil
	}
	select {
	case a.slots <- struct{}{}:
	default:
		return nil, NewError(codes.ResourceExhausted, ReasonUploadsBusy,
			fmt.Sprintf("%d large requests (file uploads) are being received; retry in a moment", cap(a.slots))).
			Meta("max_large_requests", fmt.Sprint(cap(a.slots))).Err()
	}
	context.AfterFunc(ctx, func() { <-a.slots })
	return ctx, nil
}
