package validate

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// A partial update (AIP-134) needs only the required fields its mask names.
func TestValidatePartialUpdate(t *testing.T) {
	base := func(mask ...string) *platformv1.UpdateAutomationRequest {
		r := &platformv1.UpdateAutomationRequest{OrganizationId: "o", WorkspaceId: "w", AutomationId: "a",
			Automation: &platformv1.Automation{Description: "d"}}
		if mask != nil {
			r.UpdateMask = &fieldmaskpb.FieldMask{Paths: mask}
		}
		return r
	}
	for _, tc := range []struct {
		name string
		req  *platformv1.UpdateAutomationRequest
		ok   bool
	}{
		{"mask without the required field", base("description"), true},
		{"mask naming the missing required field", base("display_name"), false},
		{"wildcard mask", base("*"), false},
		{"no mask: a full update", base(), false},
		{"resource missing", &platformv1.UpdateAutomationRequest{OrganizationId: "o", WorkspaceId: "w", AutomationId: "a",
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"description"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.req)
			if tc.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tc.ok && status.Code(err) != codes.InvalidArgument {
				t.Fatalf("got %v, want INVALID_ARGUMENT", err)
			}
		})
	}
}
