package chain

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// rangeCopy is shallowCopy as it was before its field copier: Range and Set.
func rangeCopy(dst, src proto.Message) {
	dm, sm := dst.ProtoReflect(), src.ProtoReflect()
	sm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dm.Set(fd, v)
		return true
	})
	if u := sm.GetUnknown(); len(u) > 0 {
		dm.SetUnknown(u)
	}
}

// TestShallowCopyAsRangeAndSet: the field copier gives what Range and Set
// give, into an empty message and into one already set (fields src does not
// set are kept), for scalars, enums, proto3 optional (false is set), maps,
// lists, nested messages, oneofs, unknown fields and a proto2 message with
// extensions (which goes through Range).
func TestShallowCopyAsRangeAndSet(t *testing.T) {
	now := timestamppb.New(time.Unix(1700000000, 5))
	unknown := func(m proto.Message) proto.Message {
		m.ProtoReflect().SetUnknown(protoreflect.RawFields{0xa8, 0x1f, 0x01}) // field 501, varint 1
		return m
	}
	cases := []struct {
		name     string
		src, pre proto.Message
	}{
		{"workspace", &platformv1.Workspace{Name: "organizations/o/workspaces/w", Title: "T", CreateTime: now, CreatorEmail: "a@b.c"},
			&platformv1.Workspace{Title: "old", WorkspaceIcon: "kept", UpdateTime: now}},
		{"empty", &platformv1.Workspace{}, &platformv1.Workspace{Title: "kept"}},
		{"optional false", &platformv1.AutomationTrigger{TriggerId: "t", IsActive: proto.Bool(false), InputMapping: map[string]string{"a": "/b"}},
			&platformv1.AutomationTrigger{IsActive: proto.Bool(true), PhaseType: platformv1.PhaseType(1), InputMapping: map[string]string{"x": "/y"}}},
		{"empty map kept", &platformv1.AutomationTrigger{InputMapping: map[string]string{}},
			&platformv1.AutomationTrigger{InputMapping: map[string]string{"x": "/y"}}},
		{"oneof", &platformv1.ValueType{Kind: &platformv1.ValueType_ScalarType{ScalarType: platformv1.ValueScalarType(2)}},
			&platformv1.ValueType{Kind: &platformv1.ValueType_OptionalType{OptionalType: &platformv1.ValueOptionalType{}}}},
		{"struct", structpb.NewStringValue("s"), structpb.NewBoolValue(true)},
		{"list", &structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(1)}}, &structpb.ListValue{}},
		{"unknown fields", unknown(&platformv1.Workspace{Name: "n"}), &platformv1.Workspace{}},
		{"proto2, extensions", &descriptorpb.FieldOptions{Deprecated: proto.Bool(false), Packed: proto.Bool(true)},
			&descriptorpb.FieldOptions{Lazy: proto.Bool(true)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, pre := range []proto.Message{c.src.ProtoReflect().Type().New().Interface(), c.pre} {
				want, got := proto.Clone(pre), proto.Clone(pre)
				rangeCopy(want, c.src)
				if err := shallowCopy(got, c.src); err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(got, want) {
					t.Errorf("shallowCopy(%v, %v) = %v, Range and Set give %v", pre, c.src, got, want)
				}
			}
		})
	}
	if copierFor(reflectTypeOf(&descriptorpb.FieldOptions{})) != nil {
		t.Error("a message with extension fields has a field copier")
	}
}

// TestShallowCopyAllocatesNothing: copying a generated message whose fields
// are strings and messages boxes none of them (Range and Set made two
// allocations per string field).
func TestShallowCopyAllocatesNothing(t *testing.T) {
	src := &platformv1.Workspace{Name: "organizations/o/workspaces/w", Title: "T", WorkspaceIcon: "i",
		CreateTime: timestamppb.Now(), CreatorDisplayName: "A", CreatorEmail: "a@b.c"}
	dst := new(platformv1.Workspace)
	if err := shallowCopy(dst, src); err != nil { // the copier is built once per type
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		proto.Reset(dst)
		_ = shallowCopy(dst, src)
	}); n != 0 {
		t.Errorf("shallowCopy of a workspace: %v allocations, want 0", n)
	}
}

func reflectTypeOf(m proto.Message) reflect.Type { return reflect.TypeOf(m) }
