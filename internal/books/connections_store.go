package books

import (
	"context"
	"time"
)

// ConnectionRecord is a connection as its ConnectionStore keeps it: the
// descriptor (without credential values) and the sealed credentials as
// opaque bytes, which Connections marshals and seals. Name is unique in the
// workspace.
type ConnectionRecord struct {
	Workspace   Workspace
	ID          string
	BookName    string
	BookVersion string
	Name        string
	// Descriptor is the marshalled prose.book.v1.BookConnectionDescriptor
	// with every credential value left out.
	Descriptor []byte
	// Secret is the credentials, sealed by the Keyring; the store never sees
	// them in plain text.
	Secret     []byte
	CreateTime time.Time
	UpdateTime time.Time
}

// ConnectionStore keeps the connections of workspaces for Connections. Its
// errors are, for errors.Is, the sentinels of this package: ErrNotFound,
// ErrAlreadyExists, ErrInvalidArgument and ErrResourceExhausted. The
// database implements it in cmd/prose, so that books depends on no store.
type ConnectionStore interface {
	// NewConnectionID returns the id of a connection about to be created:
	// it is chosen before CreateConnection because the credentials' seal
	// binds it.
	NewConnectionID() string
	// CreateConnection inserts r (its ID is set). ErrNotFound if the
	// workspace does not exist; ErrAlreadyExists if the workspace has a
	// connection of r's name; ErrResourceExhausted when the workspace has as
	// many connections as it may.
	CreateConnection(ctx context.Context, r ConnectionRecord) (ConnectionRecord, error)
	// GetConnection: ErrNotFound if absent.
	GetConnection(ctx context.Context, ws Workspace, id string) (ConnectionRecord, error)
	// ListConnections returns the connections of ws ordered by id; none for
	// an unknown workspace.
	ListConnections(ctx context.Context, ws Workspace) ([]ConnectionRecord, error)
	// UpdateConnection replaces the name, book version, descriptor and
	// secret of the connection of r's id and its update time (the book name
	// stays).
	// ErrNotFound if absent; ErrAlreadyExists if another connection of the
	// workspace has r's name.
	UpdateConnection(ctx context.Context, r ConnectionRecord) (ConnectionRecord, error)
	// DeleteConnection: ErrNotFound if absent.
	DeleteConnection(ctx context.Context, ws Workspace, id string) error
	// RefreshConnection calls refresh with the connection as stored while
	// holding it: no other RefreshConnection of the same connection runs
	// meanwhile, in this process or in another sharing the store. When
	// refresh returns a record, its descriptor and secret replace the
	// stored ones before the hold ends; an error of refresh comes back as
	// it is and writes nothing. It returns the record as stored after.
	// ErrNotFound if absent.
	RefreshConnection(ctx context.Context, ws Workspace, id string,
		refresh func(ctx context.Context, r ConnectionRecord) (*ConnectionRecord, error)) (ConnectionRecord, error)
	// RekeyConnections passes every stored connection, of every workspace,
	// to reseal; where it returns a new secret (changed), the record's
	// secret is replaced (its update time stays). It returns how many were
	// replaced; an error of reseal stops it.
	RekeyConnections(ctx context.Context, reseal func(r ConnectionRecord) (secret []byte, changed bool, err error)) (int, error)
}
