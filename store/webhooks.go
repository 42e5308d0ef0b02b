package store

import (
	"context"
	"time"
)

// Webhook is a URL subscribed to the run (Runs) and exception (Exceptions)
// events of a workspace. The backends write a WebhookDelivery for every
// such event in the transaction of the change itself.
type Webhook struct {
	OrganizationID string
	WorkspaceID    string
	ID             string
	DisplayName    string
	URL            string
	Runs           bool
	Exceptions     bool
	Secret         string
	CreateTime     time.Time
}

// The states of a delivery.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// The event types of deliveries.
const (
	EventRunStateChanged       = "run.state_changed"
	EventExceptionStateChanged = "exception.state_changed"
)

// WebhookDelivery is one event for one webhook.
type WebhookDelivery struct {
	ID             string
	OrganizationID string
	WorkspaceID    string
	WebhookID      string
	EventType      string // EventRunStateChanged or EventExceptionStateChanged
	AutomationID   string
	RunID          string
	ExceptionID    string // exception events only
	ResourceState  string // the run's or exception's new state
	State          string // DeliveryPending, DeliverySucceeded, DeliveryFailed
	Attempts       int
	LastStatusCode int
	LastError      string
	// NextAttemptTime: when a pending delivery is due.
	NextAttemptTime time.Time
	CreateTime      time.Time
	UpdateTime      time.Time
	// Sequence is the delivery's number among the deliveries of its run to
	// its webhook, from 1, in the order they were written (the same at
	// every attempt). Set by ClaimWebhookDeliveries only.
	Sequence int
}

// WebhookAttempt is the outcome of one attempt.
type WebhookAttempt struct {
	State      string // the delivery's state after it
	StatusCode int
	Error      string
	// NextAttemptTime of a delivery still pending.
	NextAttemptTime time.Time
}

// Webhooks stores webhooks and their deliveries.
type Webhooks interface {
	// CreateWebhook inserts w (ID generated when empty). ErrNotFound if the
	// workspace does not exist.
	CreateWebhook(ctx context.Context, w Webhook) (Webhook, error)
	// GetWebhook: ErrNotFound if absent.
	GetWebhook(ctx context.Context, organizationID, workspaceID, id string) (Webhook, error)
	// ListWebhooks returns the webhooks of a workspace, newest first.
	ListWebhooks(ctx context.Context, organizationID, workspaceID string) ([]Webhook, error)
	// DeleteWebhook deletes it and its deliveries. ErrNotFound if absent.
	DeleteWebhook(ctx context.Context, organizationID, workspaceID, id string) error
	// ClaimWebhookDeliveries leases at most limit pending deliveries due at
	// now (not leased, or their lease ended) until now+lease, earliest first;
	// a delivery is leased by one claimer at a time.
	ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]WebhookDelivery, error)
	// FinishWebhookAttempt records an attempt of a leased delivery: one more
	// attempt, its outcome, and the lease released.
	FinishWebhookAttempt(ctx context.Context, id string, a WebhookAttempt) error
	// ListWebhookDeliveries pages through the deliveries of a webhook,
	// newest first.
	ListWebhookDeliveries(ctx context.Context, organizationID, workspaceID, webhookID string, pageSize int, pageToken string) (Page[WebhookDelivery], error)
	// RedeliverWebhookDelivery makes a delivery that succeeded or failed
	// pending again, due at once, its attempts counted from 0 (same id,
	// same event). ErrNotFound if the webhook has no such delivery;
	// ErrFailedPrecondition if it is still pending.
	RedeliverWebhookDelivery(ctx context.Context, organizationID, workspaceID, webhookID, id string) (WebhookDelivery, error)
}
