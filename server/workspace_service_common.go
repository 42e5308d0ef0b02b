package server

import (
	"github.com/proserun/prose/internal/names"

	"context"
	"errors"
	"regexp"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
)

// checkedPageSize applies the list rules (0 → 50, > 1000 → 1000, < 0 → INVALID_ARGUMENT).
func checkedPageSize(n int32) (int, error) {
	size, err := pagination.PageSize(n)
	if err != nil {
		return 0, invalidFromStore(err)
	}
	return size, nil
}

func timestampOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// resourceIDRE is an AIP-122 resource id: lowercase letter, then letters, digits
// and hyphens, at most 63 characters.
var resourceIDRE = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// idOf accepts an id or a resource name ending in it.
func idOf(s string) string { return names.ID(s) }

func callerPrincipal(ctx context.Context) (*transport.Principal, error) {
	p, ok := transport.PrincipalFrom(ctx)
	if !ok {
		return nil, transport.Unauthenticated(transport.ReasonAPIKeyMissing, transport.MissingCredentialDescription)
	}
	return p, nil
}

// idempotent runs create unless (org, method, requestID) already made a
// resource, in which case it returns get(recorded name). An empty request
// id always creates. When a concurrent retry recorded first, undo removes
// the duplicate and the first resource is returned.
func idempotent[T any](ctx context.Context, st store.Idempotency, org, method, requestID string,
	create func() (T, string, error), get func(name string) (T, error), undo func(T) error,
) (T, error) {
	var zero T
	if requestID == "" {
		v, _, err := create()
		return v, err
	}
	if len(requestID) > 128 {
		return zero, transport.InvalidArgument(ReasonInvalidField, "request_id is longer than 128 characters",
			transport.Violation("request_id", "at most 128 characters"))
	}
	name, err := st.LookupRequest(ctx, org, method, requestID)
	if err == nil {
		return get(name)
	}
	if !errors.Is(err, store.ErrNotFound) {
		return zero, err
	}
	v, made, err := create()
	if err != nil {
		return zero, err
	}
	first, err := st.RecordRequest(ctx, org, method, requestID, made)
	if err != nil {
		return zero, err
	}
	if first != made {
		if undo != nil {
			_ = undo(v)
		}
		return get(first)
	}
	return v, nil
}

// scopedToCaller narrows a workspace filter to the workspaces of a caller whose
// key is limited to some (a typed condition on the workspace id; the page
// token is bound to it with the rest of the filter).
func scopedToCaller(ctx context.Context, f store.Filter) store.Filter {
	p, ok := transport.PrincipalFrom(ctx)
	if !ok || p.AllWorkspaces {
		return f
	}
	return store.And{store.In{Field: "id", Values: slices.Compact(slices.Sorted(slices.Values(p.WorkspaceIDs)))}, f}
}

func roleScopeProto(s store.RoleScope) platformv1.RoleScope {
	switch s {
	case store.ScopeOrganization:
		return platformv1.RoleScope_ROLE_SCOPE_ORGANIZATION
	case store.ScopeWorkspace:
		return platformv1.RoleScope_ROLE_SCOPE_WORKSPACE
	}
	return platformv1.RoleScope_ROLE_SCOPE_UNSPECIFIED
}

func userInfoProto(u store.User) *platformv1.UserBasicInfo {
	return &platformv1.UserBasicInfo{Name: names.User(u.ID), DisplayName: u.DisplayName, Email: u.Email}
}

func workspaceUserProto(m store.WorkspaceUser) *platformv1.WorkspaceUser {
	out := &platformv1.WorkspaceUser{User: userInfoProto(m.User)}
	for _, r := range m.Roles {
		out.Roles = append(out.Roles, &platformv1.RoleBasicInfo{Name: r.RoleID, RoleScope: roleScopeProto(r.Scope)})
	}
	return out
}

func roleProto(r store.Role) *platformv1.Role {
	return &platformv1.Role{Name: r.ID, Title: r.Title, Description: r.Description, Permissions: r.Permissions}
}

func invitationProto(inv store.Invitation) *platformv1.UserInvitation {
	return &platformv1.UserInvitation{Email: inv.Email, InvitationId: inv.ID}
}
