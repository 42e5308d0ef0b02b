// Reasons of the services' errors, in one place: each is a value of the
// prose.errors.v1 ErrorReason enum (the contract), named here so that a
// handler reads ReasonRunNotFound, not the generated constant. Reasons of
// the transport layer itself (authentication, validation, limits) are in
// server/transport/reasons.go.

package server

import errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"

// Reasons of the automation and run services' errors.
const (
	ReasonAutomationNotFound     = errorsv1.ErrorReason_ERROR_REASON_AUTOMATION_NOT_FOUND
	ReasonAutomationExists       = errorsv1.ErrorReason_ERROR_REASON_AUTOMATION_ALREADY_EXISTS
	ReasonAutomationNotPublished = errorsv1.ErrorReason_ERROR_REASON_AUTOMATION_NOT_PUBLISHED
	ReasonCodeSyntaxError        = errorsv1.ErrorReason_ERROR_REASON_CODE_SYNTAX_ERROR
	ReasonRunNotFound            = errorsv1.ErrorReason_ERROR_REASON_RUN_NOT_FOUND
	ReasonRunStateConflict       = errorsv1.ErrorReason_ERROR_REASON_RUN_STATE_CONFLICT
	ReasonShareIDNotFound        = errorsv1.ErrorReason_ERROR_REASON_SHARE_ID_NOT_FOUND
)

// Reasons of the book service's errors.
const (
	ReasonBookNotFound       = errorsv1.ErrorReason_ERROR_REASON_BOOK_NOT_FOUND
	ReasonBookAlreadyExists  = errorsv1.ErrorReason_ERROR_REASON_BOOK_ALREADY_EXISTS
	ReasonInvalidBook        = errorsv1.ErrorReason_ERROR_REASON_INVALID_BOOK
	ReasonInvalidFilter      = errorsv1.ErrorReason_ERROR_REASON_INVALID_FILTER
	ReasonInvalidPageToken   = errorsv1.ErrorReason_ERROR_REASON_INVALID_PAGE_TOKEN
	ReasonInvalidPageSize    = errorsv1.ErrorReason_ERROR_REASON_INVALID_PAGE_SIZE
	ReasonInvalidUpdateMask  = errorsv1.ErrorReason_ERROR_REASON_INVALID_UPDATE_MASK
	ReasonBuiltinBookChanged = errorsv1.ErrorReason_ERROR_REASON_BUILTIN_BOOK_READ_ONLY
)

// Reasons of the connection service's errors.
const (
	ReasonConnectionNotFound      = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_NOT_FOUND
	ReasonConnectionAlreadyExists = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_ALREADY_EXISTS
	ReasonInvalidConnection       = errorsv1.ErrorReason_ERROR_REASON_INVALID_CONNECTION
	ReasonConnectionLimit         = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_LIMIT_REACHED
	// ReasonWorkspaceLimit: a workspace has as many webhooks or trigger
	// instances as it may.
	ReasonWorkspaceLimit      = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_LIMIT_REACHED
	ReasonConnectionInUse     = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_IN_USE
	ReasonConnectionSecretKey = errorsv1.ErrorReason_ERROR_REASON_CONNECTION_SECRET_KEY_MISSING
)

// Error reasons of the event service.
const (
	ReasonEventNotFound        = errorsv1.ErrorReason_ERROR_REASON_EVENT_NOT_FOUND
	ReasonAgentNotFound        = errorsv1.ErrorReason_ERROR_REASON_AGENT_NOT_FOUND
	ReasonEventMessageTooLarge = errorsv1.ErrorReason_ERROR_REASON_EVENT_MESSAGE_TOO_LARGE
)

// Reasons of the exception service's errors.
const (
	ReasonExceptionNotFound      = errorsv1.ErrorReason_ERROR_REASON_EXCEPTION_NOT_FOUND
	ReasonExceptionStateConflict = errorsv1.ErrorReason_ERROR_REASON_EXCEPTION_STATE_CONFLICT
	ReasonGuidanceMismatch       = errorsv1.ErrorReason_ERROR_REASON_GUIDANCE_DOES_NOT_FIT
	ReasonAssigneeNotMember      = errorsv1.ErrorReason_ERROR_REASON_ASSIGNEE_NOT_A_MEMBER
)

// Reasons of the file errors.
const (
	ReasonFileNotFound    = errorsv1.ErrorReason_ERROR_REASON_FILE_NOT_FOUND
	ReasonFileTooLarge    = errorsv1.ErrorReason_ERROR_REASON_FILE_TOO_LARGE
	ReasonFileNotUploaded = errorsv1.ErrorReason_ERROR_REASON_FILE_NOT_UPLOADED
	ReasonFilenameInvalid = errorsv1.ErrorReason_ERROR_REASON_FILENAME_INVALID
)

// Reasons of the signed URL errors.
const (
	ReasonSignedURLMalformed = errorsv1.ErrorReason_ERROR_REASON_SIGNED_URL_MALFORMED
	ReasonSignedURLInvalid   = errorsv1.ErrorReason_ERROR_REASON_SIGNED_URL_SIGNATURE_INVALID
	ReasonSignedURLExpired   = errorsv1.ErrorReason_ERROR_REASON_SIGNED_URL_EXPIRED
	ReasonSignedURLOperation = errorsv1.ErrorReason_ERROR_REASON_SIGNED_URL_WRONG_OPERATION
	ReasonUploadFormInvalid  = errorsv1.ErrorReason_ERROR_REASON_UPLOAD_FORM_INVALID
	// ReasonUploadURLUsed: a legacy upload URL (/v1/upload, /v2/files) takes
	// one upload; the file already has its bytes.
	ReasonUploadURLUsed = errorsv1.ErrorReason_ERROR_REASON_UPLOAD_URL_USED
)

// Reasons of the guide entry service's errors.
const (
	ReasonGuideEntryNotFound      = errorsv1.ErrorReason_ERROR_REASON_GUIDE_ENTRY_NOT_FOUND
	ReasonGuideEntryStateConflict = errorsv1.ErrorReason_ERROR_REASON_GUIDE_ENTRY_STATE_CONFLICT
	ReasonGuidanceNotRememberable = errorsv1.ErrorReason_ERROR_REASON_GUIDANCE_NOT_REMEMBERABLE
)

// Reasons of the insights' errors.
const (
	ReasonInvalidTimeZone = errorsv1.ErrorReason_ERROR_REASON_INVALID_TIME_ZONE
	ReasonInvalidEstimate = errorsv1.ErrorReason_ERROR_REASON_INVALID_ESTIMATE
)

// ReasonRevisionNotFound is the reason of a revision that does not exist.
const (
	ReasonRevisionNotFound = errorsv1.ErrorReason_ERROR_REASON_REVISION_NOT_FOUND
)

// Error reasons of the schedule service.
const (
	ReasonScheduleNotFound = errorsv1.ErrorReason_ERROR_REASON_SCHEDULE_NOT_FOUND
	ReasonScheduleExists   = errorsv1.ErrorReason_ERROR_REASON_SCHEDULE_ALREADY_EXISTS
	ReasonInvalidSchedule  = errorsv1.ErrorReason_ERROR_REASON_INVALID_SCHEDULE
)

// Error reasons of the trigger service.
const (
	ReasonTriggerInstanceNotFound = errorsv1.ErrorReason_ERROR_REASON_TRIGGER_INSTANCE_NOT_FOUND
	ReasonTriggerInstanceExists   = errorsv1.ErrorReason_ERROR_REASON_TRIGGER_INSTANCE_ALREADY_EXISTS
	ReasonTriggerBookUnknown      = errorsv1.ErrorReason_ERROR_REASON_TRIGGER_BOOK_UNKNOWN
	ReasonInvalidTrigger          = errorsv1.ErrorReason_ERROR_REASON_INVALID_TRIGGER
)

// Error reasons of the webhook service.
const (
	ReasonWebhookNotFound = errorsv1.ErrorReason_ERROR_REASON_WEBHOOK_NOT_FOUND
	// ReasonWebhookDeliveryNotFound: the webhook has no such delivery.
	ReasonWebhookDeliveryNotFound = errorsv1.ErrorReason_ERROR_REASON_WEBHOOK_DELIVERY_NOT_FOUND
	ReasonInvalidWebhook          = errorsv1.ErrorReason_ERROR_REASON_INVALID_WEBHOOK
)

// Reasons of the identity services' errors.
const (
	ReasonOrganizationNotFound = errorsv1.ErrorReason_ERROR_REASON_ORGANIZATION_NOT_FOUND
	ReasonWorkspaceNotFound    = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_NOT_FOUND
	ReasonWorkspaceExists      = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_ALREADY_EXISTS
	ReasonUserNotFound         = errorsv1.ErrorReason_ERROR_REASON_USER_NOT_FOUND
	ReasonMemberNotFound       = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_USER_NOT_FOUND
	ReasonMemberExists         = errorsv1.ErrorReason_ERROR_REASON_WORKSPACE_USER_ALREADY_EXISTS
	ReasonInvitationNotFound   = errorsv1.ErrorReason_ERROR_REASON_INVITATION_NOT_FOUND
	ReasonInvitationExists     = errorsv1.ErrorReason_ERROR_REASON_INVITATION_ALREADY_EXISTS
	ReasonRoleNotFound         = errorsv1.ErrorReason_ERROR_REASON_ROLE_NOT_FOUND
	ReasonAPIKeyNotFound       = errorsv1.ErrorReason_ERROR_REASON_API_KEY_NOT_FOUND
	ReasonAPIKeyLimit          = errorsv1.ErrorReason_ERROR_REASON_API_KEY_LIMIT_REACHED
	ReasonInvalidOrderBy       = errorsv1.ErrorReason_ERROR_REASON_INVALID_ORDER_BY
	ReasonInvalidField         = errorsv1.ErrorReason_ERROR_REASON_INVALID_FIELD
	ReasonFailedPrecondition   = errorsv1.ErrorReason_ERROR_REASON_FAILED_PRECONDITION
	ReasonConflict             = errorsv1.ErrorReason_ERROR_REASON_CONFLICT
	ReasonStoreUnavailable     = errorsv1.ErrorReason_ERROR_REASON_STORE_UNAVAILABLE
	ReasonDatabaseUnavailable  = errorsv1.ErrorReason_ERROR_REASON_DATABASE_UNAVAILABLE
	ReasonRequestIDReused      = errorsv1.ErrorReason_ERROR_REASON_REQUEST_ID_REUSED
)
