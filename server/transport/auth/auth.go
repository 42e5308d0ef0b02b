package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

const (
	apiKeyHeader           = "x-api-key"
	authorizationHeader    = "authorization"
	touchInterval          = time.Minute
	maxCredentialLength    = 512
	unauthenticatedMessage = "invalid API key"
)

// KeyAuth authenticates API keys against the store; the chain's
// authorization entry then authorizes calls with MethodAccess. Use it as
// chain.Options.Authenticator.
//
// Keys and permission sets read from the store are cached under the
// store's AuthGeneration (store.AuthGenerations): an entry is used only while
// the generation it was read under is current, and for at most
// authCacheTTL. The store moves the generation on after every write that
// changes keys, roles or memberships, in this process and (PostgreSQL,
// LISTEN/NOTIFY) in the other replicas, so a revoked key or role is refused
// by the next call; the TTL bounds what a write the store cannot see (a
// `prose keys` command in another process on a SQLite file, a replica
// whose notifications are interrupted) leaves cached. A key's secret,
// expiry and level are checked on every call, cached or not.
type KeyAuth struct {
	st  store.Store
	now func() time.Time
	gen store.AuthGenerations

	mu      sync.Mutex
	touched map[string]time.Time // key id → last TouchAPIKey

	keys     genCache[string, *cachedKey]           // key prefix → key
	perms    genCache[permKey, []string]            // the user's permissions in a workspace
	sessions genCache[string, store.ConsoleSession] // token hash → console session

	console consoleTrust // see auth_session.go
}

const (
	// authCacheTTL bounds how long a cached key or permission set is used.
	authCacheTTL = 2 * time.Second
	// authCacheMax bounds the entries of each cache (beyond it, the cache
	// starts again empty).
	authCacheMax = 10000
)

type permKey struct{ org, ws, user string }

// genCache keeps values read under an AuthGeneration.
type genCache[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]genEntry[V]
}

type genEntry[V any] struct {
	v   V
	gen uint64
	at  time.Time
}

// peek returns the cached value of k while it may be used (as load
// would), without reading it when it may not.
func (c *genCache[K, V]) peek(gens store.AuthGenerations, k K) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && e.gen == gens.AuthGeneration() && time.Since(e.at) < authCacheTTL {
		return e.v, true
	}
	var zero V
	return zero, false
}

// load returns the value of k: the cached one while gens has not moved
// on since it was read and it is younger than authCacheTTL, else what read
// returns (cached unless an error).
func (c *genCache[K, V]) load(gens store.AuthGenerations, k K, read func() (V, error)) (V, error) {
	if v, ok := c.peek(gens, k); ok {
		return v, nil
	}
	// The generation is read before the value: a change committed after
	// the read moves it on and the entry is not used.
	gen, at := gens.AuthGeneration(), time.Now()
	v, err := read()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= authCacheMax {
		c.m = map[K]genEntry[V]{}
	}
	c.m[k] = genEntry[V]{v: v, gen: gen, at: at}
	c.mu.Unlock()
	return v, nil
}

// NewKeyAuth returns the authenticator; now may be nil (time.Now).
func NewKeyAuth(st store.Store, now func() time.Time) *KeyAuth {
	if now == nil {
		now = time.Now
	}
	return &KeyAuth{st: st, now: now, gen: st, touched: map[string]time.Time{}}
}

// cachedKey is a key record read under an AuthGeneration, and the value
// that last proved to be its key.
type cachedKey struct {
	k store.APIKey
	// verified is the key value that last passed apikey.Parse and
	// apikey.Verify against k.SecretHash, nil before one did. It lives as
	// long as the entry (authCacheTTL at most, and no longer than the
	// generation it was read under), like the values of the requests
	// themselves.
	verified atomic.Pointer[string]
}

// apiKey is GetAPIKeyByPrefix through the cache (a key not found is not
// cached).
func (a *KeyAuth) apiKey(ctx context.Context, prefix string) (*cachedKey, error) {
	return a.keys.load(a.gen, prefix, func() (*cachedKey, error) {
		k, err := a.st.GetAPIKeyByPrefix(ctx, prefix)
		if err != nil {
			return nil, err
		}
		return &cachedKey{k: k}, nil
	})
}

// verifiedKey returns the key whose value is value: its shape and checksum
// (apikey.Parse) and its secret (apikey.Verify: SHA-256 of the value
// against the stored hash, in constant time) are checked, the store (or
// the cache) read by the value's prefix. A value equal to the one that
// last passed these checks for the record the cache holds is that key:
// it is compared with it in constant time instead, which spares the hash
// and the checksum of every call of a client that sends the same key
// again. The record is used under the cache's rules (store generation,
// authCacheTTL): a revoked or changed key is read again, and its value
// checked again. Errors: apikey.ErrMalformed for a value that is not a
// key, store.ErrNotFound when the prefix names no key or the secret does
// not match, else the store's.
func (a *KeyAuth) verifiedKey(ctx context.Context, value string) (store.APIKey, error) {
	if len(value) == apikey.Len {
		// The prefix is public (the key's id in the store), and only the
		// cache is read here.
		if ck, ok := a.keys.peek(a.gen, value[:apikey.PrefixLen]); ok {
			if v := ck.verified.Load(); v != nil && constantTimeEqual(*v, value) {
				return ck.k, nil
			}
		}
	}
	prefix, err := apikey.Parse(value)
	if err != nil {
		return store.APIKey{}, err
	}
	ck, err := a.apiKey(ctx, prefix)
	if err != nil {
		return store.APIKey{}, err
	}
	if !apikey.Verify(value, ck.k.SecretHash) {
		return store.APIKey{}, store.ErrNotFound
	}
	v := strings.Clone(value) // not the request's memory
	ck.verified.Store(&v)
	return ck.k, nil
}

// constantTimeEqual reports whether a and b are equal, in a time that
// depends on their lengths only (subtle.ConstantTimeCompare without
// converting the strings to byte slices).
func constantTimeEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var d byte
	for i := 0; i < len(a); i++ {
		d |= a[i] ^ b[i]
	}
	return subtle.ConstantTimeByteEq(d, 0) == 1
}

// permissions is EffectivePermissions through the cache. The slice is
// shared: callers must not modify it.
func (a *KeyAuth) permissions(ctx context.Context, org, ws, user string) ([]string, error) {
	return a.perms.load(a.gen, permKey{org, ws, user}, func() ([]string, error) { return a.st.EffectivePermissions(ctx, org, ws, user) })
}

// consoleSession is GetConsoleSession through the cache (a session not
// found is not cached); a cached session past its expiry is refused.
func (a *KeyAuth) consoleSession(ctx context.Context, tokenHash string) (store.ConsoleSession, error) {
	now := a.now()
	s, err := a.sessions.load(a.gen, tokenHash, func() (store.ConsoleSession, error) { return a.st.GetConsoleSession(ctx, tokenHash, now) })
	if err != nil {
		return store.ConsoleSession{}, err
	}
	if !now.Before(s.ExpireTime) {
		return store.ConsoleSession{}, fmt.Errorf("console session expired: %w", store.ErrNotFound)
	}
	return s, nil
}

// credential reads the key: Authorization: Bearer first, then x-api-key.
func credential(ctx context.Context) (string, bool) {
	// ValueFromIncomingContext copies one key's values, not the whole
	// metadata (FromIncomingContext does, on every call).
	if vs := metadata.ValueFromIncomingContext(ctx, authorizationHeader); len(vs) > 0 {
		scheme, token, ok := strings.Cut(strings.TrimSpace(vs[0]), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token), true
		}
		// Another scheme: present but not a key we can read.
		return "", true
	}
	if vs := metadata.ValueFromIncomingContext(ctx, apiKeyHeader); len(vs) > 0 {
		return strings.TrimSpace(vs[0]), true
	}
	return "", false
}

// Authenticate implements Authenticator: it finds the key, checks it and
// its permission level against MethodAccess[fullMethod], and puts the
// Principal in the context. Scope, organization and role checks need the
// request: the chain's authorization entry does them.
func (a *KeyAuth) Authenticate(ctx context.Context, fullMethod string) (context.Context, error) {
	if ctx, handled, err := a.authenticateConsole(ctx, fullMethod); handled {
		return ctx, err
	}
	value, present := credential(ctx)
	if !present {
		return nil, transport.Unauthenticated(transport.ReasonAPIKeyMissing, transport.MissingCredentialDescription)
	}
	if len(value) > maxCredentialLength {
		return nil, transport.Unauthenticated(transport.ReasonAPIKeyInvalid, unauthenticatedMessage)
	}
	k, err := a.verifiedKey(ctx, value)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, apikey.ErrMalformed) {
		return nil, transport.Unauthenticated(transport.ReasonAPIKeyInvalid, unauthenticatedMessage)
	}
	if err != nil {
		return nil, err
	}
	now := a.now()
	if k.Expired(now) {
		return nil, transport.NewError(codes.Unauthenticated, transport.ReasonAPIKeyExpired, "the API key has expired").
			Meta("expire_time", k.ExpireTime.UTC().Format(time.RFC3339)).Err()
	}
	p := &transport.Principal{
		UserID: k.UserID, OrganizationID: k.OrganizationID, KeyID: k.ID, KeyPrefix: k.Prefix,
		AllWorkspaces: k.AllWorkspaces, WorkspaceIDs: k.WorkspaceIDs,
		Level: k.PermissionLevel, Toggles: k.Permissions,
	}
	org, user := k.OrganizationID, k.UserID
	p.Permissions = func(ctx context.Context, ws string) ([]string, error) {
		return a.permissions(ctx, org, ws, user)
	}
	acc, ok := MethodAccess[fullMethod]
	if !ok {
		return nil, transport.PermissionDenied(transport.ReasonMethodNotAuthorized, "this method is not open to API keys")
	}
	if p.Level == store.PermissionReadOnly && acc.Write {
		return nil, transport.PermissionDenied(transport.ReasonAPIKeyReadOnly, "the API key is read-only")
	}
	if !p.LevelAllows(acc.Permission, acc.Write) {
		return nil, transport.NewError(codes.PermissionDenied, transport.ReasonAPIKeyPermissionOff,
			fmt.Sprintf("the API key does not have the permission %s", acc.Permission)).
			Meta("permission", acc.Permission).Err()
	}
	a.touch(ctx, k, now)
	return transport.ContextWithPrincipal(ctx, p), nil
}

// touch records last use at most once per touchInterval per key and process.
func (a *KeyAuth) touch(ctx context.Context, k store.APIKey, now time.Time) {
	a.mu.Lock()
	last, ok := a.touched[k.ID]
	if !ok {
		last = k.LastUsedTime
	}
	due := now.Sub(last) >= touchInterval
	if due {
		a.touched[k.ID] = now
	}
	a.mu.Unlock()
	if due {
		_ = a.st.TouchAPIKey(ctx, k.ID, now) // best effort: never fails a call
	}
}

// AuthorizationMiddleware is the request-aware half of authentication, a
// built-in entry of the chain (after validation): it checks the request's
// organization_id against the key's organization, its workspace ids
// (workspace_id, workspace_ids, legacy agent_id) against the key's scope,
// and the permission of MethodAccess against the caller's roles in that
// workspace (or in the organization when the request names none). A
// non-public call that arrives without a Principal is refused unless
// insecure (tests of the transport).
func AuthorizationMiddleware(extraPublic []string, insecure bool) transport.Middleware {
	public := publicMethods(extraPublic)
	check := func(ctx context.Context, method string, req any) error {
		if public.has(method) {
			return nil
		}
		if _, ok := transport.PrincipalFrom(ctx); !ok {
			if insecure {
				return nil
			}
			return transport.Unauthenticated(transport.ReasonAuthenticatorMissing, "the call was not authenticated")
		}
		return authorize(ctx, method, req)
	}
	return transport.Middleware{
		Name: AuthorizationName,
		Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if err := check(ctx, info.FullMethod, req); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		},
		Stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if public.has(info.FullMethod) {
				return handler(srv, ss)
			}
			return handler(srv, &authorizingStream{ServerStream: ss, method: info.FullMethod, check: check})
		},
	}
}

// authorizingStream authorizes the first message of a stream (the request
// of a server-streaming call).
type authorizingStream struct {
	grpc.ServerStream
	method string
	check  func(ctx context.Context, method string, req any) error
	done   bool
}

func (s *authorizingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if s.done {
		return nil
	}
	s.done = true
	return s.check(s.Context(), s.method, m)
}

// RequestTarget is the organization and workspaces a request names.
type RequestTarget struct {
	OrganizationID string
	WorkspaceIDs   []string
}

// TargetOf reads organization_id and workspace_id / workspace_ids /
// agent_id (the legacy API's workspace) from the top level of a request.
func TargetOf(req any) RequestTarget {
	var t RequestTarget
	m, ok := req.(proto.Message)
	if !ok {
		return t
	}
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	str := func(name protoreflect.Name) string {
		f := fields.ByName(name)
		if f == nil || f.Kind() != protoreflect.StringKind || f.IsList() {
			return ""
		}
		return r.Get(f).String()
	}
	t.OrganizationID = str("organization_id")
	if v := str("workspace_id"); v != "" {
		t.WorkspaceIDs = append(t.WorkspaceIDs, v)
	}
	// agent_id names a workspace in the legacy API (an "agent" there); in a
	// request that also has workspace_id (the conversation threads of
	// EventService) it is a conversation agent, not a workspace.
	if v := str("agent_id"); v != "" && fields.ByName("workspace_id") == nil {
		t.WorkspaceIDs = append(t.WorkspaceIDs, v)
	}
	if f := fields.ByName("workspace_ids"); f != nil && f.IsList() && f.Kind() == protoreflect.StringKind {
		l := r.Get(f).List()
		for i := 0; i < l.Len(); i++ {
			t.WorkspaceIDs = append(t.WorkspaceIDs, l.Get(i).String())
		}
	}
	return t
}

func authorize(ctx context.Context, method string, req any) error {
	p, ok := transport.PrincipalFrom(ctx)
	if !ok {
		return nil // the caller checked
	}
	acc, ok := MethodAccess[method]
	if !ok {
		return transport.PermissionDenied(transport.ReasonMethodNotAuthorized, "this method is not open to API keys")
	}
	t := TargetOf(req)
	if t.OrganizationID != "" && t.OrganizationID != p.OrganizationID {
		// The same answer whether or not the organization exists: nothing
		// about other organizations leaks.
		return transport.PermissionDenied(transport.ReasonOrganizationMismatch, "the API key belongs to another organization")
	}
	if acc.AllWorkspaces && !p.AllWorkspaces {
		return transport.PermissionDenied(transport.ReasonWorkspaceOutOfScope, "the API key is scoped to specific workspaces")
	}
	for _, ws := range t.WorkspaceIDs {
		if !p.InScope(ws) {
			return transport.OutOfScope()
		}
	}
	if acc.Permission == "" || acc.Deferred && len(t.WorkspaceIDs) == 0 {
		return nil
	}
	if len(t.WorkspaceIDs) == 0 {
		return transport.RequirePermission(ctx, p, "", acc.Permission)
	}
	for _, ws := range idUniq(t.WorkspaceIDs) {
		if err := transport.RequirePermission(ctx, p, ws, acc.Permission); err != nil {
			return err
		}
	}
	return nil
}

func idUniq(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
