package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	"github.com/proserun/prose/store"
)

// ErrorDomain is the domain of every google.rpc.ErrorInfo this service
// returns (AIP-193).
const ErrorDomain = "prose.run"

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

// ErrorReason is the reason of an error: a value of the prose.errors.v1
// enum, sent in google.rpc.ErrorInfo as its name without the ERROR_REASON_
// prefix (ReasonName).
type ErrorReason = errorsv1.ErrorReason

// reasonPrefix is the prefix every ErrorReason name carries and no client
// sees.
const reasonPrefix = "ERROR_REASON_"

// ReasonName is the reason string clients see for r ("RUN_NOT_FOUND").
func ReasonName(r ErrorReason) string {
	return strings.TrimPrefix(r.String(), reasonPrefix)
}

// ForReason returns the google.rpc.ErrorInfo of reason r (domain
// ErrorDomain) with metadata, which may be nil.
func ForReason(r ErrorReason, metadata map[string]string) *errdetails.ErrorInfo {
	return &errdetails.ErrorInfo{Reason: ReasonName(r), Domain: ErrorDomain, Metadata: metadata}
}

// Error is a typed AIP-193 error: it knows its gRPC code and its reason, and
// renders as a google.rpc.Status with a google.rpc.ErrorInfo (reason, domain
// prose.run, metadata) and, optionally, a google.rpc.BadRequest. It is
// itself the error handlers return (Err): gRPC reads its status through
// GRPCStatus.
type Error struct {
	code       codes.Code
	reason     ErrorReason
	msg        string
	metadata   map[string]string
	violations []*FieldViolation
	// preconditions are google.rpc.PreconditionFailure violations: what
	// stands in the way of a FAILED_PRECONDITION.
	preconditions []*errdetails.PreconditionFailure_Violation
	st            *status.Status // built by Err, dropped by Meta and Violations
}

// NewError starts an error with a code, a reason and a message meant for the
// client.
func NewError(code codes.Code, reason ErrorReason, msg string) *Error {
	return &Error{code: code, reason: reason, msg: msg}
}

// Meta adds one ErrorInfo metadata entry.
func (e *Error) Meta(key, value string) *Error {
	if e.metadata == nil {
		e.metadata = map[string]string{}
	}
	e.metadata[key] = value
	e.st = nil
	return e
}

// Violations adds BadRequest field violations.
func (e *Error) Violations(v ...*FieldViolation) *Error {
	e.violations = append(e.violations, v...)
	e.st = nil
	return e
}

// Preconditions adds google.rpc.PreconditionFailure violations (type,
// subject, description), for a FAILED_PRECONDITION that lists what failed.
func (e *Error) Preconditions(v ...*errdetails.PreconditionFailure_Violation) *Error {
	e.preconditions = append(e.preconditions, v...)
	e.st = nil
	return e
}

// Code is the gRPC code of e.
func (e *Error) Code() codes.Code { return e.code }

// Reason is the reason of e.
func (e *Error) Reason() ErrorReason { return e.reason }

// Status returns e as a status.
func (e *Error) Status() *status.Status {
	if e.st != nil {
		return e.st
	}
	return e.build()
}

func (e *Error) build() *status.Status {
	st := status.New(e.code, e.msg)
	details := []protoadapt.MessageV1{ForReason(e.reason, e.metadata)}
	if len(e.violations) > 0 {
		details = append(details, &errdetails.BadRequest{FieldViolations: e.violations})
	}
	if len(e.preconditions) > 0 {
		details = append(details, &errdetails.PreconditionFailure{Violations: e.preconditions})
	}
	withDetails, err := st.WithDetails(details...)
	if err != nil {
		// Only fails for codes.OK or unmarshalable details; neither happens.
		return st
	}
	return withDetails
}

// GRPCStatus lets gRPC (status.FromError, status.Code) read e's status.
func (e *Error) GRPCStatus() *status.Status { return e.Status() }

// Error is the text of the status error e renders as.
func (e *Error) Error() string { return fmt.Sprintf("rpc error: code = %s desc = %s", e.code, e.msg) }

// Err returns e as an error, its status built once here (gRPC and the errors
// entry each ask for it): an error shared between goroutines is only read.
func (e *Error) Err() error {
	e.st = e.build()
	return e
}

// Internal is the INTERNAL error a client sees for a failure it is not told
// about (a panic, an error that is not a status): the details are logged.
func Internal() error {
	return NewError(codes.Internal, ReasonInternal, internalMessage).Err()
}

// NotFound reports that resourceName (e.g. "runs/123") does not exist or may
// not be seen by the caller.
func NotFound(reason ErrorReason, resourceName string) error {
	return NewError(codes.NotFound, reason, fmt.Sprintf("%s not found", resourceName)).
		Meta("resource_name", resourceName).Err()
}

// AlreadyExists reports that resourceName already exists.
func AlreadyExists(reason ErrorReason, resourceName string) error {
	return NewError(codes.AlreadyExists, reason, fmt.Sprintf("%s already exists", resourceName)).
		Meta("resource_name", resourceName).Err()
}

// InvalidArgument reports a bad request, with one violation per bad field.
func InvalidArgument(reason ErrorReason, msg string, violations ...*FieldViolation) error {
	return NewError(codes.InvalidArgument, reason, msg).Violations(violations...).Err()
}

// FailedPrecondition reports that the system is not in the state the call
// needs (e.g. resolving an exception that is not pending). metadata may be nil.
func FailedPrecondition(reason ErrorReason, msg string, metadata map[string]string) error {
	e := NewError(codes.FailedPrecondition, reason, msg)
	for k, v := range metadata {
		e = e.Meta(k, v)
	}
	return e.Err()
}

// Aborted reports a concurrency conflict; the client may retry.
func Aborted(reason ErrorReason, msg string) error {
	return NewError(codes.Aborted, reason, msg).Err()
}

// PermissionDenied reports that the authenticated caller may not do this.
func PermissionDenied(reason ErrorReason, msg string) error {
	return NewError(codes.PermissionDenied, reason, msg).Err()
}

// Unauthenticated reports a missing, unknown or expired credential.
func Unauthenticated(reason ErrorReason, msg string) error {
	return NewError(codes.Unauthenticated, reason, msg).Err()
}

// ResourceExhausted reports a quota or rate limit.
func ResourceExhausted(reason ErrorReason, msg string) error {
	return NewError(codes.ResourceExhausted, reason, msg).Err()
}

// Unimplemented reports a method that exists in the contract but not yet here.
func Unimplemented(reason ErrorReason, msg string) error {
	return NewError(codes.Unimplemented, reason, msg).Err()
}

// ReasonOf returns the reason of err: its ErrorInfo reason as an
// ErrorReason, ERROR_REASON_UNSPECIFIED when it has none or one outside the
// enum.
func ReasonOf(err error) ErrorReason {
	var e *Error
	if errors.As(err, &e) {
		return e.reason
	}
	return ErrorReason(errorsv1.ErrorReason_value[reasonPrefix+Reason(err)])
}

// Reason returns the ErrorInfo reason string of err (what a client sees), or
// "" when it has none.
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
	case errors.Is(err, store.ErrUnavailable):
		// A database restarting or failing over is not an internal error:
		// the client retries (creates are idempotent by request_id).
		return NewError(codes.Unavailable, errorsv1.ErrorReason_ERROR_REASON_DATABASE_UNAVAILABLE,
			"the database is unavailable for a moment; retry the request").Status(), true
	}
	return NewError(codes.Internal, ReasonInternal, internalMessage).Status(), true
}
