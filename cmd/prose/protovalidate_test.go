package main

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// The protos' protovalidate constraints ((buf.validate.field), here
// page_size >= 0 on every list request of the platform API) are enforced
// by the validation entry, over both transports, as INVALID_ARGUMENT
// INVALID_FIELD naming the field and the rule.
func TestProtovalidateConstraints(t *testing.T) {
	e := newTestEnv(t)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		_, err := e.call(t, tr, runSvc+"ListRuns", &platformv1.ListRunsRequest{
			OrganizationId: e.init.orgID, WorkspaceId: e.init.workspaceID, AutomationId: "-", PageSize: -3})
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "page_size") || !strings.Contains(st.Message(), "greater than or equal to 0") {
			t.Fatalf("ListRuns with page_size -3: %v", err)
		}
	})
}
