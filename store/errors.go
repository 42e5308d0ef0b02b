package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every method of every interface in this package returns
// errors that wrap at most one of these (checked with errors.Is), with context
// in the message. Any other error is an internal failure of the backend.
var (
	// ErrNotFound: the addressed record, or a parent or referenced record, does
	// not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a record with the same identity or unique key exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrFailedPrecondition: the system is not in a state the operation needs
	// (a built-in role cannot be deleted, a role of the wrong scope, ...).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrConflict: a concurrent change won (a compare-and-set lost, a lease is
	// held by another owner, a state transition raced). Retrying after a re-read
	// may succeed. Maps to ABORTED.
	ErrConflict = errors.New("conflict")
	// ErrInvalidArgument: a malformed request: negative page size, a page token
	// that is corrupt or bound to other parameters, a filter or order_by outside
	// the allow-list.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrResourceExhausted: a quota is reached (API keys per organization).
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrStageChanged is an ErrConflict: CreateRun of a Run with
	// CurrentStage found the automation deleted or its stage at another
	// version than the run's StageVersion. Read the automation again.
	ErrStageChanged = fmt.Errorf("the automation's stage changed: %w", ErrConflict)
	// ErrSecretKey: a sealed secret opens with none of the sealer's keys
	// (a key was removed before every secret was sealed again).
	ErrSecretKey = errors.New("a stored secret cannot be opened with the configured secret keys")
	// ErrUnavailable: the database did not answer (restarting, failing
	// over, refusing connections). The operation may be retried: creates
	// are idempotent by their request id. The API answers UNAVAILABLE
	// (HTTP 503 with Retry-After).
	ErrUnavailable = errors.New("the database is unavailable for a moment")
)

// FieldError is an ErrInvalidArgument about one field of a request
// (page_size, page_token, filter, order_by): errors.Is(err,
// ErrInvalidArgument) holds, and errors.As gives the field, so that a caller
// names it without reading the message.
type FieldError struct {
	// Field is the request field at fault, e.g. "page_token".
	Field string
	// Msg says what is wrong, without the sentinel's words.
	Msg string
}

// Error is "invalid argument: " and Msg.
func (e *FieldError) Error() string { return ErrInvalidArgument.Error() + ": " + e.Msg }

// Unwrap makes a FieldError an ErrInvalidArgument.
func (e *FieldError) Unwrap() error { return ErrInvalidArgument }

// InvalidField returns a *FieldError about field; format and args make Msg.
func InvalidField(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
