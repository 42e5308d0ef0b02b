// Package names builds and parses the resource names of the platform API
// (AIP-122), such as organizations/{organization}/workspaces/{workspace}, in
// one place, with go.einride.tech/aip/resourcename. Every package that sends
// or reads a resource name uses it instead of concatenating or splitting
// strings. It imports nothing of ours, so any package may use it.
package names

import (
	"strings"

	"go.einride.tech/aip/resourcename"
)

// The resource name patterns of the API.
const (
	OrganizationPattern  = "organizations/{organization}"
	WorkspacePattern     = "organizations/{organization}/workspaces/{workspace}"
	WorkspaceUserPattern = "organizations/{organization}/workspaces/{workspace}/users/{user}"
	AutomationPattern    = "organizations/{organization}/workspaces/{workspace}/automations/{automation}"
	RunPattern           = "organizations/{organization}/workspaces/{workspace}/automations/{automation}/runs/{run}"
	AgentPattern         = "organizations/{organization}/workspaces/{workspace}/automations/{automation}/runs/{run}/agents/{agent}"
	EventPattern         = "organizations/{organization}/workspaces/{workspace}/automations/{automation}/runs/{run}/agents/{agent}/events/{event}"
	ExceptionPattern     = "organizations/{organization}/workspaces/{workspace}/exceptions/{exception}"
	GuideEntryPattern    = "organizations/{organization}/workspaces/{workspace}/automations/{automation}/guideEntries/{guide_entry}"
	APIKeyPattern        = "organizations/{organization}/apiKeys/{api_key}"
	FilePattern          = "organizations/{organization}/files/{file}"
	UserPattern          = "users/{user}"

	SchedulePattern        = "organizations/{organization}/workspaces/{workspace}/automations/{automation}/schedule"
	TriggerInstancePattern = "organizations/{organization}/workspaces/{workspace}/triggers/{trigger}"
	WebhookPattern         = "organizations/{organization}/workspaces/{workspace}/webhooks/{webhook}"
	DeliveryPattern        = "organizations/{organization}/workspaces/{workspace}/webhooks/{webhook}/deliveries/{delivery}"

	AutomationTestPattern   = "organizations/{organization}/workspaces/{workspace}/automations/{automation}/tests/{test}"
	AutomationReplayPattern = "organizations/{organization}/workspaces/{workspace}/automations/{automation}/replay"
)

// AutomationTest is the name of a test of an automation.
func AutomationTest(org, ws, automation, test string) string {
	return resourcename.Sprint(AutomationTestPattern, org, ws, automation, test)
}

// AutomationReplay is the name of an automation's last replay (a singleton).
func AutomationReplay(org, ws, automation string) string {
	return resourcename.Sprint(AutomationReplayPattern, org, ws, automation)
}

// Schedule is the name of the schedule of an automation (a singleton).
func Schedule(org, ws, automation string) string {
	return resourcename.Sprint(SchedulePattern, org, ws, automation)
}

// TriggerInstance is the name of a trigger instance of a workspace.
func TriggerInstance(org, ws, trigger string) string {
	return resourcename.Sprint(TriggerInstancePattern, org, ws, trigger)
}

// Webhook is the name of an outbound webhook of a workspace.
func Webhook(org, ws, webhook string) string {
	return resourcename.Sprint(WebhookPattern, org, ws, webhook)
}

// Delivery is the name of a delivery of a webhook.
func Delivery(org, ws, webhook, delivery string) string {
	return resourcename.Sprint(DeliveryPattern, org, ws, webhook, delivery)
}

// GuideEntry is the name of a guide entry of an automation.
func GuideEntry(org, ws, automation, entry string) string {
	return resourcename.Sprint(GuideEntryPattern, org, ws, automation, entry)
}

// GuideEntryResolver is how a guide entry is named as an exception's
// resolver: guideEntries/{entry} (beside users/{user} and agents/{agent}).
func GuideEntryResolver(entry string) string { return "guideEntries/" + entry }

// Organization is organizations/{org}.
func Organization(org string) string { return resourcename.Sprint(OrganizationPattern, org) }

// Workspace is organizations/{org}/workspaces/{ws}.
func Workspace(org, ws string) string { return resourcename.Sprint(WorkspacePattern, org, ws) }

// WorkspaceUser is the membership of user in a workspace.
func WorkspaceUser(org, ws, user string) string {
	return resourcename.Sprint(WorkspaceUserPattern, org, ws, user)
}

// Automation is the name of an automation of a workspace.
func Automation(org, ws, automation string) string {
	return resourcename.Sprint(AutomationPattern, org, ws, automation)
}

// Run is the name of a run of an automation.
func Run(org, ws, automation, run string) string {
	return resourcename.Sprint(RunPattern, org, ws, automation, run)
}

// Agent is the name of an agent (a conversation thread) of a run.
func Agent(org, ws, automation, run, agent string) string {
	return resourcename.Sprint(AgentPattern, org, ws, automation, run, agent)
}

// Event is the name of an event of an agent's thread.
func Event(org, ws, automation, run, agent, event string) string {
	return resourcename.Sprint(EventPattern, org, ws, automation, run, agent, event)
}

// Exception is the name of an exception of a workspace.
func Exception(org, ws, exception string) string {
	return resourcename.Sprint(ExceptionPattern, org, ws, exception)
}

// APIKey is the name of an API key of an organization.
func APIKey(org, key string) string { return resourcename.Sprint(APIKeyPattern, org, key) }

// File is the name of a file of an organization.
func File(org, file string) string { return resourcename.Sprint(FilePattern, org, file) }

// User is users/{user}.
func User(user string) string { return resourcename.Sprint(UserPattern, user) }

// ParseUser returns the id of users/{user}; ok is false for anything else
// (an empty id, more segments, another collection).
func ParseUser(name string) (user string, ok bool) {
	err := resourcename.Sscan(name, UserPattern, &user)
	return user, err == nil && user != ""
}

// ParseWorkspace returns the ids of organizations/{org}/workspaces/{ws}; ok
// is false when name has another shape (an id may be empty: callers that
// look the resource up find nothing).
func ParseWorkspace(name string) (org, ws string, ok bool) {
	err := resourcename.Sscan(name, WorkspacePattern, &org, &ws)
	return org, ws, err == nil
}

// ParseRun returns the ids of a run's name.
func ParseRun(name string) (org, ws, automation, run string, ok bool) {
	err := resourcename.Sscan(name, RunPattern, &org, &ws, &automation, &run)
	return org, ws, automation, run, err == nil
}

// ParseFile returns the ids of organizations/{org}/files/{file}.
func ParseFile(name string) (org, file string, ok bool) {
	err := resourcename.Sscan(name, FilePattern, &org, &file)
	return org, file, err == nil
}

// ID returns the last segment of a resource name (its resource id), or
// name itself when it has no '/': requests accept either an id or a full
// name.
func ID(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// ParseAutomation returns the ids of
// organizations/{org}/workspaces/{ws}/automations/{automation}.
func ParseAutomation(name string) (org, ws, automation string, ok bool) {
	err := resourcename.Sscan(name, AutomationPattern, &org, &ws, &automation)
	return org, ws, automation, err == nil && automation != ""
}

// Words is how a person reads an identifier the API spells for machines:
// a state or an exception group ("awaiting_guidance", "AWAITING_GUIDANCE"
// and "Awaiting guidance" are all "Awaiting guidance"). The console and the
// CLI write states and groups with it, so they speak one vocabulary.
func Words(id string) string {
	s := strings.ToLower(strings.ReplaceAll(id, "_", " "))
	if s == "" {
		return ""
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
