package console

import (
	"net/http"
	"net/url"
	"strconv"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

type runRow struct {
	ID, Automation, State string
	Run                   *platformv1.Run
}

type runsData struct {
	pageData
	Runs                     []runRow
	State, Automation        string
	PageToken, NextPageToken string
	SelfURL, LiveURL         string
	States                   []string
	AutoNames                map[string]string // automation id → display name
}

var runStates = []string{"pending", "executing", "stopping", "stopped", "awaiting_guidance", "completed", "failed"}

// runs lists the runs of the workspace (or of one automation), newest
// first, filtered by state; the list updates itself.
func (c *Console) runList(w http.ResponseWriter, r *http.Request, s *sess) {
	base, err := c.basics(r, s, "Runs")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	q := r.URL.Query()
	d := &runsData{pageData: base, State: q.Get("state"), Automation: q.Get("automation"), PageToken: q.Get("page_token"), States: runStates}
	automation := d.Automation
	if automation == "" {
		automation = "-"
	}
	filter := ""
	if d.State != "" {
		filter = "state = " + strconv.Quote(d.State)
	}
	res, err := c.runs.ListRuns(s.ctx, &platformv1.ListRunsRequest{
		OrganizationId: s.OrganizationID, WorkspaceId: base.WS, AutomationId: automation, Filter: filter, PageSize: 50, PageToken: d.PageToken,
	})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	for _, run := range res.GetRuns() {
		st, _ := runState(run.GetState())
		p := splitName(run.GetName())
		d.Runs = append(d.Runs, runRow{ID: names.ID(run.GetName()), Automation: p, State: st, Run: run})
	}
	d.NextPageToken = res.GetNextPageToken()
	d.AutoNames = c.automationIDNames(s, base.WS)
	u := *r.URL
	qq := u.Query()
	qq.Set("fragment", "1")
	u.RawQuery = qq.Encode()
	d.SelfURL = u.RequestURI()
	d.LiveURL = "/w/" + url.PathEscape(base.WS) + "/live?topic=runs"
	c.render(w, r, http.StatusOK, "runs", d)
}

// splitName returns the automation id of a run's resource name.
func splitName(name string) string {
	_, _, automation, _, ok := names.ParseRun(name)
	if !ok {
		return ""
	}
	return automation
}
