package server_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/testenv"
)

// The protos' protovalidate constraints ((buf.validate.field), here
// page_size >= 0 on every list request of the platform API) are enforced
// by the validation entry, over both transports, as INVALID_ARGUMENT
// INVALID_FIELD naming the field and the rule.
func TestProtovalidateConstraints(t *testing.T) {
	e := newTestEnv(t)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		_, err := e.call(t, tr, runSvc+"ListRuns", &platformv1.ListRunsRequest{
			OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: "-", PageSize: -3})
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "page_size") || !strings.Contains(st.Message(), "greater than or equal to 0") {
			t.Fatalf("ListRuns with page_size -3: %v", err)
		}
	})
}

// callResult makes rpc with in over tr and reads the answer: code, reason
// and the first BadRequest field violation (the rpcStatus details over
// HTTP, the status details over gRPC).
func (e *testEnv) callResult(t *testing.T, tr apiTransport, rpc string, in proto.Message) xresult {
	t.Helper()
	if tr.grpc {
		_, err := e.DoGRPC(t, rpc, in, metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
		if err == nil {
			return xresult{code: codes.OK}
		}
		return grpcError(err)
	}
	method, path, body := httpRequestFor(t, testenv.MethodDescriptor(t, rpc), in.ProtoReflect())
	code, m, raw := e.DoHTTP(t, method, path, body, map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
	if code == 200 {
		return xresult{code: codes.OK, m: m, raw: string(raw)}
	}
	return httpError(t, code, m, raw)
}

// The request field rules once checked by hand in the services are
// protovalidate annotations now: each is answered, over HTTP and gRPC, as
// INVALID_ARGUMENT INVALID_FIELD with a BadRequest violation naming the
// field, before the service runs; a value within the rule passes.
func TestProtovalidateMovedRules(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "checked", "the output s is \"x\"\n", true)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	key := func(k *platformv1.ApiKey) *platformv1.CreateApiKeyRequest {
		if k.DisplayName == "" {
			k.DisplayName = "k"
		}
		if k.Expiration == 0 {
			k.Expiration = platformv1.ApiKeyExpiration_API_KEY_EXPIRATION_7_DAYS
		}
		return &platformv1.CreateApiKeyRequest{OrganizationId: org, ApiKey: k}
	}
	automation := func(id, title string) *platformv1.CreateAutomationRequest {
		return &platformv1.CreateAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id,
			Automation: &platformv1.Automation{DisplayName: title, EnglishCode: "the output s is \"x\"\n"}}
	}
	invoke := func(stage platformv1.AutomationStage, requestID string) *platformv1.InvokeAutomationRequest {
		return &platformv1.InvokeAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, Stage: stage, RequestId: requestID}
	}
	cases := []struct {
		name, rpc string
		in        proto.Message
		field     string // the violation's field; "" for a request that passes
		grpcOnly  bool   // over HTTP the gateway refuses it first (an unknown enum number in the query)
	}{
		{"key name blank", keySvc + "CreateApiKey", key(&platformv1.ApiKey{DisplayName: "   "}), "api_key.display_name", false},
		{"key name too long", keySvc + "CreateApiKey", key(&platformv1.ApiKey{DisplayName: strings.Repeat("n", 201)}), "api_key.display_name", false},
		{"key name 200", keySvc + "CreateApiKey", key(&platformv1.ApiKey{DisplayName: strings.Repeat("é", 200)}), "", false},
		{"key level unknown", keySvc + "CreateApiKey", key(&platformv1.ApiKey{PermissionLevel: 42}), "api_key.permission_level", false},
		{"key expiration unknown", keySvc + "CreateApiKey", key(&platformv1.ApiKey{Expiration: 42}), "api_key.expiration", false},
		{"key permission not resource.verb", keySvc + "CreateApiKey", key(&platformv1.ApiKey{
			PermissionLevel: platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_RESTRICTED, RestrictedPermissions: map[string]bool{"Runs Get": true}}), `api_key.restricted_permissions["Runs Get"]`, false},
		{"key permission resource.verb", keySvc + "CreateApiKey", key(&platformv1.ApiKey{
			PermissionLevel: platformv1.ApiKeyPermissionLevel_API_KEY_PERMISSION_LEVEL_RESTRICTED, RestrictedPermissions: map[string]bool{"runs.get": true}}), "", false},
		{"automation id digit first", autoSvc + "CreateAutomation", automation("9lives", "T"), "automation_id", false},
		{"automation id trailing dash", autoSvc + "CreateAutomation", automation("lives-", "T"), "automation_id", false},
		{"automation id too long", autoSvc + "CreateAutomation", automation("a"+strings.Repeat("b", 63), "T"), "automation_id", false},
		{"automation title blank", autoSvc + "CreateAutomation", automation("blank-title", " \t"), "automation.display_name", false},
		{"automation id fits", autoSvc + "CreateAutomation", automation("a"+strings.Repeat("b", 62), "T"), "", false},
		{"query stage unknown", autoSvc + "QueryAutomation", &platformv1.QueryAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, Stage: 9}, "stage", true},
		{"invoke stage unknown", autoSvc + "InvokeAutomation", invoke(9, ""), "stage", false},
		{"invoke request id too long", autoSvc + "InvokeAutomation", invoke(platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED, strings.Repeat("r", 129)), "request_id", false},
		{"exceptions skip negative", excSvc + "ListExceptions", &platformv1.ListExceptionsRequest{OrganizationId: org, WorkspaceId: ws, Skip: -1}, "skip", false},
		{"exceptions skip zero", excSvc + "ListExceptions", &platformv1.ListExceptionsRequest{OrganizationId: org, WorkspaceId: ws}, "", false},
	}
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.grpcOnly && !tr.grpc {
					t.Skip("the gateway refuses an enum number its query does not define before the call")
				}
				if m, ok := c.in.(*platformv1.CreateAutomationRequest); ok && c.field == "" {
					m = proto.Clone(m).(*platformv1.CreateAutomationRequest)
					m.AutomationId = m.AutomationId[:len(m.AutomationId)-len(tr.name)] + tr.name
					c.in = m
				}
				r := e.callResult(t, tr, c.rpc, c.in)
				if c.field == "" {
					if r.code != codes.OK {
						t.Fatalf("refused: %v %s %s", r.code, r.reason, r.raw)
					}
					return
				}
				if r.code != codes.InvalidArgument || r.reason != "INVALID_FIELD" || r.violation != c.field {
					t.Fatalf("got %v %s violation %q, want INVALID_ARGUMENT INVALID_FIELD on %q\n%s", r.code, r.reason, r.violation, c.field, r.raw)
				}
			})
		}
	})
	t.Run("grpc stream", func(t *testing.T) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+e.Init.APIKey)
		stream, err := platformv1.NewEventServiceClient(e.Conn).StreamEvents(ctx, &platformv1.StreamEventsRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, RunId: "r", AgentId: "a", AfterOffset: -1})
		if err == nil {
			_, err = stream.Recv()
		}
		if r := grpcError(err); r.code != codes.InvalidArgument || r.reason != "INVALID_FIELD" || r.violation != "after_offset" {
			t.Fatalf("StreamEvents after_offset -1: %v %s %q", r.code, r.reason, r.violation)
		}
	})
}
