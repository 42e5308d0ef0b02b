package books

import (
	"context"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
)

// BookVersion returns a book version the workspace sees (built in or
// registered there) or ErrNotFound: a list of a book version's connections
// names a version that must exist.
func (c *Connections) BookVersion(ctx context.Context, ws Workspace, name, version string) (*bookv1.Book, error) {
	return c.reg.Book(ctx, ws, name, version)
}
