package sqlfilter

import "github.com/proserun/prose/store"

// The allow-list of every list method with a filter: one per resource. The
// field names are those of the list requests' documentation (store); what a
// condition on each field selects is the backend's (the SQL stores:
// store/internal/sqlstore).

var (
	exactOps   = []store.Op{OpEq, OpNe}
	textOps    = []store.Op{OpEq, OpNe, OpHas}
	orderedOps = []store.Op{OpEq, OpNe, OpLt, OpLe, OpGt, OpGe}
)

// Workspaces is the filter of ListWorkspaces: title with = and != (exact)
// and : (case-insensitive contains).
var Workspaces = mustResource("workspaces",
	Field{Name: "title", Kind: String, Ops: textOps},
)

var roleScopes = map[string]string{
	"organization": "organization", "workspace": "workspace",
	"ROLE_SCOPE_ORGANIZATION": "organization", "ROLE_SCOPE_WORKSPACE": "workspace",
}

// usersResource is the filter of a list of members: role (role name,
// case-insensitive exact: an organization role, or a workspace role in the
// workspace, or for the organization's list in any workspace), role_scope
// (organization | workspace: has a role of that scope), search (":"
// partial match on display name or e-mail).
func usersResource(name string) *Resource {
	return mustResource(name,
		Field{Name: "role", Kind: String, Ops: exactOps},
		Field{Name: "role_scope", Kind: Enum, Ops: exactOps, Values: roleScopes},
		Field{Name: "search", Kind: String, Ops: []store.Op{OpHas}},
	)
}

// WorkspaceUsers is the filter of ListWorkspaceUsers.
var WorkspaceUsers = usersResource("workspace users")

// OrganizationUsers is the filter of ListOrganizationUsers.
var OrganizationUsers = usersResource("organization users")

var exceptionStates = map[string]string{
	"PENDING": "PENDING", "RESOLVED": "RESOLVED", "ARCHIVED": "ARCHIVED",
	"EXCEPTION_STATE_PENDING": "PENDING", "EXCEPTION_STATE_RESOLVED": "RESOLVED", "EXCEPTION_STATE_ARCHIVED": "ARCHIVED",
}

// Exceptions is the filter of ListExceptions, the counts and the batch
// methods, as the seed gives it: state (short or full enum names; = != < <=
// > >=, ordered as the enum: PENDING < RESOLVED < ARCHIVED), automation,
// run and group (= and != only; ids or whole resource names, see
// NameFields; group = "" selects
// ungrouped exceptions, group != "" the grouped ones), create_time (RFC
// 3339 with Z or an offset; = != < <= > >=), assignee (users/{user}, or
// "" for the unassigned; = and !=), resolver (users/{u}, agents/{a} or
// guideEntries/{g}; = and !=: the console lists the runs a learning
// resolved with it).
var Exceptions = mustResource("exceptions",
	Field{Name: "state", Kind: Enum, Ops: orderedOps, Values: exceptionStates},
	Field{Name: "automation", Kind: String, Ops: exactOps, Names: ExceptionAutomationName},
	Field{Name: "run", Kind: String, Ops: exactOps, Names: ExceptionRunName},
	Field{Name: "group", Kind: String, Ops: exactOps, Names: ExceptionGroupName},
	Field{Name: "create_time", Kind: Timestamp, Ops: orderedOps},
	Field{Name: "assignee", Kind: String, Ops: exactOps},
	Field{Name: "resolver", Kind: String, Ops: exactOps},
)

// Events is the filter of ListEvents: exception (an exception id or
// resource name; = and !=; exception = "" selects events about no
// exception).
var Events = mustResource("events",
	Field{Name: "exception", Kind: String, Ops: exactOps, Names: EventExceptionName},
)

// RunEvents is the filter of ListRunEvents: node_kind (= and !=; the
// entries of the run's states have none, those of exceptions "Exception").
var RunEvents = mustResource("run events",
	Field{Name: "node_kind", Kind: String, Ops: exactOps},
)

var runStates = map[string]string{
	"pending": "pending", "executing": "executing", "stopping": "stopping", "stopped": "stopped",
	"awaiting_guidance": "awaiting_guidance", "completed": "completed", "failed": "failed",
	"PENDING": "pending", "EXECUTING": "executing", "STOPPING": "stopping", "STOPPED": "stopped",
	"AWAITING_GUIDANCE": "awaiting_guidance", "COMPLETED": "completed", "FAILED": "failed",
}

// Runs is the filter of ListRuns: state (= and !=; pending, executing,
// stopping, stopped, awaiting_guidance, completed, failed, in lower or
// upper case), create_time (RFC 3339; = != < <= > >=), parent_run (a
// run id or resource name; = and !=; parent_run = "" selects the runs no
// run started) and run_number (the run's number in its automation; = !=
// < <= > >=).
var Runs = mustResource("runs",
	Field{Name: "state", Kind: Enum, Ops: exactOps, Values: runStates},
	Field{Name: "parent_run", Kind: String, Ops: exactOps, Names: RunParentName},
	Field{Name: "create_time", Kind: Timestamp, Ops: orderedOps},
	Field{Name: "run_number", Kind: Integer, Ops: orderedOps},
)

// ReplayOutcomes are the outcomes of a replayed run, by their enum names
// (with or without OUTCOME_, any case) as stored.
var replayOutcomes = map[string]string{
	"OUTCOME_UNCHANGED": "unchanged", "OUTCOME_OUTPUTS_DIFFER": "outputs_differ", "OUTCOME_NEW_EXCEPTION": "new_exception",
	"OUTCOME_UNANSWERED_BOOK_CALL": "unanswered_book_call", "OUTCOME_FAILED": "failed",
	"UNCHANGED": "unchanged", "OUTPUTS_DIFFER": "outputs_differ", "NEW_EXCEPTION": "new_exception",
	"UNANSWERED_BOOK_CALL": "unanswered_book_call", "FAILED": "failed",
	"unchanged": "unchanged", "outputs_differ": "outputs_differ", "new_exception": "new_exception",
	"unanswered_book_call": "unanswered_book_call", "failed": "failed",
}

// ReplayResults is the filter of ListAutomationReplayResults: outcome (=
// and !=).
var ReplayResults = mustResource("replay results",
	Field{Name: "outcome", Kind: Enum, Ops: exactOps, Values: replayOutcomes},
)

// ReplayRuns is the filter of ReplayAutomation, which runs it chooses:
// state (completed or failed) and create_time.
var ReplayRuns = mustResource("replayed runs",
	Field{Name: "state", Kind: Enum, Ops: exactOps, Values: map[string]string{"completed": "completed", "failed": "failed",
		"COMPLETED": "completed", "FAILED": "failed", "RUN_STATE_COMPLETED": "completed", "RUN_STATE_FAILED": "failed"}},
	Field{Name: "create_time", Kind: Timestamp, Ops: orderedOps},
)

// Automations is the filter of ListAutomations: display_name with = and !=
// (exact) and : (case-insensitive contains).
var Automations = mustResource("automations",
	Field{Name: "display_name", Kind: String, Ops: textOps},
)

var stages = map[string]string{
	"DRAFT": "draft", "PUBLISHED": "published", "draft": "draft", "published": "published",
	"AUTOMATION_STAGE_DRAFT": "draft", "AUTOMATION_STAGE_PUBLISHED": "published",
}

// AutomationRevisions is the filter of ListAutomationRevisions: stage
// (DRAFT or PUBLISHED, also as AUTOMATION_STAGE_… or in lower case; = and
// !=).
var AutomationRevisions = mustResource("automation revisions",
	Field{Name: "stage", Kind: Enum, Ops: exactOps, Values: stages},
)

var booleans = map[string]string{"true": "true", "false": "false"}

// AutomationTriggers is the filter of ListAutomationTriggers: trigger_id
// and is_active (true or false), = and !=.
var AutomationTriggers = mustResource("automation triggers",
	Field{Name: "trigger_id", Kind: String, Ops: exactOps},
	Field{Name: "is_active", Kind: Enum, Ops: exactOps, Values: booleans},
)

// TriggerInstances is the filter of ListWorkspaceTriggerInstances:
// book_name, connection_id and trigger_id, = and !=.
var TriggerInstances = mustResource("trigger instances",
	Field{Name: "book_name", Kind: String, Ops: exactOps},
	Field{Name: "connection_id", Kind: String, Ops: exactOps},
	Field{Name: "trigger_id", Kind: String, Ops: exactOps},
)

var guideStates = map[string]string{
	"PENDING_APPROVAL": "PENDING_APPROVAL", "APPROVED": "APPROVED", "REJECTED": "REJECTED", "ARCHIVED": "ARCHIVED",
	"STATE_PENDING_APPROVAL": "PENDING_APPROVAL", "STATE_APPROVED": "APPROVED", "STATE_REJECTED": "REJECTED", "STATE_ARCHIVED": "ARCHIVED",
}

// GuideEntries is the filter of ListGuideEntries, as the reference gives
// it: title, resolution_steps, resolution_code, resolution_notes (= !=
// exact, : partial and case-insensitive; the reference's `contains`),
// automation (an id or a whole automation name; = !=), create_time and
// update_time (RFC 3339; = != < <= > >=); and state (short or full enum
// names) and source_exception (an exception id or name), = and !=.
// `title contains 'x'` is `title : 'x'`.
var GuideEntries = mustResource("guide entries",
	Field{Name: "title", Kind: String, Ops: textOps},
	Field{Name: "resolution_steps", Kind: String, Ops: textOps},
	Field{Name: "resolution_code", Kind: String, Ops: textOps},
	Field{Name: "resolution_notes", Kind: String, Ops: textOps},
	Field{Name: "automation", Kind: String, Ops: exactOps, Names: ExceptionAutomationName},
	Field{Name: "state", Kind: Enum, Ops: exactOps, Values: guideStates},
	Field{Name: "source_exception", Kind: String, Ops: exactOps, Names: GuideSourceName},
	Field{Name: "create_time", Kind: Timestamp, Ops: orderedOps},
	Field{Name: "update_time", Kind: Timestamp, Ops: orderedOps},
).WithContains()

// DailyRunAggregates is the filter of QueryDailyRunAggregates:
// automation_id (an automation id or name), = only, joined with OR (the
// server refuses other shapes).
var DailyRunAggregates = mustResource("daily run aggregates",
	Field{Name: "automation_id", Kind: String, Ops: []store.Op{OpEq}},
)

// MetricTags is the filter of QueryMetrics: the tags workspace_id and
// automation_id (ids), = and !=.
var MetricTags = mustResource("metric tags",
	Field{Name: "workspace_id", Kind: String, Ops: exactOps},
	Field{Name: "automation_id", Kind: String, Ops: exactOps},
)
