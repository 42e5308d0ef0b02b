package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/backend"
)

// Target is the store a command works on: --database when set, else --data.
func Target(data, database string) string {
	if database != "" {
		return database
	}
	return data
}

// OpenStore opens and migrates the store at --data / --database.
func OpenStore(ctx context.Context, data, database string, opts ...store.Option) (store.Store, error) {
	return backend.Open(ctx, Target(data, database), opts...)
}

// OrganizationIDs lists up to limit organization ids, oldest first.
func OrganizationIDs(ctx context.Context, st store.Store, limit int) ([]string, error) {
	p, err := st.ListOrganizations(ctx, limit, "")
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(p.Items))
	for i, o := range p.Items {
		ids[i] = o.ID
	}
	return ids, nil
}

// InitResult is what init prints: resource names, the ids the next
// commands take, and the key's value.
type InitResult struct {
	Organization   string `json:"organization"`
	Workspace      string `json:"workspace"`
	User           string `json:"user"`
	APIKey         string `json:"api_key"`
	OrganizationID string `json:"organization_id"`
	WorkspaceID    string `json:"workspace_id"`
	UserID         string `json:"user_id"`
}

// InitOptions are what Bootstrap makes: the organization's title, its
// owner's e-mail, the first workspace's title and the key's lifetime (zero
// values: the defaults of withDefaults).
type InitOptions struct {
	Organization, Email, Workspace string
	Expires                        time.Duration
}

func (o InitOptions) withDefaults() InitOptions {
	if o.Organization == "" {
		o.Organization = "My organization"
	}
	if o.Email == "" {
		o.Email = "owner@localhost"
	}
	if o.Workspace == "" {
		o.Workspace = "Default"
	}
	if o.Expires == 0 {
		o.Expires = 365 * 24 * time.Hour
	}
	return o
}

// Bootstrap creates an organization, its owner (reusing the user with that
// e-mail if there is one), a first workspace the owner administers, and an
// API key of level All for every workspace.
func Bootstrap(ctx context.Context, st store.Store, o InitOptions) (InitResult, error) {
	o = o.withDefaults()
	org, err := st.CreateOrganization(ctx, store.Organization{DisplayName: o.Organization})
	if err != nil {
		return InitResult{}, fmt.Errorf("create organization: %w", err)
	}
	display, _, _ := strings.Cut(o.Email, "@")
	u, err := st.CreateUser(ctx, store.User{DisplayName: display, Email: o.Email})
	if errors.Is(err, store.ErrAlreadyExists) {
		u, err = st.GetUserByEmail(ctx, o.Email)
	}
	if err != nil {
		return InitResult{}, fmt.Errorf("create user: %w", err)
	}
	if _, err := st.AddOrganizationMember(ctx, org.ID, u.ID, []string{"owner"}); err != nil {
		return InitResult{}, fmt.Errorf("add owner: %w", err)
	}
	ws, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: org.ID, Title: o.Workspace, CreatorID: u.ID})
	if err != nil {
		return InitResult{}, fmt.Errorf("create workspace: %w", err)
	}
	if _, err := st.AddWorkspaceMember(ctx, org.ID, ws.ID, u.ID, []string{"workspace_admin"}); err != nil {
		return InitResult{}, fmt.Errorf("add workspace member: %w", err)
	}
	key, err := server.CreateKey(ctx, st, store.APIKey{
		OrganizationID: org.ID, UserID: u.ID, Name: "initial key",
		AllWorkspaces: true, PermissionLevel: store.PermissionAll,
	}, o.Expires, time.Now())
	if err != nil {
		return InitResult{}, fmt.Errorf("create API key: %w", err)
	}
	return InitResult{
		Organization:   names.Organization(org.ID),
		Workspace:      names.Workspace(org.ID, ws.ID),
		User:           names.User(u.ID),
		APIKey:         key.GetKey(),
		OrganizationID: org.ID, WorkspaceID: ws.ID, UserID: u.ID,
	}, nil
}

// PrintInit prints r as `prose init` does (one JSON object with asJSON).
// login, when set, is the command line that signs the client commands in
// with r's key (a whole one, with the server's address: it must work
// pasted as is); it is printed after the fields.
func PrintInit(w io.Writer, r InitResult, asJSON bool, login string) {
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "organization: %s\nworkspace:    %s\nuser:         %s\napi key:      %s\n", r.Organization, r.Workspace, r.User, r.APIKey)
	if login != "" {
		fmt.Fprintf(w, "Next: %s\n", login)
	}
	fmt.Fprintln(w, "The API key is shown once; keep it. Use it as Authorization: Bearer <key> (or x-api-key on /v1 and /v2).")
}

// LoginHint is the `prose login` command line of r's key and workspace
// against the server at address.
func LoginHint(address string, r InitResult) string {
	return fmt.Sprintf("prose login --address %s --api-key %s --workspace %s", address, r.APIKey, r.Workspace)
}
