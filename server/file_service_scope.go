package server

import (
	"context"
	"fmt"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// Files and the key's workspace scope.
//
// A file belongs to a workspace (store.File.WorkspaceID: made with
// /v2/files for an agent_id, or by a key scoped to that one workspace) or
// to the organization as a whole (made by a key for all workspaces). Every
// file endpoint — metadata, download, signed URL minting, delete, and the
// uploads that make files — checks the file's workspace against the calling
// key as any workspace resource is checked: outside the key's scope is
// PERMISSION_DENIED WORKSPACE_OUT_OF_SCOPE, and the user's roles must grant
// the permission in that workspace. A file of the organization as a whole
// is outside the scope of every key scoped to specific workspaces. The
// FileService methods are Deferred in MethodAccess: the request names a
// file, not a workspace, so the handler checks once it has read the file.

// requireFile checks that the caller may use perm on file f.
func requireFile(ctx context.Context, f store.File, perm string) error {
	if p, ok := transport.PrincipalFrom(ctx); ok && f.WorkspaceID == "" && !p.AllWorkspaces {
		return transport.PermissionDenied(transport.ReasonWorkspaceOutOfScope,
			"the file belongs to the organization as a whole; a key scoped to specific workspaces cannot use it")
	}
	return transport.RequireWorkspace(ctx, f.WorkspaceID, perm)
}

// newFileWorkspace is the workspace of a file the caller makes without
// naming one (files:upload, files:generateUploadUrl, /v1/upload): none (the
// organization) for a key of all workspaces, the key's workspace for a key
// scoped to one; a key scoped to several cannot tell which and is refused.
// It checks perm (runs.create) in that workspace.
func newFileWorkspace(ctx context.Context, perm string) (string, error) {
	ws := ""
	if p, ok := transport.PrincipalFrom(ctx); ok && !p.AllWorkspaces {
		if len(p.WorkspaceIDs) != 1 {
			return "", transport.PermissionDenied(transport.ReasonWorkspaceOutOfScope, fmt.Sprintf(
				"the API key is scoped to %d workspaces, so a file made without a workspace cannot be placed: use a key scoped to one workspace, or POST /v2/files with agent_id",
				len(p.WorkspaceIDs)))
		}
		ws = p.WorkspaceIDs[0]
	}
	return ws, transport.RequireWorkspace(ctx, ws, perm)
}
