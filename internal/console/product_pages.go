package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

// The pages of the rest of the product: insights, learnings (guide
// entries), connections, triggers and schedules, outbound webhooks, the
// book catalog, and the page of an unknown URL. Each reads and acts through
// the same services as the API, as the signed-in user.

// productClients are the services these pages call.
type productClients struct {
	insightsSvc platformv1.InsightsServiceClient
	guide       platformv1.GuideEntryServiceClient
	webhooks    platformv1.WebhookServiceClient
	triggers    platformv1.TriggerServiceClient
	schedules   platformv1.ScheduleServiceClient
	connections bookv1.ConnectionServiceClient
}

func newProductClients(conn grpc.ClientConnInterface) productClients {
	return productClients{
		insightsSvc: platformv1.NewInsightsServiceClient(conn),
		guide:       platformv1.NewGuideEntryServiceClient(conn),
		webhooks:    platformv1.NewWebhookServiceClient(conn),
		triggers:    platformv1.NewTriggerServiceClient(conn),
		schedules:   platformv1.NewScheduleServiceClient(conn),
		connections: bookv1.NewConnectionServiceClient(conn),
	}
}

// productRoutes adds the pages' routes, and the page of any other URL.
func (c *Console) productRoutes() {
	m := c.mux
	m.HandleFunc("GET /w/{ws}/insights", c.session(c.insights))
	m.HandleFunc("POST /w/{ws}/insights/estimates", c.session(c.setEstimates))
	m.HandleFunc("GET /w/{ws}/learnings", c.session(c.learnings))
	m.HandleFunc("GET /w/{ws}/learnings/{a}/{g}", c.session(c.learning))
	m.HandleFunc("POST /w/{ws}/learnings/{a}/{g}/{action}", c.session(c.learningAction))
	m.HandleFunc("GET /w/{ws}/connections", c.session(c.connectionList))
	m.HandleFunc("POST /w/{ws}/connections", c.session(c.addConnection))
	m.HandleFunc("GET /w/{ws}/connections/{id}", c.session(c.connection))
	m.HandleFunc("POST /w/{ws}/connections/{id}/{action}", c.session(c.connectionAction))
	m.HandleFunc("GET /w/{ws}/triggers", c.session(c.triggerList))
	m.HandleFunc("POST /w/{ws}/triggers", c.session(c.addTrigger))
	m.HandleFunc("POST /w/{ws}/triggers/{id}/{action}", c.session(c.triggerAction))
	m.HandleFunc("POST /w/{ws}/schedules/{a}", c.session(c.createSchedule))
	m.HandleFunc("POST /w/{ws}/schedules/{a}/{action}", c.session(c.scheduleAction))
	m.HandleFunc("GET /w/{ws}/webhooks", c.session(c.webhookList))
	m.HandleFunc("POST /w/{ws}/webhooks", c.session(c.addWebhook))
	m.HandleFunc("GET /w/{ws}/webhooks/{id}", c.session(c.webhook))
	m.HandleFunc("POST /w/{ws}/webhooks/{id}/{action}", c.session(c.webhookAction))
	m.HandleFunc("GET /w/{ws}/books", c.session(c.bookList))
	m.HandleFunc("GET /w/{ws}/books/{name}", c.session(c.book))
	m.HandleFunc("/", c.notFound)
}

// notFound is the page of a URL the console does not have, in the layout
// (with the navigation when the caller is signed in).
func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	d := &pageData{Title: "Page not found", Error: "There is no page at this address."}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if s, err := c.opts.Auth.Session(r.Context(), ck.Value); err == nil {
			cs := &sess{ConsoleSession: s, token: ck.Value, ctx: c.opts.Auth.ConsoleContext(r.Context(), ck.Value)}
			d.CSRF, d.SignedIn = s.CSRFToken, true
			if ws, err := c.listWorkspaces(cs); err == nil {
				d.Workspaces = ws
				if len(ws) > 0 {
					d.WS = names.ID(ws[0].GetName())
				}
			}
			if p := workspaceOfPath(r.URL.Path); p != "" {
				d.WS = p
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			c.opts.Logger.Warn("console: session of a page not found", "err", err)
		}
	}
	c.render(w, r, http.StatusNotFound, "notfound", d)
}

// workspaceOfPath is the workspace of a console path /w/{ws}/….
func workspaceOfPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/w/")
	if !ok {
		return ""
	}
	ws, _, _ := strings.Cut(rest, "/")
	if ws, err := url.PathUnescape(ws); err == nil {
		return ws
	}
	return ""
}

// done is the confirmation a page shows after an action (?done=…).
func done(r *http.Request, msgs map[string]string) string {
	return msgs[r.URL.Query().Get("done")]
}

// tsText is a time as the pages write it (the layout's ts).
func tsText(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.AsTime().UTC().Format("2006-01-02 15:04:05Z")
}

// wsURL is a console URL under the workspace.
func wsURL(ws string, parts ...string) string {
	u := "/w/" + url.PathEscape(ws)
	for _, p := range parts {
		u += "/" + url.PathEscape(p)
	}
	return u
}

// automationNames maps the workspace's automation ids to their display
// names.
func (c *Console) automationNames(s *sess, ws string) (map[string]string, []*platformv1.Automation, error) {
	res, err := c.automations.ListAutomations(s.ctx, &platformv1.ListAutomationsRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, PageSize: maxListed})
	if err != nil {
		return nil, nil, err
	}
	out := map[string]string{}
	for _, a := range res.GetAutomations() {
		out[names.ID(a.GetName())] = a.GetDisplayName()
	}
	return out, res.GetAutomations(), nil
}

// peopleNames maps users/{id} of the workspace's members to a name a
// person reads (display name, else email).
func (c *Console) peopleNames(s *sess, ws string) map[string]string {
	out := map[string]string{}
	m, err := c.workspaces.ListWorkspaceUsers(s.ctx, &platformv1.ListWorkspaceUsersRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, PageSize: maxListed})
	if err != nil {
		return out
	}
	for _, u := range m.GetUsers() {
		n := u.GetUser().GetDisplayName()
		if n == "" {
			n = u.GetUser().GetEmail()
		}
		out[u.GetUser().GetName()] = n
	}
	return out
}

// resolverNames says who resolved the exceptions of a run by name: a
// person by display name or email, a learning by its title, an agent as
// such (the run keeps users/…, guideEntries/…, agents/…). It names them in
// the history's entries and returns the names of the resolvers of xs.
func (c *Console) resolverNames(s *sess, ws, automation string, items []historyItem, xs []*platformv1.Exception) map[string]string {
	named := map[string]string{}
	var people map[string]string
	name := func(by string) string {
		if n, ok := named[by]; ok {
			return n
		}
		n := by
		switch {
		case strings.HasPrefix(by, "users/"):
			if people == nil {
				people = c.peopleNames(s, ws)
			}
			n = cmpOr(people[by], "a person no longer in the workspace")
		case strings.HasPrefix(by, "guideEntries/"):
			n = "a learning"
			if g, err := c.guide.GetGuideEntry(s.ctx, &platformv1.GetGuideEntryRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws,
				AutomationId: automation, GuideEntryId: strings.TrimPrefix(by, "guideEntries/")}); err == nil {
				n = "the learning “" + g.GetTitle() + "”"
			}
		case strings.HasPrefix(by, "agents/"):
			n = "the agent " + strings.TrimPrefix(by, "agents/")
		}
		named[by] = n
		return n
	}
	for i, it := range items {
		if it.By != "" {
			items[i].What = strings.Replace(it.What, " by "+it.By, " by "+name(it.By), 1)
		}
	}
	for _, x := range xs {
		if x.GetResolver() != "" {
			name(x.GetResolver())
		}
	}
	return named
}

// orgPeopleNames names the organization's users (for the owners of its
// keys), or the workspace's members when the caller may not list the
// organization's.
func (c *Console) orgPeopleNames(s *sess, ws string) map[string]string {
	u, err := c.orgs.ListOrganizationUsers(s.ctx, &platformv1.ListOrganizationUsersRequest{OrganizationId: s.OrganizationID, PageSize: maxListed})
	if err != nil {
		return c.peopleNames(s, ws)
	}
	out := map[string]string{}
	for _, x := range u.GetUsers() {
		out[x.GetUser().GetName()] = cmpOr(x.GetUser().GetDisplayName(), x.GetUser().GetEmail())
	}
	return out
}
