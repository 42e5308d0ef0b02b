package server

import (
	"fmt"

	"go.einride.tech/aip/fieldmask"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/proserun/prose/server/transport"
)

// checkUpdateMask checks an update_mask (AIP-134) against the resource
// message with aip-go's fieldmask.Validate: every path names a field of
// resource ("*" alone); a path naming no field is INVALID_ARGUMENT
// INVALID_FIELD. Each Update method then checks the paths it may write
// (output-only and immutable fields are fields too).
func checkUpdateMask(mask *fieldmaskpb.FieldMask, resource proto.Message) error {
	if err := fieldmask.Validate(mask, resource); err != nil {
		msg := fmt.Sprintf("update_mask: %v (the paths are fields of %s, or * alone)", err, resource.ProtoReflect().Descriptor().Name())
		return transport.InvalidArgument(ReasonInvalidField, msg, transport.Violation("update_mask", msg))
	}
	return nil
}
