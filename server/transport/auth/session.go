package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// The web console calls the gRPC services in process, as the signed-in
// user of a console session. Its calls carry two metadata entries: the
// session token, and a secret made at random by this process and never
// sent anywhere else. A session token is honoured only beside that secret,
// so no outside client (gRPC on the public port, HTTP through the gateway,
// which forwards neither key) can present a session: one that tries is
// UNAUTHENTICATED.
const (
	consoleSessionMetadata = "x-prose-console-session"
	consoleSecretMetadata  = "x-prose-console-secret"
)

// consoleTrust holds the process's console secret.
type consoleTrust struct {
	once   sync.Once
	secret string
}

func (c *consoleTrust) get() string {
	c.once.Do(func() {
		b := make([]byte, 32)
		_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics instead)
		c.secret = base64.RawURLEncoding.EncodeToString(b)
	})
	return c.secret
}

// ConsoleContext returns ctx carrying the console session token as outgoing
// metadata, for a call on an in-process connection to this server. Never
// use it on a connection that leaves the process.
func (a *KeyAuth) ConsoleContext(ctx context.Context, sessionToken string) context.Context {
	return metadata.AppendToOutgoingContext(ctx,
		consoleSecretMetadata, a.console.get(), consoleSessionMetadata, sessionToken)
}

// Session returns the current console session of a token (not a sign-in
// link): store.ErrNotFound when there is none or it has expired. Sessions
// are cached as keys are (see KeyAuth): a sign-out moves the store's
// AuthGeneration on, so a deleted session is refused by the next call on
// every replica.
func (a *KeyAuth) Session(ctx context.Context, token string) (store.ConsoleSession, error) {
	return a.consoleSession(ctx, store.ConsoleTokenHash(token))
}

// KeyIdentity checks an API key as Authenticate does (format, secret,
// expiry) and returns its record; the console signs in with it. Errors are
// the UNAUTHENTICATED status errors of Authenticate.
func (a *KeyAuth) KeyIdentity(ctx context.Context, value string) (store.APIKey, error) {
	if len(value) > maxCredentialLength {
		return store.APIKey{}, transport.Unauthenticated(transport.ReasonAPIKeyInvalid, unauthenticatedMessage)
	}
	k, err := a.verifiedKey(ctx, value)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, apikey.ErrMalformed) {
		return store.APIKey{}, transport.Unauthenticated(transport.ReasonAPIKeyInvalid, unauthenticatedMessage)
	}
	if err != nil {
		return store.APIKey{}, err
	}
	if k.Expired(a.now()) {
		return store.APIKey{}, transport.Unauthenticated(transport.ReasonAPIKeyExpired, "the API key has expired")
	}
	return k, nil
}

// authenticateConsole authenticates a call carrying console session
// metadata (handled reports whether it did): the process's secret must be
// beside it, the session must be current, and a session signed in with an
// API key keeps that key's scope and level (and ends with the key). The
// caller then acts as the session's user with their roles.
func (a *KeyAuth) authenticateConsole(ctx context.Context, fullMethod string) (_ context.Context, handled bool, _ error) {
	secrets := metadata.ValueFromIncomingContext(ctx, consoleSecretMetadata)
	tokens := metadata.ValueFromIncomingContext(ctx, consoleSessionMetadata)
	if len(secrets) == 0 && len(tokens) == 0 {
		return nil, false, nil
	}
	refuse := transport.Unauthenticated(transport.ReasonSessionInvalid, "console sessions are only accepted from the console")
	if len(secrets) != 1 || len(tokens) != 1 || subtle.ConstantTimeCompare([]byte(secrets[0]), []byte(a.console.get())) != 1 {
		return nil, true, refuse
	}
	now := a.now()
	s, err := a.consoleSession(ctx, store.ConsoleTokenHash(tokens[0]))
	if errors.Is(err, store.ErrNotFound) {
		return nil, true, transport.Unauthenticated(transport.ReasonSessionInvalid, "the console session has ended: sign in again")
	}
	if err != nil {
		return nil, true, err
	}
	p := &transport.Principal{UserID: s.UserID, OrganizationID: s.OrganizationID, AllWorkspaces: true, Level: store.PermissionAll}
	if s.APIKeyID != "" {
		k, err := a.st.GetAPIKey(ctx, s.OrganizationID, s.APIKeyID)
		if errors.Is(err, store.ErrNotFound) || err == nil && k.Expired(now) {
			return nil, true, transport.Unauthenticated(transport.ReasonSessionInvalid, "the API key of the console session was revoked or has expired: sign in again")
		}
		if err != nil {
			return nil, true, err
		}
		p.KeyID, p.KeyPrefix = k.ID, k.Prefix
		p.AllWorkspaces, p.WorkspaceIDs, p.Level, p.Toggles = k.AllWorkspaces, k.WorkspaceIDs, k.PermissionLevel, k.Permissions
	}
	org, user := s.OrganizationID, s.UserID
	p.Permissions = func(ctx context.Context, ws string) ([]string, error) { return a.permissions(ctx, org, ws, user) }
	if err := methodAllowed(p, fullMethod); err != nil {
		return nil, true, err
	}
	return transport.ContextWithPrincipal(ctx, p), true, nil
}

// methodAllowed checks the caller's level against MethodAccess[fullMethod],
// as Authenticate does for keys.
func methodAllowed(p *transport.Principal, fullMethod string) error {
	acc, ok := MethodAccess[fullMethod]
	if !ok {
		return transport.PermissionDenied(transport.ReasonMethodNotAuthorized, "this method is not open to API keys")
	}
	if p.Level == store.PermissionReadOnly && acc.Write {
		return transport.PermissionDenied(transport.ReasonAPIKeyReadOnly, "the API key is read-only")
	}
	if !p.LevelAllows(acc.Permission, acc.Write) {
		return transport.NewError(codes.PermissionDenied, transport.ReasonAPIKeyPermissionOff,
			fmt.Sprintf("the API key does not have the permission %s", acc.Permission)).
			Meta("permission", acc.Permission).Err()
	}
	return nil
}

// ConsoleSessionTTL is how long a console session lasts by default.
const ConsoleSessionTTL = 12 * time.Hour
