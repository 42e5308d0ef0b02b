package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// People name things by what they see: an automation by its title, a
// person by a name or an email, a state in words. The CLI takes those
// wherever it takes an id, and its tables print them instead of ids.

// nameCache holds what the session learnt about names, asked of the
// server at most once per command.
type nameCache struct {
	automations map[string]string // automation id -> display name
	people      map[string]string // users/{u} -> display name, else email
}

func (s *session) cache() *nameCache {
	if s.names == nil {
		s.names = &nameCache{}
	}
	return s.names
}

// automationTitles lists the workspace's automations (once) by id.
func (s *session) automationTitles(ctx context.Context) (map[string]string, error) {
	c := s.cache()
	if c.automations != nil {
		return c.automations, nil
	}
	all, err := listAll(10000, func(size int32, token string) ([]*platformv1.Automation, string, error) {
		resp, err := s.c.Automations.ListAutomations(ctx, &platformv1.ListAutomationsRequest{
			OrganizationId: s.org, WorkspaceId: s.ws, PageSize: size, PageToken: token})
		return resp.GetAutomations(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return nil, err
	}
	c.automations = make(map[string]string, len(all))
	for _, a := range all {
		c.automations[names.ID(a.GetName())] = a.GetDisplayName()
	}
	return c.automations, nil
}

// automationTitle is the display name of an automation (its id when it
// has none, or when the list cannot be read: a table still prints).
func (s *session) automationTitle(ctx context.Context, ref string) string {
	id := names.ID(ref)
	m, err := s.automationTitles(ctx)
	if err != nil || m[id] == "" {
		return id
	}
	return m[id]
}

// automationID resolves an automation given by name, id or display name
// (any case). An id wins over a display name; a display name that several
// automations share is a usage error listing their ids.
func (s *session) automationID(ctx context.Context, ref string) (string, error) {
	id, err := s.idIn("automation", ref)
	if err != nil || strings.Contains(ref, "/") {
		return id, err
	}
	_, err = s.c.Automations.GetAutomation(ctx, &platformv1.GetAutomationRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: id})
	if err == nil {
		return id, nil
	}
	if status.Code(err) != codes.NotFound && status.Code(err) != codes.InvalidArgument {
		return "", apiErr(err)
	}
	m, lerr := s.automationTitles(ctx)
	if lerr != nil {
		return "", lerr
	}
	var found []string
	for aid, title := range m {
		if strings.EqualFold(strings.TrimSpace(title), strings.TrimSpace(ref)) {
			found = append(found, aid)
		}
	}
	switch len(found) {
	case 0:
		return "", apiErr(err)
	case 1:
		return found[0], nil
	}
	return "", usageErr("%d automations are titled %q (%s): name one by id", len(found), ref, strings.Join(found, ", "))
}

// people lists the workspace's members (once) by users/{u}.
func (s *session) people(ctx context.Context) map[string]string {
	c := s.cache()
	if c.people != nil {
		return c.people
	}
	c.people = map[string]string{}
	all, err := listAll(10000, func(size int32, token string) ([]*platformv1.WorkspaceUser, string, error) {
		resp, err := s.c.Workspaces.ListWorkspaceUsers(ctx, &platformv1.ListWorkspaceUsersRequest{
			OrganizationId: s.org, WorkspaceId: s.ws, PageSize: size, PageToken: token})
		return resp.GetUsers(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return c.people
	}
	for _, u := range all {
		b := u.GetUser()
		c.people[names.User(names.ID(b.GetName()))] = firstNonEmpty(b.GetDisplayName(), b.GetEmail())
	}
	return c.people
}

// person is how a table names a user: display name, else email, else the
// id the API gave.
func (s *session) person(ctx context.Context, user string) string {
	if user == "" {
		return ""
	}
	if p := s.people(ctx)[names.User(names.ID(user))]; p != "" {
		return p
	}
	return user
}

// userRef resolves a person given by users/{u}, id, email or display name.
func (s *session) userRef(ctx context.Context, ref string) string {
	ref = strings.TrimSpace(ref)
	if strings.HasPrefix(ref, "users/") {
		return ref
	}
	for u := range s.people(ctx) {
		if names.ID(u) == ref {
			return u
		}
	}
	resp, err := s.c.Workspaces.ListWorkspaceUsers(ctx, &platformv1.ListWorkspaceUsersRequest{OrganizationId: s.org, WorkspaceId: s.ws, PageSize: 1000})
	if err == nil {
		for _, u := range resp.GetUsers() {
			b := u.GetUser()
			if strings.EqualFold(b.GetEmail(), ref) || strings.EqualFold(b.GetDisplayName(), ref) {
				return names.User(names.ID(b.GetName()))
			}
		}
	}
	return names.User(names.ID(ref))
}

// stateWords is the one vocabulary for states, as the console writes
// them: "awaiting_guidance" (a run's) and "EXCEPTION_STATE_PENDING" (an
// exception's) are both shown as words with a capital.
func stateWords(s string) string {
	return names.Words(strings.TrimPrefix(strings.ToUpper(s), "EXCEPTION_STATE_"))
}

// stateFilterRE finds `state = x`, `state != "x"` in an AIP-160 filter.
var stateFilterRE = regexp.MustCompile(`(?i)\bstate\s*(=|!=)\s*("[^"]*"|[A-Za-z_]+)`)

// normalizeStateFilter accepts any case and the words of stateWords in a
// filter's state comparisons, writing them as the API wants them: a run's
// state as its lower-case member in quotes ("awaiting_guidance"), an
// exception's as its upper-case enum (PENDING).
func normalizeStateFilter(filter string, exception bool) string {
	return stateFilterRE.ReplaceAllStringFunc(filter, func(m string) string {
		sub := stateFilterRE.FindStringSubmatch(m)
		v := strings.Trim(strings.TrimSpace(sub[2]), `"`)
		v = strings.ReplaceAll(strings.TrimSpace(v), " ", "_")
		if exception {
			v = strings.TrimPrefix(strings.ToUpper(v), "EXCEPTION_STATE_")
			return fmt.Sprintf("state %s %s", sub[1], v)
		}
		return fmt.Sprintf("state %s %q", sub[1], strings.ToLower(v))
	})
}

// joinFilters ANDs the clauses that are not empty, each in parentheses.
func joinFilters(clauses ...string) string {
	var out []string
	for _, c := range clauses {
		if strings.TrimSpace(c) != "" {
			out = append(out, c)
		}
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return "(" + strings.Join(out, ") AND (") + ")"
}

// runNumber is "#42" for a run numbered 42 in its automation ("" for a
// run made before runs were numbered).
func runNumber(r *platformv1.Run) string {
	if n := r.GetRunNumber(); n > 0 {
		return "#" + strconv.FormatInt(n, 10)
	}
	return ""
}

// excRunNumber is "#42" for an exception of run #42.
func excRunNumber(e *platformv1.Exception) string {
	if n := e.GetRunNumber(); n > 0 {
		return "#" + strconv.FormatInt(n, 10)
	}
	return ""
}
