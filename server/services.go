// Package server holds the Prose gRPC services, one file per service. The
// transport they run behind (interceptor chain, authentication, errors,
// limits) is package server/transport.
package server

import (
	"google.golang.org/grpc"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// Services holds one implementation per gRPC service. A nil member is
// registered as its generated Unimplemented server, so every RPC of the
// contract is routed and answers UNIMPLEMENTED (naming the method) until it is
// built. docs/api.md keeps the table of what is implemented.
type Services struct {
	Runs          platformv1.RunServiceServer
	RunHistory    platformv1.RunHistoryServiceServer
	Automations   platformv1.AutomationServiceServer
	Workspaces    platformv1.WorkspaceServiceServer
	Organizations platformv1.OrganizationServiceServer
	Exceptions    platformv1.ExceptionServiceServer
	Events        platformv1.EventServiceServer
	APIKeys       platformv1.ApiKeyServiceServer
	Files         platformv1.FileServiceServer
	Books         bookv1.BookServiceServer
	Schedules     platformv1.ScheduleServiceServer
	Triggers      platformv1.TriggerServiceServer
	Webhooks      platformv1.WebhookServiceServer
	GuideEntries  platformv1.GuideEntryServiceServer
	Revisions     platformv1.AutomationRevisionServiceServer
	Insights      platformv1.InsightsServiceServer
	Tests         platformv1.AutomationTestServiceServer
	Connections   bookv1.ConnectionServiceServer
	LegacyV1      legacyv1.LegacyServiceServer
	LegacyV2      legacyv2.LegacyServiceServer
}

type (
	unimplementedRuns struct {
		platformv1.UnimplementedRunServiceServer
	}
	unimplementedRunHistory struct {
		platformv1.UnimplementedRunHistoryServiceServer
	}
	unimplementedAutomations struct {
		platformv1.UnimplementedAutomationServiceServer
	}
	unimplementedWorkspaces struct {
		platformv1.UnimplementedWorkspaceServiceServer
	}
	unimplementedOrganizations struct {
		platformv1.UnimplementedOrganizationServiceServer
	}
	unimplementedExceptions struct {
		platformv1.UnimplementedExceptionServiceServer
	}
	unimplementedEvents struct {
		platformv1.UnimplementedEventServiceServer
	}
	unimplementedAPIKeys struct {
		platformv1.UnimplementedApiKeyServiceServer
	}
	unimplementedFiles struct {
		platformv1.UnimplementedFileServiceServer
	}
	unimplementedSchedules struct {
		platformv1.UnimplementedScheduleServiceServer
	}
	unimplementedTriggers struct {
		platformv1.UnimplementedTriggerServiceServer
	}
	unimplementedWebhooks struct {
		platformv1.UnimplementedWebhookServiceServer
	}
	unimplementedGuideEntries struct {
		platformv1.UnimplementedGuideEntryServiceServer
	}
	unimplementedRevisions struct {
		platformv1.UnimplementedAutomationRevisionServiceServer
	}
	unimplementedInsights struct {
		platformv1.UnimplementedInsightsServiceServer
	}
	unimplementedTests struct {
		platformv1.UnimplementedAutomationTestServiceServer
	}
	unimplementedBooks struct {
		bookv1.UnimplementedBookServiceServer
	}
	unimplementedConnections struct {
		bookv1.UnimplementedConnectionServiceServer
	}
	unimplementedLegacyV1 struct {
		legacyv1.UnimplementedLegacyServiceServer
	}
	unimplementedLegacyV2 struct {
		legacyv2.UnimplementedLegacyServiceServer
	}
)

// Register adds every service of the contract to s.
func (sv Services) Register(s grpc.ServiceRegistrar) {
	if sv.Runs == nil {
		sv.Runs = unimplementedRuns{}
	}
	if sv.RunHistory == nil {
		sv.RunHistory = unimplementedRunHistory{}
	}
	if sv.Automations == nil {
		sv.Automations = unimplementedAutomations{}
	}
	if sv.Workspaces == nil {
		sv.Workspaces = unimplementedWorkspaces{}
	}
	if sv.Organizations == nil {
		sv.Organizations = unimplementedOrganizations{}
	}
	if sv.Exceptions == nil {
		sv.Exceptions = unimplementedExceptions{}
	}
	if sv.Events == nil {
		sv.Events = unimplementedEvents{}
	}
	if sv.APIKeys == nil {
		sv.APIKeys = unimplementedAPIKeys{}
	}
	if sv.Files == nil {
		sv.Files = unimplementedFiles{}
	}
	if sv.Schedules == nil {
		sv.Schedules = unimplementedSchedules{}
	}
	if sv.Triggers == nil {
		sv.Triggers = unimplementedTriggers{}
	}
	if sv.Webhooks == nil {
		sv.Webhooks = unimplementedWebhooks{}
	}
	if sv.GuideEntries == nil {
		sv.GuideEntries = unimplementedGuideEntries{}
	}
	if sv.Revisions == nil {
		sv.Revisions = unimplementedRevisions{}
	}
	if sv.Insights == nil {
		sv.Insights = unimplementedInsights{}
	}
	if sv.Tests == nil {
		sv.Tests = unimplementedTests{}
	}
	if sv.Books == nil {
		sv.Books = unimplementedBooks{}
	}
	if sv.Connections == nil {
		sv.Connections = unimplementedConnections{}
	}
	if sv.LegacyV1 == nil {
		sv.LegacyV1 = unimplementedLegacyV1{}
	}
	if sv.LegacyV2 == nil {
		sv.LegacyV2 = unimplementedLegacyV2{}
	}
	platformv1.RegisterRunServiceServer(s, sv.Runs)
	platformv1.RegisterRunHistoryServiceServer(s, sv.RunHistory)
	platformv1.RegisterAutomationServiceServer(s, sv.Automations)
	platformv1.RegisterWorkspaceServiceServer(s, sv.Workspaces)
	platformv1.RegisterOrganizationServiceServer(s, sv.Organizations)
	platformv1.RegisterExceptionServiceServer(s, sv.Exceptions)
	platformv1.RegisterEventServiceServer(s, sv.Events)
	platformv1.RegisterApiKeyServiceServer(s, sv.APIKeys)
	platformv1.RegisterFileServiceServer(s, sv.Files)
	platformv1.RegisterScheduleServiceServer(s, sv.Schedules)
	platformv1.RegisterTriggerServiceServer(s, sv.Triggers)
	platformv1.RegisterWebhookServiceServer(s, sv.Webhooks)
	platformv1.RegisterGuideEntryServiceServer(s, sv.GuideEntries)
	platformv1.RegisterAutomationRevisionServiceServer(s, sv.Revisions)
	platformv1.RegisterInsightsServiceServer(s, sv.Insights)
	platformv1.RegisterAutomationTestServiceServer(s, sv.Tests)
	bookv1.RegisterBookServiceServer(s, sv.Books)
	bookv1.RegisterConnectionServiceServer(s, sv.Connections)
	legacyv1.RegisterLegacyServiceServer(s, sv.LegacyV1)
	legacyv2.RegisterLegacyServiceServer(s, sv.LegacyV2)
}
