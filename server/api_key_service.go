package server

import (
	"context"
	"fmt"
	"go.einride.tech/aip/fieldmask"
	"google.golang.org/grpc/codes"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// MaxAPIKeysPerOrganization is the seeds' limit.
const MaxAPIKeysPerOrganization = 10

// ApiKeyService implements prose.platform.v1.ApiKeyService: a user manages
// their own keys in the organization of the key they call with. Another
// user's key answers NOT_FOUND. A key cannot make or widen a key beyond its
// own scope and level (PERMISSION_DENIED).
type ApiKeyService struct { //nolint:revive,staticcheck // named after the generated service
	platformv1.UnimplementedApiKeyServiceServer
	st  store.Store
	now func() time.Time
}

// NewApiKeyService returns the API key service; now may be nil (time.Now).
func NewApiKeyService(st store.Store, now func() time.Time) *ApiKeyService { //nolint:revive,staticcheck // named after the generated service
	if now == nil {
		now = time.Now
	}
	return &ApiKeyService{st: st, now: now}
}

// ExpirationDuration maps the proto expiration choices.
func ExpirationDuration(e platformv1.ApiKeyExpiration) (time.Duration, bool) {
	m := map[platformv1.ApiKeyExpiration]string{
		platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_7_DAYS:   "7d",
		platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_30_DAYS:  "30d",
		platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_60_DAYS:  "60d",
		platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_90_DAYS:  "90d",
		platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_180_DAYS: "180d",
		platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_1_YEAR:   "1y",
	}
	s, ok := m[e]
	if !ok {
		return 0, false
	}
	d, err := apikey.ParseExpiration(s)
	return d, err == nil
}

func levelFromProto(l platformv1.ApiKeyPermissionLevel) (store.PermissionLevel, bool) {
	switch l {
	case platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_UNSPECIFIED, platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_ALL:
		return store.PermissionAll, true
	case platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_READ_ONLY:
		return store.PermissionReadOnly, true
	case platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_RESTRICTED:
		return store.PermissionRestricted, true
	}
	return "", false
}

func levelToProto(l store.PermissionLevel) platformv1.ApiKeyPermissionLevel {
	switch l {
	case store.PermissionAll:
		return platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_ALL
	case store.PermissionReadOnly:
		return platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_READ_ONLY
	case store.PermissionRestricted:
		return platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_RESTRICTED
	}
	return platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_UNSPECIFIED
}

// APIKeyProto renders a stored key (never its value or hash).
func APIKeyProto(k store.APIKey) *platformv1.ApiKey {
	out := &platformv1.ApiKey{
		Name:            names.APIKey(k.OrganizationID, k.ID),
		DisplayName:     k.Name,
		KeyPrefix:       k.Prefix,
		User:            names.User(k.UserID),
		PermissionLevel: levelToProto(k.PermissionLevel),
		CreateTime:      timestampOrNil(k.CreateTime),
		ExpireTime:      timestampOrNil(k.ExpireTime),
		LastUseTime:     timestampOrNil(k.LastUsedTime),
	}
	if !k.AllWorkspaces {
		out.WorkspaceIds = slices.Clone(k.WorkspaceIDs)
	}
	if k.PermissionLevel == store.PermissionRestricted && len(k.Permissions) > 0 {
		out.RestrictedPermissions = make(map[string]bool, len(k.Permissions))
		for p, on := range k.Permissions {
			out.RestrictedPermissions[p] = on
		}
	}
	return out
}

// keyScope reads the workspace_ids of a key being created or updated:
// every id must name a workspace of org; none means all workspaces.
func (s *ApiKeyService) keyScope(ctx context.Context, org string, in *platformv1.ApiKey, k *store.APIKey) error {
	ids := make([]string, 0, len(in.GetWorkspaceIds()))
	for i, id := range in.GetWorkspaceIds() {
		id = idOf(id)
		if _, err := s.st.GetWorkspace(ctx, org, id); err != nil {
			if isOneOf(err, store.ErrNotFound) {
				return transport.InvalidArgument(ReasonWorkspaceNotFound, fmt.Sprintf("workspace %q does not exist", id),
					transport.Violation(fmt.Sprintf("api_key.workspace_ids[%d]", i), "no such workspace"))
			}
			return err
		}
		ids = append(ids, id)
	}
	k.AllWorkspaces = len(ids) == 0
	k.WorkspaceIDs = slices.Compact(slices.Sorted(slices.Values(ids)))
	return nil
}

// keyLevel reads the permission_level of a key: a defined value (its
// protovalidate constraint, enum.defined_only).
func keyLevel(in *platformv1.ApiKey, k *store.APIKey) {
	k.PermissionLevel, _ = levelFromProto(in.GetPermissionLevel())
}

// keyToggles reads the restricted_permissions of a key (those switched on),
// each "<resource>.<verb>" (its protovalidate constraint on the map's keys).
func keyToggles(in *platformv1.ApiKey, k *store.APIKey) {
	k.Permissions = map[string]bool{}
	for perm, on := range in.GetRestrictedPermissions() {
		if on {
			k.Permissions[perm] = true
		}
	}
}

// keyWithin checks that key k, as it will be stored, stays inside the
// calling key p (nil: no caller, e.g. the CLI): its workspaces inside the
// caller's scope, its level no higher than the caller's and, for a
// restricted caller, its permissions among the caller's toggles. A key can
// never make or shape a key that could do more than itself.
func keyWithin(p *transport.Principal, k store.APIKey) error {
	if p == nil {
		return nil
	}
	if !p.AllWorkspaces {
		if k.AllWorkspaces {
			return transport.PermissionDenied(transport.ReasonWorkspaceOutOfScope, "a key scoped to specific workspaces cannot make or change a key for all workspaces")
		}
		for _, id := range k.WorkspaceIDs {
			if !p.InScope(id) {
				return transport.PermissionDenied(transport.ReasonWorkspaceOutOfScope, fmt.Sprintf("workspace %q is outside the calling key's scope", id))
			}
		}
	}
	switch p.Level {
	case store.PermissionAll:
	case store.PermissionRestricted:
		if k.PermissionLevel != store.PermissionRestricted {
			return transport.PermissionDenied(transport.ReasonAPIKeyPermissionOff, "a restricted key can only make or change restricted keys")
		}
		for perm, on := range k.Permissions {
			if on && !p.Toggles[perm] {
				return transport.NewError(codes.PermissionDenied, transport.ReasonAPIKeyPermissionOff, fmt.Sprintf("the calling key does not have %s", perm)).Meta("permission", perm).Err()
			}
		}
	default:
		return transport.PermissionDenied(transport.ReasonAPIKeyReadOnly, "the API key is read-only")
	}
	return nil
}

// CreateApiKey creates a key for the caller and returns its value once.
// A retry with the same request_id returns the same key without its value.
func (s *ApiKeyService) CreateApiKey(ctx context.Context, req *platformv1.CreateApiKeyRequest) (*platformv1.CreateApiKeyResponse, error) { //nolint:revive,staticcheck // the name of the generated ApiKeyServiceServer method
	p, err := callerPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	org := req.GetOrganizationId()
	in := req.GetApiKey()
	// display_name: given (field_behavior REQUIRED), at most 200
	// characters and not blank (its protovalidate constraints).
	name := strings.TrimSpace(in.GetDisplayName())
	d, ok := ExpirationDuration(in.GetExpiration())
	if !ok {
		return nil, transport.InvalidArgument(ReasonInvalidField, "api_key.expiration must be one of 7, 30, 60, 90, 180 days or 1 year",
			transport.Violation("api_key.expiration", "required"))
	}
	k := store.APIKey{OrganizationID: org, UserID: p.UserID, Name: name}
	if err := s.keyScope(ctx, org, in, &k); err != nil {
		return nil, err
	}
	keyLevel(in, &k)
	k.Permissions = nil
	if k.PermissionLevel == store.PermissionRestricted {
		keyToggles(in, &k)
	}
	if err := keyWithin(p, k); err != nil {
		return nil, err
	}
	create := func() (*platformv1.CreateApiKeyResponse, string, error) {
		resp, err := CreateKey(ctx, s.st, k, d, s.now())
		if err != nil {
			return nil, "", err
		}
		return resp, idOf(resp.GetApiKey().GetName()), nil
	}
	get := func(id string) (*platformv1.CreateApiKeyResponse, error) {
		got, err := s.st.GetAPIKey(ctx, org, id)
		if err != nil {
			return nil, storeStatus(err, ReasonAPIKeyNotFound, ReasonAPIKeyNotFound, names.APIKey(org, id))
		}
		return &platformv1.CreateApiKeyResponse{ApiKey: APIKeyProto(got)}, nil
	}
	undo := func(r *platformv1.CreateApiKeyResponse) error {
		return s.st.DeleteAPIKey(ctx, org, idOf(r.GetApiKey().GetName()))
	}
	return idempotent(ctx, s.st, org, "CreateApiKey/"+p.UserID, req.GetRequestId(), create, get, undo)
}

// CreateKey generates a key value for k (its organization, user, name,
// scope and level set), stores it with at most MaxAPIKeysPerOrganization
// unexpired keys in the organization, and returns it with its value. The
// CLI uses it too.
func CreateKey(ctx context.Context, st store.APIKeys, k store.APIKey, lifetime time.Duration, now time.Time) (*platformv1.CreateApiKeyResponse, error) {
	gen := apikey.Generate()
	k.Prefix, k.SecretHash = gen.Prefix, gen.Hash
	if lifetime > 0 {
		k.ExpireTime = apikey.ExpireTime(now, lifetime)
	}
	if !k.PermissionLevel.Valid() {
		k.PermissionLevel = store.PermissionAll
	}
	made, err := st.CreateAPIKey(ctx, k, MaxAPIKeysPerOrganization)
	if err != nil {
		if isOneOf(err, store.ErrResourceExhausted) {
			return nil, transport.ResourceExhausted(ReasonAPIKeyLimit, fmt.Sprintf("an organization has at most %d API keys; delete one first", MaxAPIKeysPerOrganization))
		}
		return nil, storeStatus(err, ReasonOrganizationNotFound, ReasonAPIKeyNotFound, names.Organization(k.OrganizationID))
	}
	return &platformv1.CreateApiKeyResponse{ApiKey: APIKeyProto(made), Key: gen.Value}, nil
}

// ownKey gets a key of the caller; another user's key is NOT_FOUND.
func (s *ApiKeyService) ownKey(ctx context.Context, org, id string) (store.APIKey, *transport.Principal, error) {
	p, err := callerPrincipal(ctx)
	if err != nil {
		return store.APIKey{}, nil, err
	}
	k, err := s.st.GetAPIKey(ctx, org, id)
	if err == nil && k.UserID != p.UserID {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.APIKey{}, nil, storeStatus(err, ReasonAPIKeyNotFound, ReasonAPIKeyNotFound, names.APIKey(org, id))
	}
	return k, p, nil
}

// ListApiKeys lists the caller's keys in the organization, newest first.
func (s *ApiKeyService) ListApiKeys(ctx context.Context, req *platformv1.ListApiKeysRequest) (*platformv1.ListApiKeysResponse, error) { //nolint:revive,staticcheck // the name of the generated ApiKeyServiceServer method
	p, err := callerPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	lp, err := parsePage(req)
	if err != nil {
		return nil, err
	}
	page, err := s.st.ListAPIKeys(ctx, req.GetOrganizationId(), p.UserID, lp.Size, lp.Token)
	if err != nil {
		return nil, orgStatus(err, req.GetOrganizationId())
	}
	out := &platformv1.ListApiKeysResponse{NextPageToken: page.NextPageToken}
	out.ApiKeys = mapAll(page.Items, APIKeyProto)
	return out, nil
}

// GetApiKey gets one of the caller's keys.
func (s *ApiKeyService) GetApiKey(ctx context.Context, req *platformv1.GetApiKeyRequest) (*platformv1.ApiKey, error) { //nolint:revive,staticcheck // the name of the generated ApiKeyServiceServer method
	k, _, err := s.ownKey(ctx, req.GetOrganizationId(), req.GetApiKeyId())
	if err != nil {
		return nil, err
	}
	return APIKeyProto(k), nil
}

// UpdateApiKey changes a key's name, scope or permissions: the fields of
// update_mask (all four when it is empty) are applied to the stored key,
// and the key as it will be is checked against the calling key
// (keyWithin), whatever the body holds outside the mask. expiration is set
// at creation only.
func (s *ApiKeyService) UpdateApiKey(ctx context.Context, req *platformv1.UpdateApiKeyRequest) (*platformv1.ApiKey, error) { //nolint:revive,staticcheck // the name of the generated ApiKeyServiceServer method
	org, id := req.GetOrganizationId(), req.GetApiKeyId()
	k, p, err := s.ownKey(ctx, org, id)
	if err != nil {
		return nil, err
	}
	if err := checkUpdateMask(req.GetUpdateMask(), &platformv1.ApiKey{}); err != nil {
		return nil, err
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 || fieldmask.IsFullReplacement(req.GetUpdateMask()) {
		paths = []string{"display_name", "workspace_ids", "permission_level", "restricted_permissions"}
	}
	in := req.GetApiKey()
	var mask []string
	for _, path := range paths {
		var err error
		switch path {
		case "display_name":
			k.Name = strings.TrimSpace(in.GetDisplayName())
			mask = append(mask, "name")
		case "workspace_ids":
			err = s.keyScope(ctx, org, in, &k)
			mask = append(mask, "scope")
		case "permission_level":
			keyLevel(in, &k)
			mask = append(mask, "permissions")
		case "restricted_permissions":
			keyToggles(in, &k)
			mask = append(mask, "permissions")
		case "expiration", "expire_time":
			msg := fmt.Sprintf("update_mask: %s is set when the key is created and cannot be changed; make a new key", path)
			return nil, transport.InvalidArgument(ReasonInvalidField, msg, transport.Violation("update_mask", msg))
		default:
			return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("update_mask: %q cannot be updated", path), transport.Violation("update_mask", "unknown path "+path))
		}
		if err != nil {
			return nil, err
		}
	}
	mask = slices.Compact(slices.Sorted(slices.Values(mask)))
	if k.PermissionLevel != store.PermissionRestricted {
		k.Permissions = nil
	}
	if err := keyWithin(p, k); err != nil {
		return nil, err
	}
	got, err := s.st.UpdateAPIKey(ctx, k, mask)
	if err != nil {
		return nil, storeStatus(err, ReasonAPIKeyNotFound, ReasonAPIKeyNotFound, names.APIKey(org, id))
	}
	return APIKeyProto(got), nil
}

// DeleteApiKey deletes one of the caller's keys; it stops working at once.
func (s *ApiKeyService) DeleteApiKey(ctx context.Context, req *platformv1.DeleteApiKeyRequest) (*emptypb.Empty, error) { //nolint:revive,staticcheck // the name of the generated ApiKeyServiceServer method
	org, id := req.GetOrganizationId(), req.GetApiKeyId()
	if _, _, err := s.ownKey(ctx, org, id); err != nil {
		return nil, err
	}
	if err := s.st.DeleteAPIKey(ctx, org, id); err != nil {
		return nil, storeStatus(err, ReasonAPIKeyNotFound, ReasonAPIKeyNotFound, names.APIKey(org, id))
	}
	return &emptypb.Empty{}, nil
}
