package validate

import (
	"errors"
	"strings"
	"sync"

	"buf.build/go/protovalidate"
	"github.com/proserun/prose/server/transport"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// The validation entry enforces the field constraints the protos declare
// with protovalidate annotations ((buf.validate.field), vendored under
// third_party/protovalidate) after its own checks. Its violations are
// answered like the entry's other refusals: INVALID_ARGUMENT INVALID_FIELD
// with a BadRequest violation per field, naming the field and the rule
// (go-grpc-middleware's protovalidate interceptor would answer with
// protovalidate's own detail type instead of the error reasons every other
// refusal carries).

var (
	validatorOnce sync.Once
	validator     protovalidate.Validator
	validatorErr  error
)

func protoValidator() (protovalidate.Validator, error) {
	validatorOnce.Do(func() { validator, validatorErr = protovalidate.New() })
	return validator, validatorErr
}

// validateConstraints checks m against its protovalidate constraints.
func validateConstraints(m proto.Message) error {
	v, err := protoValidator()
	if err != nil {
		return err
	}
	err = v.Validate(m)
	if err == nil {
		return nil
	}
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) {
		// A constraint that does not compile: a fault of ours.
		return err
	}
	var fields, msgs []string
	violations := make([]*transport.FieldViolation, 0, len(ve.Violations))
	for _, x := range ve.Violations {
		field := protovalidate.FieldPathString(x.Proto.GetField())
		msg := x.Proto.GetMessage()
		fields = append(fields, field)
		msgs = append(msgs, field+": "+msg)
		violations = append(violations, transport.Violation(field, msg+" ("+x.Proto.GetRuleId()+")"))
	}
	return transport.NewError(codes.InvalidArgument, transport.ReasonInvalidField, strings.Join(msgs, "; ")).
		Meta("fields", strings.Join(fields, ",")).Violations(violations...).Err()
}
