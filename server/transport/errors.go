package transport

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// ErrorDomain is the domain of every google.rpc.ErrorInfo this service
// returns (AIP-193).
const ErrorDomain = "prose.run"

// Reasons used by the transport layer itself. Handlers choose their own
// UPPER_SNAKE reasons.
const (
	ReasonInternal             = "INTERNAL"
	ReasonRequiredFieldMissing = "REQUIRED_FIELD_MISSING"
	ReasonInvalidRequest       = "INVALID_REQUEST"
	ReasonUnauthenticated      = "UNAUTHENTICATED"
	ReasonCanceled             = "CANCELED"
	ReasonDeadlineExceeded     = "DEADLINE_EXCEEDED"
)

// internalMessage is the only message a client sees for an error that was
// not built as a status: the details are logged, never sent.
const internalMessage = "internal error"

// FieldViolation is one entry of a google.rpc.BadRequest.
type FieldViolation = errdetails.BadRequest_FieldViolation

// Violation builds a field violation. field is the proto (snake_case) path of
// the offending field, e.g. "run.inputs[2].name".
func Violation(field, description string) *FieldViolation {
	return &errdetails.BadRequest_FieldViolation{Field: field, Description: description}
}

// ErrorBuilder builds an AIP-193 error: a google.rpc.Status with a standard
// code, a google.rpc.ErrorInfo (reason, domain prose.run, metadata) and,
// optionally, a google.rpc.BadRequest.
type ErrorBuilder struct {
	code       codes.Code
	reason     string
	msg        string
	metadata   map[string]string
	violations []*FieldViolation
}

// NewError starts an error with a code, an UPPER_SNAKE reason and a message
// meant for the client.
func NewError(code codes.Code, reason, msg string) *ErrorBuilder {
	return &ErrorBuilder{code: code, reason: reason, msg: msg}
}

// Meta adds one ErrorInfo metadata entry.
func (b *ErrorBuilder) Meta(key, value string) *ErrorBuilder {
	if b.metadata == nil {
		b.metadata = map[string]string{}
	}
	b.metadata[key] = value
	return b
}

// Violations adds BadRequest field violations.
func (b *ErrorBuilder) Violations(v ...*FieldViolation) *ErrorBuilder {
	b.violations = append(b.violations, v...)
	return b
}

// Status returns the built status.
func (b *ErrorBuilder) Status() *status.Status {
	st := status.New(b.code, b.msg)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{
		Reason:   b.reason,
		Domain:   ErrorDomain,
		Metadata: b.metadata,
	}}
	if len(b.violations) > 0 {
		details = append(details, &errdetails.BadRequest{FieldViolations: b.violations})
	}
	withDetails, err := st.WithDetails(details...)
	if err != nil {
		// Only fails for codes.OK or unmarshalable details; neither happens.
		return st
	}
	return withDetails
}

// Err returns the built error.
func (b *ErrorBuilder) Err() error { return b.Status().Err() }

// NotFound reports that resourceName (e.g. "runs/123") does not exist or may
// not be seen by the caller.
func NotFound(reason, resourceName string) error {
	return NewError(codes.NotFound, reason, fmt.Sprintf("%s not found", resourceName)).
		Meta("resource_name", resourceName).Err()
}

// AlreadyExists reports that resourceName already exists.
func AlreadyExists(reason, resourceName string) error {
	return NewError(codes.AlreadyExists, reason, fmt.Sprintf("%s already exists", resourceName)).
		Meta("resource_name", resourceName).Err()
}

// InvalidArgument reports a bad request, with one violation per bad field.
func InvalidArgument(reason, msg string, violations ...*FieldViolation) error {
	return NewError(codes.InvalidArgument, reason, msg).Violations(violations...).Err()
}

// FailedPrecondition reports that the system is not in the state the call
// needs (e.g. resolving an exception that is not pending). metadata may be nil.
func FailedPrecondition(reason, msg string, metadata map[string]string) error {
	b := NewError(codes.FailedPrecondition, reason, msg)
	for k, v := range metadata {
		b.Meta(k, v)
	}
	return b.Err()
}

// Aborted reports a concurrency conflict; the client may retry.
func Aborted(reason, msg string) error {
	return NewError(codes.Aborted, reason, msg).Err()
}

// PermissionDenied reports that the authenticated caller may not do this.
func PermissionDenied(reason, msg string) error {
	return NewError(codes.PermissionDenied, reason, msg).Err()
}

// Unauthenticated reports a missing, unknown or expired credential.
func Unauthenticated(reason, msg string) error {
	return NewError(codes.Unauthenticated, reason, msg).Err()
}

// ResourceExhausted reports a quota or rate limit.
func ResourceExhausted(reason, msg string) error {
	return NewError(codes.ResourceExhausted, reason, msg).Err()
}

// Unimplemented reports a method that exists in the contract but not yet here.
func Unimplemented(reason, msg string) error {
	return NewError(codes.Unimplemented, reason, msg).Err()
}

// Reason returns the ErrorInfo reason of err, or "" when it has none.
func Reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// ToStatus turns any error into the status that may be sent to a client:
// status errors pass unchanged (except UNKNOWN, which is treated as a
// non-status error), context errors become CANCELED / DEADLINE_EXCEEDED, and
// anything else becomes INTERNAL with a generic message. The second result
// reports whether err was replaced, so the caller can log the original.
func ToStatus(err error) (*status.Status, bool) {
	if err == nil {
		return status.New(codes.OK, ""), false
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return st, false
	}
	switch {
	case errors.Is(err, context.Canceled):
		return NewError(codes.Canceled, ReasonCanceled, "the request was canceled").Status(), true
	case errors.Is(err, context.DeadlineExceeded):
		return NewError(codes.DeadlineExceeded, ReasonDeadlineExceeded, "the deadline expired").Status(), true
	}
	return NewError(codes.Internal, ReasonInternal, internalMessage).Status(), true
}
