package server

import (
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	"github.com/proserun/prose/names"

	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
)

// Reasons of the identity services' errors.
const (
	ReasonOrganizationNotFound = errorsv1.ErrorReason_ERROR_REASON_ORGANIZATION_NOT_FOUND
	ReasonWorkspaceNotFound    = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_NOT_FOUND
	ReasonWorkspaceExists      = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_ALREADY_EXISTS
	ReasonUserNotFound         = errorsv1.ErrorReason_ERROR_REASON_USER_NOT_FOUND
	ReasonMemberNotFound       = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_USER_NOT_FOUND
	ReasonMemberExists         = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_USER_ALREADY_EXISTS
	ReasonInvitationNotFound   = errorsv1.ErrorReason_ERROR_REASON_INVITATION_NOT_FOUND
	ReasonInvitationExists     = errorsv1.ErrorReason_ERROR_REASON_INVITATION_ALREADY_EXISTS
	ReasonRoleNotFound         = errorsv1.ErrorReason_ERROR_REASON_ROLE_NOT_FOUND
	ReasonAPIKeyNotFound       = errorsv1.ErrorReason_ERROR_REASON_API_KEY_NOT_FOUND
	ReasonAPIKeyLimit          = errorsv1.ErrorReason_ERROR_REASON_API_KEY_LIMIT_REACHED
	ReasonInvalidOrderBy       = errorsv1.ErrorReason_ERROR_REASON_INVALID_ORDER_BY
	ReasonInvalidField         = errorsv1.ErrorReason_ERROR_REASON_INVALID_FIELD
	ReasonFailedPrecondition   = errorsv1.ErrorReason_ERROR_REASON_FAILED_PRECONDITION
	ReasonConflict             = errorsv1.ErrorReason_ERROR_REASON_CONFLICT
	ReasonStoreUnavailable     = errorsv1.ErrorReason_ERROR_REASON_STORE_UNAVAILABLE
	ReasonDatabaseUnavailable  = errorsv1.ErrorReason_ERROR_REASON_DATABASE_UNAVAILABLE
	ReasonRequestIDReused      = errorsv1.ErrorReason_ERROR_REASON_REQUEST_ID_REUSED
)

// storeStatus maps a store error to a status: ErrNotFound → NOT_FOUND with
// reason and resource name, ErrAlreadyExists → ALREADY_EXISTS (existsReason),
// ErrInvalidArgument → INVALID_ARGUMENT, ErrFailedPrecondition →
// FAILED_PRECONDITION, ErrConflict → ABORTED, ErrResourceExhausted →
// RESOURCE_EXHAUSTED; anything else stays an internal error (logged, never
// shown).
func storeStatus(err error, notFoundReason, existsReason transport.ErrorReason, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return transport.NotFound(notFoundReason, name)
	case errors.Is(err, store.ErrAlreadyExists):
		return transport.AlreadyExists(existsReason, name)
	case errors.Is(err, store.ErrInvalidArgument):
		return invalidFromStore(err)
	case errors.Is(err, store.ErrFailedPrecondition):
		return transport.FailedPrecondition(ReasonFailedPrecondition, withoutSentinel(err, store.ErrFailedPrecondition), nil)
	case errors.Is(err, store.ErrConflict):
		return transport.Aborted(ReasonConflict, "a concurrent change won; retry")
	case errors.Is(err, store.ErrResourceExhausted):
		return transport.ResourceExhausted(ReasonAPIKeyLimit, withoutSentinel(err, store.ErrResourceExhausted))
	}
	return err
}

// withoutSentinel is the store's message without the sentinel's words.
func withoutSentinel(err, sentinel error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, sentinel.Error()+": ")
	return s
}

// invalidFromStore maps a store INVALID_ARGUMENT to its status.
func invalidFromStore(err error) error {
	msg := withoutSentinel(err, store.ErrInvalidArgument)
	reason, field := ReasonInvalidField, ""
	switch {
	case strings.Contains(msg, "page_token"):
		reason, field = ReasonInvalidPageToken, "page_token"
	case strings.Contains(msg, "page_size"):
		reason, field = ReasonInvalidPageSize, "page_size"
	case strings.HasPrefix(msg, "filter"):
		reason, field = ReasonInvalidFilter, "filter"
	case strings.HasPrefix(msg, "order_by"):
		reason, field = ReasonInvalidOrderBy, "order_by"
	}
	if field == "" {
		return transport.InvalidArgument(reason, msg)
	}
	return transport.InvalidArgument(reason, msg, transport.Violation(field, msg))
}

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

var errStoreUnavailable = transport.NewError(codes.Unavailable, ReasonStoreUnavailable, "no store is configured").Err()
