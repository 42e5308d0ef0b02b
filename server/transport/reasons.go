// Reasons of the transport layer's own errors, in one place: the chain's
// entries (auth, validation, limits, admission) answer with these, and
// handlers use the general ones (ReasonRequiredFieldMissing, the auth
// reasons of RequireWorkspace). Each is a value of the prose.errors.v1
// ErrorReason enum; the services' reasons are in server/reasons.go.

package transport

import errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"

// General reasons. Handlers choose their own UPPER_SNAKE reasons.
const (
	ReasonInternal             = errorsv1.ErrorReason_ERROR_REASON_INTERNAL
	ReasonRequiredFieldMissing = errorsv1.ErrorReason_ERROR_REASON_REQUIRED_FIELD_MISSING
	ReasonInvalidRequest       = errorsv1.ErrorReason_ERROR_REASON_INVALID_REQUEST
	ReasonUnauthenticated      = errorsv1.ErrorReason_ERROR_REASON_UNAUTHENTICATED
	ReasonCanceled             = errorsv1.ErrorReason_ERROR_REASON_CANCELED
	ReasonDeadlineExceeded     = errorsv1.ErrorReason_ERROR_REASON_DEADLINE_EXCEEDED
)

// Reasons of the auth entries' refusals (ErrorInfo.reason).
const (
	ReasonAPIKeyMissing        = errorsv1.ErrorReason_ERROR_REASON_API_KEY_MISSING
	ReasonAPIKeyInvalid        = errorsv1.ErrorReason_ERROR_REASON_API_KEY_INVALID
	ReasonAPIKeyExpired        = errorsv1.ErrorReason_ERROR_REASON_API_KEY_EXPIRED
	ReasonAPIKeyReadOnly       = errorsv1.ErrorReason_ERROR_REASON_API_KEY_READ_ONLY
	ReasonAPIKeyPermissionOff  = errorsv1.ErrorReason_ERROR_REASON_API_KEY_PERMISSION_DISABLED
	ReasonOrganizationMismatch = errorsv1.ErrorReason_ERROR_REASON_ORGANIZATION_MISMATCH
	ReasonWorkspaceOutOfScope  = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_OUT_OF_SCOPE
	ReasonPermissionMissing    = errorsv1.ErrorReason_ERROR_REASON_PERMISSION_MISSING
	ReasonMethodNotAuthorized  = errorsv1.ErrorReason_ERROR_REASON_METHOD_NOT_AUTHORIZED
	// ReasonSessionInvalid: a console session token that is unknown or expired.
	ReasonSessionInvalid = errorsv1.ErrorReason_ERROR_REASON_CONSOLE_SESSION_INVALID
	// ReasonAuthenticatorMissing is the reason of the refusal of a server
	// built without an Authenticator.
	ReasonAuthenticatorMissing = errorsv1.ErrorReason_ERROR_REASON_AUTHENTICATOR_NOT_CONFIGURED
)

// Reasons of the size and character checks (limits, validation).
const (
	ReasonFieldTooLarge    = errorsv1.ErrorReason_ERROR_REASON_FIELD_TOO_LARGE
	ReasonInvalidCharacter = errorsv1.ErrorReason_ERROR_REASON_INVALID_CHARACTER
	// ReasonRequestTooLarge is the reason of a request message over its
	// method's bound: that of the HTTP side's 413.
	ReasonRequestTooLarge = errorsv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE
	// ReasonUploadsBusy is the reason of the RESOURCE_EXHAUSTED a call of a
	// large-payload method gets while the bound of them are in flight: that
	// of the HTTP side's 503 (gateway).
	ReasonUploadsBusy = errorsv1.ErrorReason_ERROR_REASON_UPLOADS_BUSY
	// ReasonInvalidField: a request field breaks its protovalidate
	// constraint.
	ReasonInvalidField = errorsv1.ErrorReason_ERROR_REASON_INVALID_FIELD
)
