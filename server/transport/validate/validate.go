// Package validate is the chain's validation entry: a request's field
// limits (package limits), its protovalidate constraints, its REQUIRED
// fields (outside a partial update's mask) and its own Validate method.
package validate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/limits"
	"go.einride.tech/aip/fieldbehavior"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// Validate checks a request: the sizes and characters of limits.Set.Check (no
// NUL in any string; titles, code, inputs and events within store's
// limits), then every field marked
// `(google.api.field_behavior) = REQUIRED` must be set (INVALID_ARGUMENT with
// one BadRequest violation per missing field), then the message's own
// `Validate() error`, if it has one, is called. A Validate error that is a
// status passes as it is; any other becomes INVALID_ARGUMENT.
func Validate(req any) error { return check(limits.Default, req) }

// check is Validate with the sizes of ls.
func check(ls *limits.Set, req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	if err := ls.Check(m.ProtoReflect()); err != nil {
		return err
	}
	if err := validateConstraints(m); err != nil {
		return err
	}
	if err := fieldbehavior.ValidateRequiredFields(m); err != nil {
		var missing []*transport.FieldViolation
		collectMissing(m.ProtoReflect(), "", &missing)
		if len(missing) == 0 { // cannot happen, but never lose the error
			missing = append(missing, transport.Violation("", err.Error()))
		}
		missing = outsideUpdateMask(m.ProtoReflect(), missing)
		if len(missing) == 0 {
			return validateSelf(req)
		}
		fields := make([]string, len(missing))
		for i, v := range missing {
			fields[i] = v.GetField()
		}
		return transport.NewError(codes.InvalidArgument, transport.ReasonRequiredFieldMissing,
			"missing required field: "+strings.Join(fields, ", ")).
			Meta("fields", strings.Join(fields, ",")).
			Violations(missing...).Err()
	}
	return validateSelf(req)
}

// validateSelf calls the request's own Validate method, if it has one.
func validateSelf(req any) error {
	if v, ok := req.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			if _, isStatus := status.FromError(err); isStatus {
				return err
			}
			return transport.NewError(codes.InvalidArgument, transport.ReasonInvalidRequest, err.Error()).Err()
		}
	}
	return nil
}

// outsideUpdateMask drops, from the missing fields of a partial update
// (AIP-134: a request with a non-empty update_mask), those inside the
// resource that the mask does not name: a partial update leaves them as they
// are. The resource itself, when required, must still be given.
func outsideUpdateMask(m protoreflect.Message, missing []*transport.FieldViolation) []*transport.FieldViolation {
	fd := m.Descriptor().Fields().ByName("update_mask")
	if fd == nil || fd.Kind() != protoreflect.MessageKind || fd.Message().FullName() != "google.protobuf.FieldMask" || !m.Has(fd) {
		return missing
	}
	mask, ok := m.Get(fd).Message().Interface().(*fieldmaskpb.FieldMask)
	if !ok || len(mask.GetPaths()) == 0 || slices.Contains(mask.GetPaths(), "*") {
		return missing
	}
	kept := missing[:0]
	for _, v := range missing {
		resource, rel, nested := strings.Cut(v.GetField(), ".")
		if nested && resource != "update_mask" && !maskCovers(mask.GetPaths(), rel) {
			continue
		}
		kept = append(kept, v)
	}
	return kept
}

// maskCovers reports whether a mask path names field or one of its parents.
func maskCovers(paths []string, field string) bool {
	for _, p := range paths {
		if p == field || strings.HasPrefix(field, p+".") {
			return true
		}
	}
	return false
}

// collectMissing walks m like fieldbehavior.ValidateRequiredFields but
// records every missing required field instead of stopping at the first.
func collectMissing(m protoreflect.Message, path string, out *[]*transport.FieldViolation) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		p := string(f.Name())
		if path != "" {
			p = path + "." + p
		}
		if !present(m, f) {
			if fieldbehavior.Has(f, annotations.FieldBehavior_REQUIRED) {
				*out = append(*out, transport.Violation(p, "required field is missing"))
			}
			continue
		}
		if f.Kind() != protoreflect.MessageKind {
			continue
		}
		v := m.Get(f)
		switch {
		case f.IsList():
			for j := 0; j < v.List().Len(); j++ {
				collectMissing(v.List().Get(j).Message(), fmt.Sprintf("%s[%d]", p, j), out)
			}
		case f.IsMap():
			if f.MapValue().Kind() != protoreflect.MessageKind {
				continue
			}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				collectMissing(mv.Message(), fmt.Sprintf("%s[%v]", p, k.Interface()), out)
				return true
			})
		default:
			collectMissing(v.Message(), p, out)
		}
	}
}

// present mirrors fieldbehavior's notion of a set field: a zero scalar, an
// empty list or map and an unset message are all missing, presence or not.
func present(m protoreflect.Message, f protoreflect.FieldDescriptor) bool {
	v := m.Get(f)
	if !v.IsValid() {
		return false
	}
	switch {
	case f.IsList():
		return v.List().Len() > 0
	case f.IsMap():
		return v.Map().Len() > 0
	}
	switch f.Kind() {
	case protoreflect.EnumKind:
		return v.Enum() != 0
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Int64Kind,
		protoreflect.Sint64Kind, protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		return v.Int() != 0
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return v.Uint() != 0
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float() != 0
	case protoreflect.StringKind:
		return v.String() != ""
	case protoreflect.BytesKind:
		return len(v.Bytes()) > 0
	case protoreflect.MessageKind:
		return v.Message().IsValid()
	}
	return true
}

// Name is the entry's name in the chain.
const Name = "validation"

// Middleware is the validation entry, with the field bounds of ls (nil:
// limits.Default).
func Middleware(ls *limits.Set) transport.Middleware {
	if ls == nil {
		ls = limits.Default
	}
	return transport.Middleware{Name: Name, Unary: unary(ls), Stream: stream(ls)}
}

func unary(ls *limits.Set) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := check(ls, req); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

type validatingStream struct {
	grpc.ServerStream
	ls *limits.Set
}

func (s validatingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return check(s.ls, m)
}

func stream(ls *limits.Set) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, validatingStream{ss, ls})
	}
}
