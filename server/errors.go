package server

import (
	"errors"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// The one mapping of store errors to statuses. The store promises (store/errors.go)
// that its errors wrap at most one sentinel and that a bad request field is a
// *store.FieldError, so the mapping reads types only (errors.Is / errors.As),
// never the words of a message: TestNoMessageMatching keeps it that way.

// storeErrors says how the store's errors about one resource read as
// statuses. Only name and notFound are needed; the rest refine the answer.
type storeErrors struct {
	// name is the resource name a NOT_FOUND or ALREADY_EXISTS names.
	name string
	// notFound and exists are the reasons of ErrNotFound and
	// ErrAlreadyExists.
	notFound, exists transport.ErrorReason
	// precondition, when set, is the reason of ErrFailedPrecondition, which
	// then carries name in metadata (key preconditionKey, "resource_name"
	// when empty) and preconditionMsg (the store's words when empty). Unset:
	// FAILED_PRECONDITION without metadata.
	precondition    transport.ErrorReason
	preconditionKey string
	preconditionMsg string
}

// storeStatus maps a store error to a status: ErrNotFound → NOT_FOUND with
// reason and resource name, ErrAlreadyExists → ALREADY_EXISTS (existsReason),
// ErrInvalidArgument → INVALID_ARGUMENT, ErrFailedPrecondition →
// FAILED_PRECONDITION, ErrConflict → ABORTED, ErrResourceExhausted →
// RESOURCE_EXHAUSTED; anything else stays an internal error (logged, never
// shown).
func storeStatus(err error, notFoundReason, existsReason transport.ErrorReason, name string) error {
	return storeErrors{name: name, notFound: notFoundReason, exists: existsReason}.status(err)
}

// status is err as a status (see storeStatus); nil stays nil.
func (e storeErrors) status(err error) error {
	switch {
	case err == nil:
		return nil
	case e.precondition != transport.ErrorReason(0) && errors.Is(err, store.ErrFailedPrecondition):
		msg, key := e.preconditionMsg, e.preconditionKey
		if msg == "" {
			msg = withoutSentinel(err, store.ErrFailedPrecondition)
		}
		if key == "" {
			key = "resource_name"
		}
		return transport.FailedPrecondition(e.precondition, msg, map[string]string{key: e.name})
	case errors.Is(err, store.ErrNotFound):
		return transport.NotFound(e.notFound, e.name)
	case errors.Is(err, store.ErrAlreadyExists):
		return transport.AlreadyExists(e.exists, e.name)
	case errors.Is(err, store.ErrInvalidArgument):
		return invalidFromStore(err)
	case errors.Is(err, store.ErrFailedPrecondition):
		return transport.FailedPrecondition(ReasonFailedPrecondition, withoutSentinel(err, store.ErrFailedPrecondition), nil)
	case errors.Is(err, store.ErrConflict):
		return transport.Aborted(ReasonConflict, "a concurrent change won; retry")
	case errors.Is(err, store.ErrResourceExhausted):
		return transport.ResourceExhausted(ReasonAPIKeyLimit, withoutSentinel(err, store.ErrResourceExhausted))
	}
	return err
}

// withoutSentinel is the store's message for a client: the sentinel's
// words ("invalid argument: ") are the status code's business. It shapes
// the text shown; nothing is decided by it.
func withoutSentinel(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}

// listFieldReasons are the reasons of the list parameters' FieldErrors.
var listFieldReasons = map[string]transport.ErrorReason{
	"page_token": ReasonInvalidPageToken,
	"page_size":  ReasonInvalidPageSize,
	"filter":     ReasonInvalidFilter,
	"order_by":   ReasonInvalidOrderBy,
}

// invalidFromStore maps a store INVALID_ARGUMENT to its status: a
// FieldError about a list parameter has that parameter's reason and a
// violation on it; any other is INVALID_FIELD without a violation.
func invalidFromStore(err error) error {
	msg := withoutSentinel(err, store.ErrInvalidArgument)
	var fe *store.FieldError
	if errors.As(err, &fe) {
		if reason, ok := listFieldReasons[fe.Field]; ok {
			return transport.InvalidArgument(reason, msg, transport.Violation(fe.Field, msg))
		}
	}
	return transport.InvalidArgument(ReasonInvalidField, msg)
}

// fieldOf is the request field a store or engine INVALID_ARGUMENT is about:
// its FieldError's, else field.
func fieldOf(err error, field string) string {
	var fe *store.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return field
}

var errStoreUnavailable = transport.NewError(codes.Unavailable, ReasonStoreUnavailable, "no store is configured").Err()
