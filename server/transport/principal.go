package transport

import (
	"github.com/proserun/prose/internal/logctx"

	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/store"
)

// MissingCredentialDescription is the message of a call without a credential.
const MissingCredentialDescription = "missing API key: send the header Authorization: Bearer <key> (or x-api-key: <key> on /v1 and /v2)"

// Principal is the authenticated caller: a user acting through one API key
// in one organization.
type Principal struct {
	UserID         string
	OrganizationID string
	KeyID          string
	KeyPrefix      string
	// AllWorkspaces, or only WorkspaceIDs.
	AllWorkspaces bool
	WorkspaceIDs  []string
	Level         store.PermissionLevel
	// Toggles of a restricted key.
	Toggles map[string]bool

	// Permissions are the user's role permissions in the organization and,
	// when workspaceID is set, that workspace, before the key's level
	// narrows them (the authenticator sets it; nil: no role check).
	Permissions func(ctx context.Context, workspaceID string) ([]string, error)
}

// InScope reports whether the key may address workspaceID.
func (p *Principal) InScope(workspaceID string) bool {
	return p.AllWorkspaces || slices.Contains(p.WorkspaceIDs, workspaceID)
}

// LevelAllows reports whether the key's permission level lets perm through
// (write says whether the call writes).
func (p *Principal) LevelAllows(perm string, write bool) bool {
	switch p.Level {
	case store.PermissionAll:
		return true
	case store.PermissionReadOnly:
		return !write
	case store.PermissionRestricted:
		return perm == "" || p.Toggles[perm]
	}
	return false
}

// Narrow keeps the permissions the key's level lets through.
func (p *Principal) Narrow(perms []string) []string {
	out := make([]string, 0, len(perms))
	for _, perm := range perms {
		switch p.Level {
		case store.PermissionAll:
		case store.PermissionReadOnly:
			if !IsReadPermission(perm) {
				continue
			}
		case store.PermissionRestricted:
			if !p.Toggles[perm] {
				continue
			}
		default:
			continue
		}
		out = append(out, perm)
	}
	return out
}

// EffectivePermissions returns the permissions the caller has in the
// organization and, when workspaceID is set, that workspace: the union of
// their roles' permissions narrowed by the key's level.
func (p *Principal) EffectivePermissions(ctx context.Context, workspaceID string) ([]string, error) {
	if p.Permissions == nil {
		return nil, nil
	}
	perms, err := p.Permissions(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	return p.Narrow(perms), nil
}

type principalKey struct{}

// PrincipalFrom returns the authenticated caller of ctx, if any.
func PrincipalFrom(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}

// ContextWithPrincipal returns ctx carrying p. The call's log lines name
// p's organization from now on (also the lines of the entries outside,
// through logctx.Set).
func ContextWithPrincipal(ctx context.Context, p *Principal) context.Context {
	if p != nil {
		ctx = logctx.Set(ctx, logctx.Organization, p.OrganizationID)
	}
	return context.WithValue(ctx, principalKey{}, p)
}

// RequireWorkspace checks that the caller may use perm in workspaceID: the
// workspace is in the key's scope (PERMISSION_DENIED
// WORKSPACE_OUT_OF_SCOPE), the key's level allows perm and their roles grant
// it (PERMISSION_DENIED PERMISSION_MISSING). Handlers of Deferred methods
// call it once they know the workspace. Without a principal (only a server
// built with chain.Options.InsecureNoAuthorization lets such a call reach a
// handler) it allows everything.
func RequireWorkspace(ctx context.Context, workspaceID, perm string) error {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return nil
	}
	if workspaceID != "" && !p.InScope(workspaceID) {
		return OutOfScope()
	}
	if !p.LevelAllows(perm, !IsReadPermission(perm)) {
		return NewError(codes.PermissionDenied, ReasonAPIKeyPermissionOff,
			fmt.Sprintf("the API key does not have the permission %s", perm)).Meta("permission", perm).Err()
	}
	return RequirePermission(ctx, p, workspaceID, perm)
}

// OutOfScope is the refusal of a workspace outside the key's scope.
func OutOfScope() error {
	return PermissionDenied(ReasonWorkspaceOutOfScope, "the API key is not scoped to this workspace")
}

// RequirePermission checks that p's roles grant perm in workspaceID (the
// organization when ""): PERMISSION_DENIED PERMISSION_MISSING otherwise.
// The key's level is not checked here.
func RequirePermission(ctx context.Context, p *Principal, workspaceID, perm string) error {
	if perm == "" {
		return nil
	}
	// The key's level was checked against the method already (Authenticate);
	// here the user's roles decide.
	if p.Permissions == nil {
		return nil
	}
	perms, err := p.Permissions(ctx, workspaceID)
	if err != nil {
		return err
	}
	if !slices.Contains(perms, perm) {
		return NewError(codes.PermissionDenied, ReasonPermissionMissing,
			fmt.Sprintf("the caller lacks the permission %s", perm)).Meta("permission", perm).Err()
	}
	return nil
}

// IsReadPermission reports whether a permission only reads ("x.get",
// "x.list"). A read-only key keeps only these.
func IsReadPermission(p string) bool {
	return strings.HasSuffix(p, ".get") || strings.HasSuffix(p, ".list")
}
