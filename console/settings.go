package console

import (
	"net/http"
	"net/url"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/names"
)

type settingsData struct {
	pageData
	Keys      []*platformv1.ApiKey
	KeysError string
	NewKey    string
	Members   []*platformv1.WorkspaceUser
	Me        string
}

var keyLevels = map[string]platformv1.ApiKeyPermissionLevel{
	"all":       platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_ALL,
	"read_only": platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_READ_ONLY,
}

var keyExpirations = map[string]platformv1.ApiKeyExpiration{
	"7d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_7_DAYS, "30d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_30_DAYS,
	"60d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_60_DAYS, "90d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_90_DAYS,
	"180d": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_180_DAYS, "1y": platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_1_YEAR,
}

// settings shows the organization's API keys and the workspace's members.
func (c *Console) settings(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showSettings(w, r, s, http.StatusOK, "", "")
}

func (c *Console) showSettings(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg, newKey string) {
	base, err := c.basics(r, s, "Settings")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	d := &settingsData{pageData: base, NewKey: newKey, Me: names.User(s.UserID)}
	keys, err := c.apiKeys.ListApiKeys(s.ctx, &platformv1.ListApiKeysRequest{OrganizationId: s.OrganizationID, PageSize: 100})
	switch status.Code(err) {
	case codes.OK:
		d.Keys = keys.GetApiKeys()
	case codes.PermissionDenied:
		d.KeysError = "You cannot manage the organization's API keys."
	default:
		c.grpcFail(w, r, s, err)
		return
	}
	if m, err := c.workspaces.ListWorkspaceUsers(s.ctx, &platformv1.ListWorkspaceUsersRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, PageSize: 100}); err == nil {
		d.Members = m.GetUsers()
	}
	c.render(w, r, code, "settings", d)
}

// keyAction creates or revokes an API key.
func (c *Console) keyAction(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	switch r.PathValue("action") {
	case "create":
		level, ok := keyLevels[r.PostFormValue("level")]
		exp, ok2 := keyExpirations[r.PostFormValue("expires")]
		if !ok || !ok2 {
			c.showSettings(w, r, s, http.StatusBadRequest, "Choose a permission level and an expiry.", "")
			return
		}
		res, err := c.apiKeys.CreateApiKey(s.ctx, &platformv1.CreateApiKeyRequest{OrganizationId: s.OrganizationID, ApiKey: &platformv1.ApiKey{
			DisplayName: r.PostFormValue("display_name"), PermissionLevel: level, Expiration: exp,
		}})
		if err != nil {
			if st := status.Convert(err); st.Code() == codes.InvalidArgument || st.Code() == codes.ResourceExhausted {
				c.showSettings(w, r, s, http.StatusBadRequest, st.Message(), "")
				return
			}
			c.grpcFail(w, r, s, err)
			return
		}
		// The value is shown once, on this answer (never stored by the console).
		c.showSettings(w, r, s, http.StatusOK, "", res.GetKey())
	case "revoke":
		id := names.ID(r.PostFormValue("key"))
		if _, err := c.apiKeys.DeleteApiKey(s.ctx, &platformv1.DeleteApiKeyRequest{OrganizationId: s.OrganizationID, ApiKeyId: id}); err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/settings", http.StatusSeeOther)
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
	}
}
