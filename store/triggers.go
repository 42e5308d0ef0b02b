package store

import (
	"context"
	"time"
)

// TriggerInstance is one configured source of events of a workspace: an
// inbound webhook (book "webhook"). Configuration is opaque bytes (the
// server marshals the instance's configuration map and filter as a
// prose.persist.v1.TriggerConfig); Secret signs the
// bodies of inbound deliveries (HMAC-SHA256) and is never listed.
type TriggerInstance struct {
	OrganizationID string
	WorkspaceID    string
	ID             string
	Name           string
	BookName       string
	BookVersion    string
	ConnectionID   string
	TriggerID      string
	Configuration  []byte
	Secret         string
	// AutomationIDs are the automations an event starts, in the order set.
	AutomationIDs []string
	CreateTime    time.Time
	UpdateTime    time.Time
}

// AutomationTrigger is how a trigger instance (TriggerID) starts an
// automation: InputMapping maps input names to JSON Pointers into the
// event's body.
type AutomationTrigger struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	TriggerID      string
	InputMapping   map[string]string
	PhaseType      int32
	PhaseSubType   int32
	IsActive       bool
	CreateTime     time.Time
	UpdateTime     time.Time
}

// ListAutomationTriggersRequest lists the triggers of an automation, by
// trigger id.
//
// Filter fields (store.Filter): trigger_id (= !=), is_active (= !=; "true"
// or "false").
type ListAutomationTriggersRequest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	Filter         Filter
	PageSize       int
	PageToken      string
}

// Triggers stores trigger instances and automation triggers.
type Triggers interface {
	// CreateTriggerInstance inserts t (ID generated when empty).
	// ErrNotFound if the workspace does not exist; ErrAlreadyExists if the id
	// is taken.
	CreateTriggerInstance(ctx context.Context, t TriggerInstance) (TriggerInstance, error)
	// GetTriggerInstance: ErrNotFound if absent.
	GetTriggerInstance(ctx context.Context, organizationID, workspaceID, id string) (TriggerInstance, error)
	// SetTriggerInstanceAutomations replaces the automations of an instance.
	// ErrNotFound if it is absent.
	SetTriggerInstanceAutomations(ctx context.Context, organizationID, workspaceID, id string, automationIDs []string) (TriggerInstance, error)
	// DeleteTriggerInstance deletes the instance of the connection.
	// ErrNotFound if absent.
	DeleteTriggerInstance(ctx context.Context, organizationID, workspaceID, connectionID, id string) error
	// ListTriggerInstances returns the instances of a workspace by id
	// (filter fields: book_name, connection_id, trigger_id; = and !=).
	ListTriggerInstances(ctx context.Context, organizationID, workspaceID string, f Filter) ([]TriggerInstance, error)
	// ListTriggerInstancesOfBooks returns the instances of the given trigger
	// books in every organization, by organization, workspace and id (the
	// message listeners of every replica).
	ListTriggerInstancesOfBooks(ctx context.Context, books []string) ([]TriggerInstance, error)
	// PutAutomationTrigger creates or replaces the trigger of an automation
	// for t.TriggerID. ErrNotFound if the automation does not exist.
	PutAutomationTrigger(ctx context.Context, t AutomationTrigger) (AutomationTrigger, error)
	// GetAutomationTrigger: ErrNotFound if absent.
	GetAutomationTrigger(ctx context.Context, organizationID, workspaceID, automationID, triggerID string) (AutomationTrigger, error)
	// ListAutomationTriggers pages through the triggers of an automation.
	ListAutomationTriggers(ctx context.Context, req ListAutomationTriggersRequest) (Page[AutomationTrigger], error)
}
