// Package orgwork counts each unary call of an authenticated caller as
// work of the caller's organization while it is served, for the engine's
// processor turns (engine.Engine.Work, docs/fairness.md): while an
// organization's call is served, another organization's long runs leave it
// a processor, so that reading a run or listing exceptions does not wait
// behind them.
package orgwork

import (
	"context"

	"google.golang.org/grpc"

	"github.com/proserun/prose/server/transport"
)

// Name is the entry's name in the chain.
const Name = "org_work"

// Middleware is the entry: work(org) is called as a call of the
// organization's caller starts, and the function it returns when the call
// has been served. Calls without a Principal (public methods) and streams
// (long-lived, mostly waiting) are not counted. It sits after
// authorization (chain.Options.Extra), where the Principal is known.
func Middleware(work func(org string) (done func())) transport.Middleware {
	return transport.Middleware{Name: Name, Unary: func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if p, ok := transport.PrincipalFrom(ctx); ok && p.OrganizationID != "" {
			defer work(p.OrganizationID)()
		}
		return handler(ctx, req)
	}}
}
