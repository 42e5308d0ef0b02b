package main

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
	"github.com/proserun/prose/store"
)

// TestSizeFlags: the sizes of store/limits.go are serve flags. Set below
// their defaults, a title, a description and an event over them are
// INVALID_ARGUMENT FIELD_TOO_LARGE naming the field (HTTP and gRPC), and a
// list page stops at the page budget with a next_page_token. Out-of-range
// values are refused at start, naming the flag.
func TestSizeFlags(t *testing.T) {
	e := newTestEnvWith(t, func(c *serveConfig) {
		c.sizes = store.Sizes{TitleBytes: 100, TextBytes: 20 << 10, EventBytes: 2 << 10, PageBytes: 64 << 10}
	})
	org := e.init.orgID
	wsPath := "/api/v1/organizations/" + org + "/workspaces"
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.init.APIKey))

	// Titles: 100 bytes pass, 101 do not.
	e.api(t, "POST", wsPath, `{"title":`+jsonStr(strings.Repeat("t", 100))+`}`, 200)
	code, _, raw := e.doHTTP(t, "POST", wsPath, `{"title":`+jsonStr(strings.Repeat("t", 101))+`}`, e.bearer())
	if m := jsonMap(t, raw); code != http.StatusBadRequest || httpReason(m) != "FIELD_TOO_LARGE" || !strings.Contains(string(raw), "workspace.title") ||
		!strings.Contains(string(raw), "at most 100 bytes") {
		t.Errorf("HTTP title of 101 bytes: %d %.300s", code, raw)
	}
	_, err := platformv1.NewWorkspaceServiceClient(e.conn).CreateWorkspace(ctx, &platformv1.CreateWorkspaceRequest{OrganizationId: org,
		Workspace: &platformv1.Workspace{Title: strings.Repeat("t", 101)}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !hasViolation(st, "workspace.title") {
		t.Errorf("gRPC title of 101 bytes: %v", err)
	}

	// Events: 2 KiB.
	f := e.awaitingRun(t)
	code, _, raw = e.doHTTP(t, "POST", f.path(e), `{"user_message":{"content":`+jsonStr(strings.Repeat("e", 3000))+`}}`, e.bearer())
	if code != http.StatusBadRequest || !strings.Contains(string(raw), "FIELD_TOO_LARGE") && !strings.Contains(string(raw), "EVENT_MESSAGE_TOO_LARGE") {
		t.Errorf("HTTP event of 3,000 bytes: %d %.300s", code, raw)
	}
	ao, ws, au, r := f.grpcThread(e)
	_, err = platformv1.NewEventServiceClient(e.conn).CreateEvent(ctx, &platformv1.CreateEventRequest{OrganizationId: ao, WorkspaceId: ws, AutomationId: au, RunId: r, AgentId: "prose",
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: strings.Repeat("e", 3000)}}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("gRPC event of 3,000 bytes: %v", err)
	}

	// Pages: automations of ~20 KiB each, three to a 64 KiB page.
	for i := range 5 {
		e.api(t, "POST", e.automationsPath(), `{"display_name":"big `+fmt.Sprint(i)+`","english_code":"the output x is 1\n","description":`+
			jsonStr(strings.Repeat("d", 20<<10-100))+`}`, 200)
	}
	m := e.api(t, "GET", e.automationsPath()+"?page_size=50", "", 200)
	items, _ := m["automations"].([]any)
	if tok, _ := m["next_page_token"].(string); len(items) > 4 || tok == "" {
		t.Errorf("a page of 50 with a 64 KiB budget: %d items, token %q", len(items), tok)
	}
	lr, err := platformv1.NewAutomationServiceClient(e.conn).ListAutomations(ctx, &platformv1.ListAutomationsRequest{OrganizationId: org, WorkspaceId: e.init.workspaceID, PageSize: 50})
	if err != nil || len(lr.GetAutomations()) > 4 || lr.GetNextPageToken() == "" {
		t.Errorf("gRPC page of 50 with a 64 KiB budget: %d items, token %q, %v", len(lr.GetAutomations()), lr.GetNextPageToken(), err)
	}

	// Out of range: refused at start, naming the flag.
	for _, sz := range []store.Sizes{{TitleBytes: 10}, {PageBytes: 1 << 10}, {EventBytes: 64 << 20}, {CodeBytes: -1}} {
		cfg := testServeConfig(t)
		cfg.sizes = sz
		if a, err := newApp(context.Background(), cfg, slogDiscard(), io.Discard); err == nil || !strings.Contains(err.Error(), "must be between") {
			if a != nil {
				a.Close()
			}
			t.Errorf("sizes %+v: %v", sz, err)
		}
	}
	var stderr strings.Builder
	if code := serveCmd(context.Background(), []string{"--data", t.TempDir(), "--max-title-bytes", "1MiB"}, nil, io.Discard, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "--max-title-bytes 1048576: must be between 64 and 65536 bytes") {
		t.Errorf("serve --max-title-bytes 1MiB: %d %s", code, stderr.String())
	}
}
