package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// ConsoleSession is a signed-in session of the web console, or (Link) a
// one-time sign-in link. Only a SHA-256 of its secret token is stored
// (TokenHash, hex); the token itself lives in the browser's cookie or in
// the printed link.
type ConsoleSession struct {
	TokenHash string
	// Link marks a one-time sign-in link: it is taken (and deleted) by
	// TakeConsoleLink and never authenticates a request itself.
	Link           bool
	OrganizationID string
	UserID         string
	// APIKeyID is the API key the session was signed in with (its scope and
	// level then bound the session); "" for a session of a sign-in link.
	APIKeyID string
	// CSRFToken is the anti-forgery token every form of the session carries.
	CSRFToken  string
	CreateTime time.Time
	ExpireTime time.Time
}

// ConsoleSessions stores console sessions and sign-in links.
type ConsoleSessions interface {
	// CreateConsoleSession inserts s (CreateTime set by the store).
	// ErrNotFound if the user is not a member of the organization;
	// ErrAlreadyExists if the hash is taken; ErrInvalidArgument if the hash
	// or the expiry is missing.
	CreateConsoleSession(ctx context.Context, s ConsoleSession) (ConsoleSession, error)
	// GetConsoleSession returns the session (not a link) with that hash,
	// unless it has expired at now. ErrNotFound otherwise.
	GetConsoleSession(ctx context.Context, tokenHash string, now time.Time) (ConsoleSession, error)
	// TakeConsoleLink deletes the sign-in link with that hash and returns
	// it, unless it has expired at now: of concurrent takers exactly one
	// gets it. ErrNotFound otherwise.
	TakeConsoleLink(ctx context.Context, tokenHash string, now time.Time) (ConsoleSession, error)
	// DeleteConsoleSession deletes a session or link (sign-out).
	// ErrNotFound if absent.
	DeleteConsoleSession(ctx context.Context, tokenHash string) error
	// DeleteExpiredConsoleSessions deletes sessions and links expired at
	// now and returns how many.
	DeleteExpiredConsoleSessions(ctx context.Context, now time.Time) (int, error)
}

// ConsoleTokenHash is the stored form of a console session or link token:
// hex SHA-256.
func ConsoleTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
