// Package auth holds the chain's auth and authorization entries: who is
// calling (an Authenticator: API keys and console sessions, KeyAuth), and
// whether the request may be made by them (its organization, workspaces and
// MethodAccess's permission against the key and the caller's roles).
package auth

import (
	"context"
	"strings"

	"github.com/proserun/prose/server/transport"
	"google.golang.org/grpc"
)

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

// denyAll is the Authenticator of a server configured without one: every
// non-public call is refused.
var denyAll Authenticator = AuthenticatorFunc(func(context.Context, string) (context.Context, error) {
	return nil, transport.Unauthenticated(transport.ReasonAuthenticatorMissing, "this server has no authenticator configured: only public methods are served")
})

// IsPublicMethod reports whether fullMethod is one of DefaultPublicMethods
// (callable without credentials).
func IsPublicMethod(fullMethod string) bool {
	return newPublicSet(DefaultPublicMethods).has(fullMethod)
}

// AllowAll lets every call pass unchanged. Tests of the transport use it
// (with chain.Options.InsecureNoAuthorization); a server never should.
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

// Names of the entries in the chain.
const (
	Name = "auth"
	// AuthorizationName is the authorization entry's: it checks the request
	// against the caller: its organization, its workspaces against the key's
	// scope, and the permission of MethodAccess against the caller's roles.
	AuthorizationName = "authorization"
)

// Middleware is the auth entry: every method but the public ones
// (DefaultPublicMethods and extraPublic) goes through a; a nil a refuses
// them all (UNAUTHENTICATED AUTHENTICATOR_NOT_CONFIGURED: fail closed).
func Middleware(a Authenticator, extraPublic []string) transport.Middleware {
	if a == nil {
		a = denyAll
	}
	public := publicMethods(extraPublic)
	return transport.Middleware{Name: Name, Unary: unary(a, public), Stream: stream(a, public)}
}

// publicMethods is the set of DefaultPublicMethods and extra.
func publicMethods(extra []string) publicSet {
	return newPublicSet(append(append([]string{}, DefaultPublicMethods...), extra...))
}

func unary(a Authenticator, public publicSet) grpc.UnaryServerInterceptor {
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

func stream(a Authenticator, public publicSet) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if public.has(info.FullMethod) {
			return handler(srv, ss)
		}
		ctx, err := a.Authenticate(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, transport.WithStreamContext(ss, ctx))
	}
}
