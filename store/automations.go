package store

import (
	"context"
	"time"
)

// Stage is a publication stage of an automation.
type Stage string

// The stages.
const (
	StageDraft     Stage = "draft"
	StagePublished Stage = "published"
)

// Valid reports whether s is one of the stages.
func (s Stage) Valid() bool { return s == StageDraft || s == StagePublished }

// Automation is a Prose program with a draft and (once published) a published
// stage. Details is an opaque blob the server layer owns (input specs,
// connections, default inputs, …: a marshalled
// prose.persist.v1.AutomationDetails); the store keeps it per stage.
type Automation struct {
	OrganizationID string
	WorkspaceID    string
	ID             string
	DisplayName    string
	Description    string

	// The draft stage.
	Code    string
	Details []byte
	// Version counts changes: every draft update and every publish adds one.
	Version int64

	// The published stage; PublishedVersion is 0 when never published.
	PublishedCode    string
	PublishedDetails []byte
	PublishedVersion int64

	// Share ids name a stage for the legacy interface; unique across the store.
	DraftShareID     string
	PublishedShareID string

	AuthorID      string
	UpdateUserID  string
	PublishUserID string
	CreateTime    time.Time
	UpdateTime    time.Time
	PublishTime   time.Time // zero when never published
	DeleteTime    time.Time // zero unless soft-deleted
}

// ListAutomationsRequest lists the automations of a workspace.
//
// Filter fields (store.Filter): display_name (string; = != :).
type ListAutomationsRequest struct {
	OrganizationID string
	WorkspaceID    string
	ShowDeleted    bool
	Filter         Filter
	OrderBy        OrderBy // nil: AutomationOrdering.Default
	PageSize       int
	PageToken      string
}

// AutomationOrdering is the order_by allow-list of ListAutomations.
var AutomationOrdering = Ordering{
	Fields:  []string{"display_name", "create_time", "update_time"},
	Default: OrderBy{{Field: "update_time", Desc: true}},
}

// Automations stores automations.
type Automations interface {
	// CreateAutomation inserts a (share ids generated when empty; Version
	// 1). An empty ID becomes the first free of Slug(DisplayName),
	// slug-2, slug-3, … in the workspace, a create racing another for one
	// picking again. ErrNotFound if the workspace does not exist;
	// ErrAlreadyExists if a given id is taken in the workspace.
	CreateAutomation(ctx context.Context, a Automation) (Automation, error)
	// GetAutomation returns an automation, soft-deleted ones included.
	// ErrNotFound if absent.
	GetAutomation(ctx context.Context, organizationID, workspaceID, id string) (Automation, error)
	// GetAutomationByShareID returns the automation a share id belongs to and
	// the stage it names. ErrNotFound if no automation has it or the
	// automation is deleted.
	GetAutomationByShareID(ctx context.Context, shareID string) (Automation, Stage, error)
	// ListAutomations pages through automations, deleted ones only with
	// ShowDeleted. ErrInvalidArgument for a bad token.
	ListAutomations(ctx context.Context, req ListAutomationsRequest) (Page[Automation], error)
	// UpdateAutomation writes the draft fields named in mask ("display_name",
	// "description", "code", "details"; empty: all four), adds one to Version
	// and sets UpdateUserID and UpdateTime. ErrNotFound if absent or deleted.
	UpdateAutomation(ctx context.Context, a Automation, mask []string) (Automation, error)
	// PublishAutomation copies the draft to the published stage, adds one to
	// Version and sets PublishedVersion to it. ErrNotFound if absent or
	// deleted.
	PublishAutomation(ctx context.Context, organizationID, workspaceID, id, userID string) (Automation, error)
	// DeleteAutomation soft-deletes. ErrNotFound if absent or already deleted.
	DeleteAutomation(ctx context.Context, organizationID, workspaceID, id string) (Automation, error)
}

// AutomationRevision is an immutable snapshot of one stage of an automation
// (AIP-162), written in the transaction of every save (CreateAutomation,
// UpdateAutomation: StageDraft) and publish (PublishAutomation:
// StagePublished). Version is the automation's version after that change:
// unique in the automation, larger for newer revisions.
type AutomationRevision struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	Version        int64
	Stage          Stage
	DisplayName    string
	Description    string
	Code           string
	Details        []byte
	UserID         string // who saved or published
	CreateTime     time.Time
	// Tests are the automation's tests as they stood (see AutomationTests).
	Tests []AutomationTest
	// PublishCheck is what the publish that made a published revision
	// checked (PublishCheckedAutomation; nil: nothing recorded), opaque.
	PublishCheck []byte
}

// ListAutomationRevisionsRequest lists the revisions of an automation,
// newest first.
//
// Filter fields (store.Filter): stage (a Stage; = !=).
type ListAutomationRevisionsRequest struct {
	OrganizationID string
	WorkspaceID    string
	AutomationID   string
	Filter         Filter
	PageSize       int
	PageToken      string
}

// AutomationRevisions reads the revisions of automations.
type AutomationRevisions interface {
	// ListAutomationRevisions pages through an automation's revisions,
	// newest (largest version) first. ErrNotFound if the automation does not
	// exist; ErrInvalidArgument for a bad token.
	ListAutomationRevisions(ctx context.Context, req ListAutomationRevisionsRequest) (Page[AutomationRevision], error)
	// GetAutomationRevision returns the revision of an automation with that
	// version; version 0 means the newest. ErrNotFound if absent.
	GetAutomationRevision(ctx context.Context, organizationID, workspaceID, automationID string, version int64) (AutomationRevision, error)
}
