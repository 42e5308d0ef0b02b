// Package admission bounds the calls of large-payload methods (file
// uploads) in flight on the connections a gRPC server serves itself, before
// their message is read (an InTapHandle).
package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/proserun/prose/gateway/uploadslots"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/limits"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/tap"
)

// DefaultMaxLargeRequests is the default bound of New: as many as
// the HTTP side's uploads read at once (gateway.DefaultMaxUploads).
const DefaultMaxLargeRequests = 8

// TenantTimeout bounds how long Tap spends naming a call's tenant (the
// lookup of its API key, usually cached): past it the call counts as the
// tenant "" (credentials that do not check out).
const TenantTimeout = 2 * time.Second

// Admission bounds the calls of limits.LargeRequestMethods in flight, before
// their messages are read. Its Tap is both the gRPC server's InTapHandle
// (chain.Options.Admission: calls served by grpc.Server.Serve) and the HTTP
// side's check of the gRPC calls it hands to grpc.Server.ServeHTTP (the
// shared port: gateway.WithGRPCAdmission), which does not run tap
// handles. It runs when a call's headers arrive, so a refused call costs
// the server no more than its headers and the flow-control window of data
// already sent. A call admitted holds its slot until its context is done
// (its stream ended).
type Admission struct {
	slots   chan struct{}
	methods map[string]bool
	// tenants, when set (WithTenants), bounds each tenant's share of the
	// slots; tenantOf names a call's tenant from its headers.
	tenants  *uploadslots.PerTenant
	tenantOf func(ctx context.Context, md metadata.MD) string
}

// New returns the bound of max calls of limits.LargeRequestMethods in
// flight (0: DefaultMaxLargeRequests; negative: nil, no bound). It admits
// native gRPC calls only: the HTTP gateway calls the services in process
// (Local) and bounds its uploads itself.
func New(max int) *Admission {
	if max == 0 {
		max = DefaultMaxLargeRequests
	}
	if max < 0 {
		return nil
	}
	a := &Admission{slots: make(chan struct{}, max), methods: map[string]bool{}}
	for _, m := range limits.LargeRequestMethods {
		a.methods[m] = true
	}
	return a
}

// WithTenants gives each tenant (an organization, as tenantOf names it from
// a call's header metadata) at most per of the slots, so that one
// organization's slow uploads leave the others slots to upload in. per 0
// is half of the slots (at least one); negative: no share. tenantOf runs
// on the connection's reader (Tap) with a deadline of TenantTimeout; a
// call whose credentials do not check out should be named "": such calls
// share one tenant's share. It returns a (nil stays nil: no bound at all).
func (a *Admission) WithTenants(per int, tenantOf func(ctx context.Context, md metadata.MD) string) *Admission {
	if a == nil || tenantOf == nil {
		return a
	}
	if per == 0 {
		per = max(1, cap(a.slots)/2)
	}
	if per > 0 {
		a.tenants, a.tenantOf = uploadslots.NewPerTenant(per), tenantOf
	}
	return a
}

// ServerOptions are the gRPC server options that install a (none for a nil
// a).
func (a *Admission) ServerOptions() []grpc.ServerOption {
	if a == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.InTapHandle(a.Tap)}
}

// Tap admits a call of a large-payload method if a slot of its tenant's
// share and one of the server's are free, and refuses it at once otherwise
// with RESOURCE_EXHAUSTED UPLOADS_BUSY (a tap must not block: it runs on
// the connection's reader). Other methods pass. A nil Admission admits
// everything.
func (a *Admission) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if a == nil || !a.methods[info.FullMethodName] {
		return ctx, nil
	}
	release := func() {}
	if a.tenants != nil {
		tctx, cancel := context.WithTimeout(ctx, TenantTimeout)
		tenant := a.tenantOf(tctx, info.Header)
		cancel()
		rel, ok := a.tenants.Take(ctx, tenant, nil)
		if !ok {
			return nil, transport.NewError(codes.ResourceExhausted, transport.ReasonUploadsBusy,
				fmt.Sprintf("this organization's %d file uploads in flight are its share of the server's %d; retry in a moment", a.tenants.Max(), cap(a.slots))).
				Meta("max_large_requests", fmt.Sprint(cap(a.slots))).Meta("max_large_requests_per_organization", fmt.Sprint(a.tenants.Max())).Err()
		}
		release = rel
	}
	select {
	case a.slots <- struct{}{}:
	default:
		release()
		return nil, transport.NewError(codes.ResourceExhausted, transport.ReasonUploadsBusy,
			fmt.Sprintf("%d large requests (file uploads) are being received; retry in a moment", cap(a.slots))).
			Meta("max_large_requests", fmt.Sprint(cap(a.slots))).Err()
	}
	context.AfterFunc(ctx, func() { <-a.slots; release() })
	return ctx, nil
}
