package validate_test

import (
	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"

	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/validate"
)

func violations(t *testing.T, err error) []string {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code = %v (%v)", st.Code(), err)
	}
	var out []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField())
			}
		}
	}
	return out
}

func TestValidate(t *testing.T) {
	if err := validate.Validate(&legacyv2.CreateRunRequest{Name: "n", ProcessId: "p", AgentId: "a", Stage: "Draft"}); err != nil {
		t.Fatalf("complete request: %v", err)
	}
	got := violations(t, validate.Validate(&legacyv2.CreateRunRequest{}))
	if fmt.Sprint(got) != "[name process_id agent_id stage]" {
		t.Errorf("violations = %v", got)
	}
	// Nested messages, lists and maps are walked; every missing field is named.
	if got := violations(t, validate.Validate(nestedMessage(t))); fmt.Sprint(got) != "[a inner.b items[1].b]" {
		t.Errorf("nested violations = %v", got)
	}
	if transport.ReasonOf(validate.Validate(&legacyv2.GetRunRequest{})) != transport.ReasonRequiredFieldMissing {
		t.Error("reason")
	}
	// Not a proto message: nothing to check.
	if err := validate.Validate(struct{}{}); err != nil {
		t.Error(err)
	}
}

// validator is a request with its own Validate method.
type validator struct {
	legacyv2.GetRunRequest
	err error
}

func (v *validator) Validate() error { return v.err }

func TestValidateMethod(t *testing.T) {
	err := validate.Validate(&validator{GetRunRequest: legacyv2.GetRunRequest{Id: "x"}, err: errors.New("id must be numeric")})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != "id must be numeric" {
		t.Errorf("plain Validate error: %v", err)
	}
	want := transport.FailedPrecondition(errorsv1.ErrorReason_ERROR_REASON_UNAUTHENTICATED, "no", nil)
	if err := validate.Validate(&validator{GetRunRequest: legacyv2.GetRunRequest{Id: "x"}, err: want}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("status Validate error: %v", err)
	}
}

// nestedMessage builds, without generated code, a message
//
//	message Outer { string a = 1 [REQUIRED]; Inner inner = 2; repeated Inner items = 3; }
//	message Inner { string b = 1 [REQUIRED]; }
//
// with a unset, inner set but empty, and items = [{b: "x"}, {}].
func nestedMessage(t *testing.T) proto.Message {
	t.Helper()
	required := func() *descriptorpb.FieldOptions {
		o := &descriptorpb.FieldOptions{}
		proto.SetExtension(o, annotations.E_FieldBehavior, []annotations.FieldBehavior{annotations.FieldBehavior_REQUIRED})
		return o
	}
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:    proto.String("servertest/nested.proto"),
		Package: proto.String("servertest"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Outer"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("a"), JsonName: proto.String("a"), Number: proto.Int32(1), Type: str, Label: opt, Options: required()},
				{Name: proto.String("inner"), JsonName: proto.String("inner"), Number: proto.Int32(2), Type: msg, Label: opt, TypeName: proto.String(".servertest.Inner")},
				{Name: proto.String("items"), JsonName: proto.String("items"), Number: proto.Int32(3), Type: msg, Label: rep, TypeName: proto.String(".servertest.Inner")},
			}},
			{Name: proto.String("Inner"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("b"), JsonName: proto.String("b"), Number: proto.Int32(1), Type: str, Label: opt, Options: required()},
			}},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	outerD := fd.Messages().ByName("Outer")
	innerD := fd.Messages().ByName("Inner")
	outer := dynamicpb.NewMessage(outerD)
	outer.Set(outerD.Fields().ByName("inner"), protoreflect.ValueOfMessage(dynamicpb.NewMessage(innerD)))
	items := outer.Mutable(outerD.Fields().ByName("items")).List()
	first := dynamicpb.NewMessage(innerD)
	first.Set(innerD.Fields().ByName("b"), protoreflect.ValueOfString("x"))
	items.Append(protoreflect.ValueOfMessage(first))
	items.Append(protoreflect.ValueOfMessage(dynamicpb.NewMessage(innerD)))
	return outer
}
