package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// ParseAutomationCode answers syntax errors with their spans and saves
// nothing, over HTTP and gRPC; it needs automations.write.
func TestParseAutomationCode(t *testing.T) {
	e := newTestEnv(t)
	path := "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/automations:parseCode"
	bearer := map[string]string{"Authorization": "Bearer " + e.Init.APIKey}
	bad := "the x is 1\nthe y is is 2\n"

	code, m, raw := e.DoHTTP(t, "POST", path, `{"code": "the output x is 1\n"}`, bearer)
	if code != 200 || len(m) != 0 {
		t.Errorf("good code over HTTP: %d %s", code, raw)
	}
	code, m, raw = e.DoHTTP(t, "POST", path, fmt.Sprintf(`{"code": %q}`, bad), bearer)
	errs, _ := m["errors"].([]any)
	if code != 200 || len(errs) != 1 {
		t.Fatalf("bad code over HTTP: %d %s", code, raw)
	}
	first, _ := errs[0].(map[string]any)
	loc, _ := first["location"].(map[string]any)
	if first["line"] != float64(2) || first["message"] == "" || loc["start_byte"] == nil {
		t.Errorf("error over HTTP: %s", raw)
	}

	client := platformv1.NewAutomationServiceClient(e.Conn)
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	res, err := client.ParseAutomationCode(ctx, &platformv1.ParseAutomationCodeRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, Code: bad})
	if err != nil || len(res.GetErrors()) != 1 {
		t.Fatalf("gRPC: %v %v", res, err)
	}
	x := res.GetErrors()[0]
	start, end := x.GetLocation().GetStartByte(), x.GetLocation().GetEndByte()
	if x.GetLine() != 2 || start < int64(len("the x is 1\n")) || end < start || end > int64(len(bad)) {
		t.Errorf("gRPC error %v", x)
	}
	if res.GetErrors()[0].GetMessage() != first["message"] {
		t.Errorf("HTTP and gRPC disagree: %q / %q", first["message"], x.GetMessage())
	}

	for name, tc := range map[string]struct {
		req  *platformv1.ParseAutomationCodeRequest
		key  string
		want codes.Code
	}{
		"too long":      {&platformv1.ParseAutomationCodeRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, Code: strings.Repeat("x", server.MaxParseCodeBytes+1)}, e.Init.APIKey, codes.InvalidArgument},
		"no workspace":  {&platformv1.ParseAutomationCodeRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: "nope"}, e.Init.APIKey, codes.NotFound},
		"read-only key": {&platformv1.ParseAutomationCodeRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, Code: "x"}, e.NewKey(t, testenv.KeySpec{Level: store.PermissionReadOnly}), codes.PermissionDenied},
	} {
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+tc.key))
		if _, err := client.ParseAutomationCode(ctx, tc.req); status.Code(err) != tc.want {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// Nothing was saved.
	page, err := e.Store.ListAutomations(context.Background(), store.ListAutomationsRequest{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("automations after parsing: %d %v", len(page.Items), err)
	}
}
