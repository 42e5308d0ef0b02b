package server

import (
	"context"

	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

// WorkspaceGetter reads a workspace (store.Workspaces has it). The book and
// connection services keep their books in the registry, so they read the
// workspace through it: a list of an unknown workspace is NOT_FOUND, never
// the built-in books or an empty page.
type WorkspaceGetter interface {
	GetWorkspace(ctx context.Context, organizationID, id string) (store.Workspace, error)
}

// knownWorkspace answers NOT_FOUND WORKSPACE_NOT_FOUND for a workspace that
// does not exist. A service built without a getter (nil) checks nothing.
func knownWorkspace(ctx context.Context, st WorkspaceGetter, ws books.Workspace) error {
	if st == nil {
		return nil
	}
	if _, err := st.GetWorkspace(ctx, ws.OrganizationID, ws.WorkspaceID); err != nil {
		return storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(ws.OrganizationID, ws.WorkspaceID))
	}
	return nil
}
