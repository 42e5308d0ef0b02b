package auth

import (
	"strings"

	"github.com/proserun/prose/store"
)

// Access is what an RPC needs from its caller.
type Access struct {
	// Permission the caller's roles must grant (in the workspace the request
	// names, or in the organization when it names none). "" means any
	// authenticated caller of the organization.
	Permission string
	// Write calls are refused to read-only keys.
	Write bool
	// AllWorkspaces calls are refused to keys scoped to specific workspaces
	// (they create or span workspaces the scope cannot name).
	AllWorkspaces bool
	// Deferred: the request names no workspace although the permission is a
	// workspace one (legacy v1 share ids, v2 run ids). The auth layer checks
	// the key's level; the handler, once it has resolved the workspace, calls
	// RequireWorkspace(ctx, workspaceID, Permission).
	Deferred bool
}

// IsReadMethod applies the naming rule: Get, List, Query, Count, Stream and Search
// methods read, and so do the readExceptions; everything else writes.
func IsReadMethod(fullMethod string) bool {
	if readExceptions[fullMethod] {
		return true
	}
	name := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	for _, p := range []string{"Get", "List", "Query", "Count", "Stream", "Search"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// readExceptions are methods the naming rule calls writes although they
// only read (a download is a read).
var readExceptions = map[string]bool{
	"/prose.platform.v1.FileService/DownloadFile":                       true,
	"/prose.platform.v1.FileService/GenerateDownloadUrl":                true,
	"/prose.book.v1.ConnectionService/TraceConnectionUsage":             true,
	"/prose.book.v1.ConnectionService/ExtractAutomationCodeConnections": true,
	"/prose.book.v1.ConnectionService/CheckWorkspaceBookConnection":     true, // changes nothing, as discoverables
	"/prose.platform.v1.AutomationTestService/RunAutomationTests":       true,
}

func r(perm string) Access { return Access{Permission: perm} }
func w(perm string) Access { return Access{Permission: perm, Write: true} }

// MethodAccess maps every RPC of the contract (except the public ones) to
// what it needs. A method missing from the table is refused
// (PERMISSION_DENIED): new RPCs are closed until someone decides.
// TestMethodAccessCoversContract keeps it complete and consistent with
// IsReadMethod.
var MethodAccess = map[string]Access{
	// Workspaces.
	"/prose.platform.v1.WorkspaceService/ListWorkspaces":             r(store.PermWorkspacesList),
	"/prose.platform.v1.WorkspaceService/GetWorkspace":               r(store.PermWorkspacesGet),
	"/prose.platform.v1.WorkspaceService/ListCurrentUserWorkspaces":  r(""),
	"/prose.platform.v1.WorkspaceService/CreateWorkspace":            {Permission: store.PermWorkspacesCreate, Write: true, AllWorkspaces: true},
	"/prose.platform.v1.WorkspaceService/UpdateWorkspace":            w(store.PermWorkspacesUpdate),
	"/prose.platform.v1.WorkspaceService/DeleteWorkspace":            w(store.PermWorkspacesDelete),
	"/prose.platform.v1.WorkspaceService/GetWorkspacePreferences":    r(store.PermWorkspacesGet),
	"/prose.platform.v1.WorkspaceService/UpdateWorkspacePreferences": w(store.PermPreferencesUpdate),
	"/prose.platform.v1.WorkspaceService/ListWorkspaceInvites":       r(store.PermWorkspacesGet),
	"/prose.platform.v1.WorkspaceService/CreateWorkspaceInvite":      w(store.PermInvitationsManage),
	"/prose.platform.v1.WorkspaceService/DeleteWorkspaceInvite":      w(store.PermInvitationsManage),
	"/prose.platform.v1.WorkspaceService/ListWorkspaceRoles":         r(store.PermWorkspacesGet),
	"/prose.platform.v1.WorkspaceService/ListWorkspaceUsers":         r(store.PermWorkspacesGet),
	"/prose.platform.v1.WorkspaceService/CreateWorkspaceUser":        w(store.PermMembersManage),
	"/prose.platform.v1.WorkspaceService/UpdateWorkspaceUser":        w(store.PermMembersManage),
	"/prose.platform.v1.WorkspaceService/DeleteWorkspaceUser":        w(store.PermMembersManage),
	"/prose.platform.v1.WorkspaceService/CountWorkspaceUsers":        r(store.PermWorkspacesGet),

	// Organizations.
	"/prose.platform.v1.OrganizationService/GetOrganization":              r(store.PermOrganizationsGet),
	"/prose.platform.v1.OrganizationService/ListCurrentUserOrganizations": r(""),
	"/prose.platform.v1.OrganizationService/ListOrganizationUsers":        r(store.PermOrganizationsGet),
	"/prose.platform.v1.OrganizationService/ListOrganizationRoles":        r(store.PermOrganizationsGet),
	"/prose.platform.v1.OrganizationService/ListOrganizationInvites":      r(store.PermOrganizationsGet),
	"/prose.platform.v1.OrganizationService/GetCurrentUserPermissions":    r(""),
	"/prose.platform.v1.OrganizationService/GetOrganizationPreferences":   r(store.PermOrganizationsGet),
	"/prose.platform.v1.OrganizationService/GetInvitation":                r(store.PermOrganizationsGet),
	"/prose.platform.v1.OrganizationService/GetUserBasicInfo":             r(store.PermOrganizationsGet),

	// API keys (a user's own keys).
	"/prose.platform.v1.ApiKeyService/CreateApiKey": w(store.PermAPIKeysManage),
	"/prose.platform.v1.ApiKeyService/ListApiKeys":  r(store.PermAPIKeysManage),
	"/prose.platform.v1.ApiKeyService/GetApiKey":    r(store.PermAPIKeysManage),
	"/prose.platform.v1.ApiKeyService/UpdateApiKey": w(store.PermAPIKeysManage),
	"/prose.platform.v1.ApiKeyService/DeleteApiKey": w(store.PermAPIKeysManage),

	// Runs.
	"/prose.platform.v1.RunService/GetRun":      r(store.PermRunsGet),
	"/prose.platform.v1.RunService/ListRuns":    r(store.PermRunsGet),
	"/prose.platform.v1.RunService/PauseRun":    w(store.PermRunsManage),
	"/prose.platform.v1.RunService/ContinueRun": w(store.PermRunsManage),

	"/prose.platform.v1.RunHistoryService/ListRunEvents":       r(store.PermRunsGet),
	"/prose.platform.v1.RunHistoryService/GetExecutionOutputs": r(store.PermRunsGet),

	// Automations.
	"/prose.platform.v1.AutomationService/CreateAutomation":           w(store.PermAutomationsWrite),
	"/prose.platform.v1.AutomationService/GetAutomation":              r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationService/QueryAutomation":            r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationService/GetAutomationVisualization": r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationService/ListAutomations":            r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationService/UpdateAutomation":           w(store.PermAutomationsWrite),
	"/prose.platform.v1.AutomationService/PublishAutomation":          w(store.PermAutomationsWrite),
	"/prose.platform.v1.AutomationService/DeleteAutomation":           w(store.PermAutomationsWrite),
	"/prose.platform.v1.AutomationService/InvokeAutomation":           w(store.PermRunsCreate),
	"/prose.platform.v1.AutomationService/ParseAutomationCode":        w(store.PermAutomationsWrite),

	// Revisions are the automation's history; insights count runs. The
	// organization-wide insights name no workspace: each handler keeps the
	// workspaces where the caller's key and roles grant runs.get
	// (RequireWorkspace), and refuses a named one that is not.
	"/prose.platform.v1.AutomationRevisionService/ListAutomationRevisions":  r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationRevisionService/GetAutomationRevision":    r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationRevisionService/ListDefaultInputsHistory": r(store.PermAutomationsGet),
	"/prose.platform.v1.InsightsService/QueryAutomationRunAggregates":       r(store.PermRunsGet),
	"/prose.platform.v1.InsightsService/QueryDailyRunAggregates":            r(store.PermRunsGet),
	"/prose.platform.v1.InsightsService/ConfigureAutomationEstimates":       w(store.PermAutomationsWrite),
	"/prose.platform.v1.InsightsService/QueryInsights":                      {Permission: store.PermRunsGet, Deferred: true},
	"/prose.platform.v1.InsightsService/QueryAutomationEstimates":           {Permission: store.PermRunsGet, Deferred: true},
	"/prose.platform.v1.InsightsService/QueryMetrics":                       {Permission: store.PermRunsGet, Deferred: true},

	// Schedules: reading one is reading its automation; changing one
	// changes what the automation does.
	"/prose.platform.v1.ScheduleService/GetAutomationSchedule":     r(store.PermAutomationsGet),
	"/prose.platform.v1.ScheduleService/CreateAutomationSchedule":  w(store.PermAutomationsWrite),
	"/prose.platform.v1.ScheduleService/UpdateAutomationSchedule":  w(store.PermAutomationsWrite),
	"/prose.platform.v1.ScheduleService/DeleteAutomationSchedule":  w(store.PermAutomationsWrite),
	"/prose.platform.v1.ScheduleService/EnableAutomationSchedule":  w(store.PermAutomationsWrite),
	"/prose.platform.v1.ScheduleService/DisableAutomationSchedule": w(store.PermAutomationsWrite),

	// Triggers: the same, for the triggers of a workspace.
	"/prose.platform.v1.TriggerService/ListAutomationTriggers":                       r(store.PermAutomationsGet),
	"/prose.platform.v1.TriggerService/ListWorkspaceTriggerInstances":                r(store.PermAutomationsGet),
	"/prose.platform.v1.TriggerService/CreateAutomationTrigger":                      w(store.PermAutomationsWrite),
	"/prose.platform.v1.TriggerService/AddWorkspaceBookConnectionTriggerInstance":    w(store.PermAutomationsWrite),
	"/prose.platform.v1.TriggerService/SetAutomationsForTriggerInstance":             w(store.PermAutomationsWrite),
	"/prose.platform.v1.TriggerService/RemoveWorkspaceBookConnectionTriggerInstance": w(store.PermAutomationsWrite),

	// Outbound webhooks: workspace settings that see its runs.
	"/prose.platform.v1.WebhookService/GetWebhook":               r(store.PermRunsGet),
	"/prose.platform.v1.WebhookService/ListWebhooks":             r(store.PermRunsGet),
	"/prose.platform.v1.WebhookService/ListWebhookDeliveries":    r(store.PermRunsGet),
	"/prose.platform.v1.WebhookService/CreateWebhook":            w(store.PermWorkspacesUpdate),
	"/prose.platform.v1.WebhookService/DeleteWebhook":            w(store.PermWorkspacesUpdate),
	"/prose.platform.v1.WebhookService/RedeliverWebhookDelivery": w(store.PermWorkspacesUpdate),

	// Guide entries. Reading and writing one is part of guiding exceptions;
	// approving, rejecting or undeleting one changes what the automation
	// does by itself from then on, as editing it does: automations.write.
	"/prose.platform.v1.GuideEntryService/GetGuideEntry":      r(store.PermExceptionsGet),
	"/prose.platform.v1.GuideEntryService/ListGuideEntries":   r(store.PermExceptionsGet),
	"/prose.platform.v1.GuideEntryService/CreateGuideEntry":   w(store.PermExceptionsResolve),
	"/prose.platform.v1.GuideEntryService/UpdateGuideEntry":   w(store.PermExceptionsResolve),
	"/prose.platform.v1.GuideEntryService/DeleteGuideEntry":   w(store.PermExceptionsResolve),
	"/prose.platform.v1.GuideEntryService/UndeleteGuideEntry": w(store.PermAutomationsWrite),
	"/prose.platform.v1.GuideEntryService/ApproveGuideEntry":  w(store.PermAutomationsWrite),
	"/prose.platform.v1.GuideEntryService/RejectGuideEntry":   w(store.PermAutomationsWrite),

	// Safe change: an automation's tests are part of its draft; running
	// them reads it (a test calls no book and writes nothing). A replay
	// reads the runs' recorded values and keeps its results: runs.get, for
	// a key that may write (the handler also asks automations.get).
	// Making a test of a guide entry writes the draft.
	"/prose.platform.v1.AutomationTestService/GetAutomationTest":                  r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationTestService/ListAutomationTests":                r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationTestService/CreateAutomationTest":               w(store.PermAutomationsWrite),
	"/prose.platform.v1.AutomationTestService/UpdateAutomationTest":               w(store.PermAutomationsWrite),
	"/prose.platform.v1.AutomationTestService/DeleteAutomationTest":               w(store.PermAutomationsWrite),
	"/prose.platform.v1.AutomationTestService/RunAutomationTests":                 r(store.PermAutomationsGet),
	"/prose.platform.v1.AutomationTestService/ReplayAutomation":                   w(store.PermRunsGet),
	"/prose.platform.v1.AutomationTestService/GetAutomationReplay":                r(store.PermRunsGet),
	"/prose.platform.v1.AutomationTestService/ListAutomationReplayResults":        r(store.PermRunsGet),
	"/prose.platform.v1.AutomationTestService/CreateAutomationTestFromGuideEntry": w(store.PermAutomationsWrite),

	// Exceptions. Archiving an exception abandons its run: runs.archive.
	"/prose.platform.v1.ExceptionService/GetException":                r(store.PermExceptionsGet),
	"/prose.platform.v1.ExceptionService/ListExceptions":              r(store.PermExceptionsGet),
	"/prose.platform.v1.ExceptionService/ListExceptionGroups":         r(store.PermExceptionsGet),
	"/prose.platform.v1.ExceptionService/CountExceptionsByGroup":      r(store.PermExceptionsGet),
	"/prose.platform.v1.ExceptionService/CountExceptionsByAutomation": r(store.PermExceptionsGet),
	"/prose.platform.v1.ExceptionService/ResolveException":            w(store.PermExceptionsResolve),
	"/prose.platform.v1.ExceptionService/ArchiveException":            w(store.PermRunsArchive),
	"/prose.platform.v1.ExceptionService/UnarchiveException":          w(store.PermRunsArchive),
	"/prose.platform.v1.ExceptionService/AssignException":             w(store.PermExceptionsResolve),
	"/prose.platform.v1.ExceptionService/BatchArchiveExceptions":      w(store.PermRunsArchive),
	"/prose.platform.v1.ExceptionService/BatchUnarchiveExceptions":    w(store.PermRunsArchive),
	"/prose.platform.v1.ExceptionService/BatchAssignExceptions":       w(store.PermExceptionsResolve),

	// Conversation events.
	"/prose.platform.v1.EventService/ListEvents":       r(store.PermExceptionsGet),
	"/prose.platform.v1.EventService/GetEvent":         r(store.PermExceptionsGet),
	"/prose.platform.v1.EventService/StreamEvents":     r(store.PermExceptionsGet),
	"/prose.platform.v1.EventService/CreateEvent":      w(store.PermExceptionsResolve),
	"/prose.platform.v1.EventService/CancelGeneration": w(store.PermExceptionsResolve),

	// Files.
	// Files: the request names a file (or makes one) but not its workspace:
	// the handler checks the file's workspace (Deferred, see server/file_service_scope.go).
	"/prose.platform.v1.FileService/UploadFile":          {Permission: store.PermRunsCreate, Write: true, Deferred: true},
	"/prose.platform.v1.FileService/DownloadFile":        {Permission: store.PermRunsGet, Deferred: true},
	"/prose.platform.v1.FileService/GetFileMetadata":     {Permission: store.PermRunsGet, Deferred: true},
	"/prose.platform.v1.FileService/DeleteFile":          {Permission: store.PermRunsCreate, Write: true, Deferred: true},
	"/prose.platform.v1.FileService/GenerateUploadUrl":   {Permission: store.PermRunsCreate, Write: true, Deferred: true},
	"/prose.platform.v1.FileService/GenerateDownloadUrl": {Permission: store.PermRunsGet, Deferred: true},

	// Books: the global catalogue is open to every key.
	"/prose.book.v1.BookService/ListBooks":                     r(""),
	"/prose.book.v1.BookService/ListLatestBooks":               r(""),
	"/prose.book.v1.BookService/GetBook":                       r(""),
	"/prose.book.v1.BookService/ListBookProcedures":            r(""),
	"/prose.book.v1.BookService/ListTags":                      r(""),
	"/prose.book.v1.BookService/ListBookVersions":              r(""),
	"/prose.book.v1.BookService/ListBookConcepts":              r(""),
	"/prose.book.v1.BookService/ListWorkspaceBookConcepts":     r(store.PermAutomationsGet),
	"/prose.book.v1.BookService/SearchBooks":                   r(""),
	"/prose.book.v1.BookService/SearchBookConcepts":            r(""),
	"/prose.book.v1.BookService/SearchWorkspaceBookConcepts":   r(store.PermAutomationsGet),
	"/prose.book.v1.BookService/SearchBookProcedures":          r(""),
	"/prose.book.v1.BookService/ListWorkspaceBooks":            r(store.PermAutomationsGet),
	"/prose.book.v1.BookService/ListWorkspaceBookProcedures":   r(store.PermAutomationsGet),
	"/prose.book.v1.BookService/SearchWorkspaceBooks":          r(store.PermAutomationsGet),
	"/prose.book.v1.BookService/SearchWorkspaceBookProcedures": r(store.PermAutomationsGet),
	"/prose.book.v1.BookService/CreateWorkspaceBook":           w(store.PermAutomationsWrite),
	"/prose.book.v1.BookService/UpdateWorkspaceBook":           w(store.PermAutomationsWrite),
	"/prose.book.v1.BookService/DeleteWorkspaceBook":           w(store.PermAutomationsWrite),

	// Connections: reading them (never their credentials) is reading
	// automations; changing them is writing automations.
	"/prose.book.v1.ConnectionService/AddWorkspaceBookConnection":               w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/UpdateWorkspaceBookConnection":            w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/DeleteWorkspaceConnection":                w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/GetWorkspaceBookConnection":               r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/ListWorkspaceBookConnections":             r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/ListAllWorkspaceBookConnections":          r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/UpgradeWorkspaceBookConnection":           w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/ListWorkspaceBookConnectionProcedures":    r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/SearchWorkspaceBookConnectionProcedures":  r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/GetWorkspaceBookConnectionUserInfo":       r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/CountConnectionUsage":                     r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/TraceConnectionUsage":                     r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/ExtractAutomationCodeConnections":         r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/AddAutomationConnections":                 w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/SwitchAutomationConnections":              w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/UpgradeAutomationConnections":             w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/RemoveAutomationConnections":              w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/ListWorkspaceBookConnectionDiscoverables": r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/AuthorizeWorkspaceBookConnection":         w(store.PermAutomationsWrite),
	"/prose.book.v1.ConnectionService/CheckWorkspaceBookConnection":             r(store.PermAutomationsGet),
	"/prose.book.v1.ConnectionService/SetDiscovered":                            w(store.PermAutomationsWrite),

	// Legacy v1: a share id or worker id names the workspace only after a
	// lookup: the handler checks the role (Deferred).
	"/prose.legacy.v1.LegacyService/Invoke":       {Permission: store.PermRunsCreate, Write: true, Deferred: true},
	"/prose.legacy.v1.LegacyService/GetRunStatus": {Permission: store.PermRunsGet, Deferred: true},
	"/prose.legacy.v1.LegacyService/Upload":       {Permission: store.PermRunsCreate, Write: true, Deferred: true},

	// Legacy v2: agent_id is the workspace.
	"/prose.legacy.v2.LegacyService/ListProcesses": r(store.PermAutomationsGet),
	"/prose.legacy.v2.LegacyService/GetProcess":    r(store.PermAutomationsGet),
	"/prose.legacy.v2.LegacyService/ListRuns":      r(store.PermRunsGet),
	"/prose.legacy.v2.LegacyService/CreateRun":     w(store.PermRunsCreate),
	"/prose.legacy.v2.LegacyService/GetRun":        {Permission: store.PermRunsGet, Deferred: true},
	"/prose.legacy.v2.LegacyService/CreateFile":    w(store.PermRunsCreate),
}
