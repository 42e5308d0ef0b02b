package store

import (
	"context"
	"time"
)

// BookConnection is a connection of a book in a workspace: the configuration
// and credentials a book needs to reach a system. The store keeps the
// descriptor (without credential values) and the sealed credentials as
// opaque bytes; the books package marshals and encrypts them. Name is unique
// in the workspace.
type BookConnection struct {
	OrganizationID string
	WorkspaceID    string
	ID             string
	BookName       string
	BookVersion    string
	Name           string
	// Descriptor is the marshalled prose.book.v1.BookConnectionDescriptor
	// with every credential value left out.
	Descriptor []byte
	// Secret is the credentials, encrypted (AES-GCM) by the caller; the
	// store never sees them in plain text.
	Secret     []byte
	CreateTime time.Time
	UpdateTime time.Time
}

// BookConnections stores the connections of workspaces. A workspace holds a
// bounded number of them (MaxConnectionsPerWorkspace), so the list is not
// paged.
type BookConnections interface {
	// CreateBookConnection inserts c (ID generated when empty).
	// ErrNotFound if the workspace does not exist; ErrAlreadyExists if the
	// workspace has a connection of c's name; ErrResourceExhausted when it
	// has MaxConnectionsPerWorkspace already.
	CreateBookConnection(ctx context.Context, c BookConnection) (BookConnection, error)
	// GetBookConnection: ErrNotFound if absent.
	GetBookConnection(ctx context.Context, organizationID, workspaceID, id string) (BookConnection, error)
	// ListBookConnections returns the connections of the workspace ordered by
	// id; none for an unknown workspace.
	ListBookConnections(ctx context.Context, organizationID, workspaceID string) ([]BookConnection, error)
	// UpdateBookConnection replaces the name, book version, descriptor and
	// secret of the connection of c's id and its update time (the book's
	// name stays: an upgrade moves a connection to another version).
	// ErrNotFound if absent; ErrAlreadyExists if another connection of the
	// workspace has c's name.
	UpdateBookConnection(ctx context.Context, c BookConnection) (BookConnection, error)
	// DeleteBookConnection: ErrNotFound if absent.
	DeleteBookConnection(ctx context.Context, organizationID, workspaceID, id string) error
	// RefreshBookConnection calls refresh with the connection as stored
	// while holding it: no other RefreshBookConnection of the same
	// connection runs meanwhile, in this process or in any other sharing
	// the database (PostgreSQL locks the row for the call; a SQLite
	// database has one process, which holds a lock of its own). When
	// refresh returns a connection, its descriptor and secret replace the
	// stored ones (update time set) before the hold ends; an error of
	// refresh comes back as it is and writes nothing. It returns the
	// connection as stored after. ErrNotFound if absent. refresh may take
	// as long as a call to another service: a caller bounds it with ctx.
	RefreshBookConnection(ctx context.Context, organizationID, workspaceID, id string,
		refresh func(ctx context.Context, c BookConnection) (*BookConnection, error)) (BookConnection, error)
	// RekeyBookConnections passes every connection of the store, in key
	// order and in batches, to reseal; where it returns a new secret
	// (changed), the row's secret is replaced (its update time stays). It
	// returns how many were replaced; an error of reseal stops it.
	RekeyBookConnections(ctx context.Context, reseal func(c BookConnection) (secret []byte, changed bool, err error)) (int, error)
}

// SecretKeys keeps the key that seals connection secrets when the operator
// gives none.
type SecretKeys interface {
	// EnsureSecretKey stores candidate as the database's secret key unless
	// one is stored already, and returns the stored key (the first one any
	// process stored: concurrent first starts agree).
	EnsureSecretKey(ctx context.Context, candidate []byte) ([]byte, error)
}

// Sealer seals and opens secrets (the server's keyring: AES-256-GCM under
// the first of its keys, opened with whichever sealed them). aad binds a
// sealed secret to its row, so one copied to another row does not open.
type Sealer interface {
	Seal(plain, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
	// Current reports whether sealed was sealed with the first key.
	Current(sealed []byte) bool
}

// SecretSealing keeps the secret columns of trigger instances (a webhook
// trigger's HMAC secret, a broker URL with its credentials) and outbound
// webhooks (their HMAC secret) sealed at rest. Callers read and write
// them plain: the store seals on write and opens on read.
type SecretSealing interface {
	// SetSealer seals the secrets written from now on with s and opens
	// the ones read with it. Without a sealer, secrets are written plain.
	SetSealer(s Sealer)
	// ResealSecrets seals every secret written plain (before sealing
	// existed) or with a key other than the sealer's first, and returns
	// how many it sealed. A secret no key opens fails it with
	// ErrSecretKey.
	ResealSecrets(ctx context.Context) (int, error)
}
