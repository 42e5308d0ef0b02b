package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestSizeFlags: the sizes of store/limits.go are serve flags. Set below
// their defaults, a title, a description and an event over them are
// INVALID_ARGUMENT FIELD_TOO_LARGE naming the field (HTTP and gRPC), and a
// list page stops at the page budget with a next_page_token. Out-of-range
// values are refused at start, naming the flag.
func TestSizeFlags(t *testing.T) {
	e := newTestEnvWith(t, func(c *app.Config) {
		c.Sizes = store.Sizes{TitleBytes: 100, TextBytes: 20 << 10, EventBytes: 2 << 10, PageBytes: 64 << 10}
	})
	org := e.Init.OrganizationID
	wsPath := "/api/v1/organizations/" + org + "/workspaces"
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))

	// Titles: 100 bytes pass, 101 do not.
	e.API(t, "POST", wsPath, `{"title":`+testenv.JSONStr(strings.Repeat("t", 100))+`}`, 200)
	code, _, raw := e.DoHTTP(t, "POST", wsPath, `{"title":`+testenv.JSONStr(strings.Repeat("t", 101))+`}`, e.Bearer())
	if m := jsonMap(t, raw); code != http.StatusBadRequest || testenv.HTTPReason(m) != "FIELD_TOO_LARGE" || !strings.Contains(string(raw), "workspace.title") ||
		!strings.Contains(string(raw), "at most 100 bytes") {
		t.Errorf("HTTP title of 101 bytes: %d %.300s", code, raw)
	}
	_, err := platformv1.NewWorkspaceServiceClient(e.Conn).CreateWorkspace(ctx, &platformv1.CreateWorkspaceRequest{OrganizationId: org,
		Workspace: &platformv1.Workspace{Title: strings.Repeat("t", 101)}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !hasViolation(st, "workspace.title") {
		t.Errorf("gRPC title of 101 bytes: %v", err)
	}

	// Events: 2 KiB.
	f := e.awaitingRun(t)
	code, _, raw = e.DoHTTP(t, "POST", f.path(e), `{"user_message":{"content":`+testenv.JSONStr(strings.Repeat("e", 3000))+`}}`, e.Bearer())
	if code != http.StatusBadRequest || !strings.Contains(string(raw), "FIELD_TOO_LARGE") && !strings.Contains(string(raw), "EVENT_MESSAGE_TOO_LARGE") {
		t.Errorf("HTTP event of 3,000 bytes: %d %.300s", code, raw)
	}
	ao, ws, au, r := f.grpcThread(e)
	_, err = platformv1.NewEventServiceClient(e.Conn).CreateEvent(ctx, &platformv1.CreateEventRequest{OrganizationId: ao, WorkspaceId: ws, AutomationId: au, RunId: r, AgentId: "prose",
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: strings.Repeat("e", 3000)}}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("gRPC event of 3,000 bytes: %v", err)
	}

	// Pages: automations of ~20 KiB each, three to a 64 KiB page.
	for i := range 5 {
		e.API(t, "POST", e.AutomationsPath(), `{"display_name":"big `+fmt.Sprint(i)+`","english_code":"the output x is 1\n","description":`+
			testenv.JSONStr(strings.Repeat("d", 20<<10-100))+`}`, 200)
	}
	m := e.API(t, "GET", e.AutomationsPath()+"?page_size=50", "", 200)
	items, _ := m["automations"].([]any)
	if tok, _ := m["next_page_token"].(string); len(items) > 4 || tok == "" {
		t.Errorf("a page of 50 with a 64 KiB budget: %d items, token %q", len(items), tok)
	}
	lr, err := platformv1.NewAutomationServiceClient(e.Conn).ListAutomations(ctx, &platformv1.ListAutomationsRequest{OrganizationId: org, WorkspaceId: e.Init.WorkspaceID, PageSize: 50})
	if err != nil || len(lr.GetAutomations()) > 4 || lr.GetNextPageToken() == "" {
		t.Errorf("gRPC page of 50 with a 64 KiB budget: %d items, token %q, %v", len(lr.GetAutomations()), lr.GetNextPageToken(), err)
	}

	// Out of range: refused at start, naming the flag.
	for _, sz := range []store.Sizes{{TitleBytes: 10}, {PageBytes: 1 << 10}, {EventBytes: 64 << 20}, {CodeBytes: -1}} {
		cfg := testenv.Config(t)
		cfg.Sizes = sz
		if a, err := app.New(context.Background(), cfg, testenv.Discard(), io.Discard); err == nil || !strings.Contains(err.Error(), "must be between") {
			if a != nil {
				a.Close()
			}
			t.Errorf("sizes %+v: %v", sz, err)
		}
	}
}
