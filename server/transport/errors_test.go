package transport_test

import (
	"regexp"
	"strings"

	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"

	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/server/transport"
)

func TestErrorHelpers(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
	}{
		{"not found", transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND, "runs/1"), codes.NotFound, "RUN_NOT_FOUND"},
		{"already exists", transport.AlreadyExists(errorsv1.ErrorReason_ERROR_REASON_BOOK_ALREADY_EXISTS, "books/a/1"), codes.AlreadyExists, "BOOK_ALREADY_EXISTS"},
		{"invalid", transport.InvalidArgument(errorsv1.ErrorReason_ERROR_REASON_INVALID_FILTER, "bad filter", transport.Violation("filter", "unknown field x")), codes.InvalidArgument, "INVALID_FILTER"},
		{"precondition", transport.FailedPrecondition(errorsv1.ErrorReason_ERROR_REASON_EXCEPTION_STATE_CONFLICT, "exception is resolved", map[string]string{"state": "RESOLVED"}), codes.FailedPrecondition, "EXCEPTION_STATE_CONFLICT"},
		{"denied", transport.PermissionDenied(errorsv1.ErrorReason_ERROR_REASON_API_KEY_READ_ONLY, "key is read only"), codes.PermissionDenied, "API_KEY_READ_ONLY"},
		{"unauthenticated", transport.Unauthenticated(errorsv1.ErrorReason_ERROR_REASON_API_KEY_INVALID, "invalid key"), codes.Unauthenticated, "API_KEY_INVALID"},
		{"aborted", transport.Aborted(errorsv1.ErrorReason_ERROR_REASON_CONFLICT, "try again"), codes.Aborted, "CONFLICT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := status.Convert(tt.err)
			if st.Code() != tt.code {
				t.Errorf("code = %v", st.Code())
			}
			var info *errdetails.ErrorInfo
			for _, d := range st.Details() {
				if i, ok := d.(*errdetails.ErrorInfo); ok {
					info = i
				}
			}
			if info == nil || info.GetReason() != tt.reason || info.GetDomain() != transport.ErrorDomain {
				t.Errorf("ErrorInfo = %v", info)
			}
		})
	}
	st := status.Convert(transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND, "runs/1"))
	if st.Message() != "runs/1 not found" {
		t.Errorf("message = %q", st.Message())
	}
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok && i.GetMetadata()["resource_name"] != "runs/1" {
			t.Errorf("metadata = %v", i.GetMetadata())
		}
	}
}

func TestToStatus(t *testing.T) {
	tests := []struct {
		err      error
		code     codes.Code
		replaced bool
	}{
		{transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_INVALID_REQUEST, "y"), codes.NotFound, false},
		{fmt.Errorf("wrapped: %w", transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_INVALID_REQUEST, "y")), codes.NotFound, false},
		{errors.New("plain"), codes.Internal, true},
		{status.Error(codes.Unknown, "unknown"), codes.Internal, true},
		{context.Canceled, codes.Canceled, true},
		{fmt.Errorf("q: %w", context.DeadlineExceeded), codes.DeadlineExceeded, true},
	}
	for _, tt := range tests {
		st, replaced := transport.ToStatus(tt.err)
		if st.Code() != tt.code || replaced != tt.replaced {
			t.Errorf("ToStatus(%v) = %v, %v", tt.err, st.Code(), replaced)
		}
		if tt.code == codes.Internal && st.Message() != "internal error" {
			t.Errorf("ToStatus(%v) message %q leaks", tt.err, st.Message())
		}
	}
}

// TestErrorReasons: every reason of the enum is sent as its name without the
// ERROR_REASON_ prefix, in UPPER_SNAKE, and a typed error carries its code
// and reason through gRPC's status functions and through wrapping.
func TestErrorReasons(t *testing.T) {
	upperSnake := regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)
	for n := range errorsv1.ErrorReason_name {
		r := errorsv1.ErrorReason(n)
		if r == errorsv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
			continue
		}
		name := transport.ReasonName(r)
		if !upperSnake.MatchString(name) || strings.HasPrefix(name, "ERROR_REASON") {
			t.Errorf("%v renders as %q", r, name)
		}
		err := fmt.Errorf("wrapped: %w", transport.NewError(codes.Aborted, r, "m").Err())
		if transport.ReasonOf(err) != r || transport.Reason(err) != name || status.Code(err) != codes.Aborted {
			t.Errorf("%v: ReasonOf %v, Reason %q, code %v", r, transport.ReasonOf(err), transport.Reason(err), status.Code(err))
		}
		// A status that crossed the wire (no typed error left) maps back.
		if got := transport.ReasonOf(status.ErrorProto(status.Convert(err).Proto())); got != r {
			t.Errorf("%v over the wire: ReasonOf = %v", r, got)
		}
	}
	if got := transport.ReasonName(transport.ReasonRequiredFieldMissing); got != "REQUIRED_FIELD_MISSING" {
		t.Errorf("ReasonName = %q", got)
	}
	var e *transport.Error
	if err := transport.NotFound(errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND, "runs/1"); !errors.As(err, &e) || e.Code() != codes.NotFound {
		t.Errorf("NotFound is not a typed *Error with its code: %#v", err)
	}
}
