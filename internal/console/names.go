package console

import (
	"strconv"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// Names a person reads in place of ids: automations by display name,
// people by display name or email, runs by their number beside their id.

// nameOr is m's name for key, or the id key names (its last segment) when
// m has none (a deleted automation, a former member).
func nameOr(m map[string]string, key string) string {
	if n := m[key]; n != "" {
		return n
	}
	return names.ID(key)
}

// runNumber is "#42" for a run numbered 42 ("" before numbers existed).
func runNumber(r *platformv1.Run) string {
	if n := r.GetRunNumber(); n > 0 {
		return "#" + strconv.FormatInt(n, 10)
	}
	return ""
}

// automationName is the display name of an automation, or its id when it
// cannot be read.
func (c *Console) automationName(s *sess, ws, id string) string {
	a, err := c.automations.GetAutomation(s.ctx, &platformv1.GetAutomationRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, AutomationId: id})
	if err != nil || a.GetDisplayName() == "" {
		return id
	}
	return a.GetDisplayName()
}

// automationIDNames maps the workspace's automation ids to their display
// names (empty when they cannot be listed: the ids are shown).
func (c *Console) automationIDNames(s *sess, ws string) map[string]string {
	m, _, err := c.automationNames(s, ws)
	if err != nil {
		return map[string]string{}
	}
	return m
}

// nameException names the automation of an exception's page (its
// assignee and resolver are named with its state: exceptionState).
func (c *Console) nameException(s *sess, d *exceptionData) {
	if _, _, a, ok := names.ParseAutomation(d.X.GetAutomation()); ok {
		d.AutomationName = c.automationName(s, d.WS, a)
	}
}

// nameInbox names the automations and assignees of the inbox.
func (c *Console) nameInbox(s *sess, d *inboxData) {
	d.AutoNames = map[string]string{}
	if m, list, err := c.automationNames(s, d.WS); err == nil {
		d.AutoNames, d.Automations = m, list
	}
	d.People = map[string]string{}
	for _, x := range d.Exceptions {
		if x.GetAssignee() != "" && x.GetAssignee() != d.Me {
			d.People = c.peopleNames(s, d.WS)
			break
		}
	}
}
