package console

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

type runData struct {
	pageData
	Run        *platformv1.Run
	Automation string
	// AutomationName is the automation's display name (its id when it
	// cannot be read).
	AutomationName string
	ID             string
	State          string
	Terminal       bool
	Outputs        []factView
	Inputs         []factView
	Exceptions     []*platformv1.Exception
	SelfURL        string
	LiveURL        string
	// Program is the code the run ran, line by line, with what the run
	// did at each line (program.go); MoreSteps counts the steps after the
	// first, whose code it does not show.
	Program   []progLine
	MoreSteps int
	// History is what the run went through, oldest first (ListRunEvents):
	// its states, what it said, its book calls, its exceptions and who
	// resolved them; a page of it (?history= is the page token).
	// HistoryMore links the next page when there is one.
	History     []historyItem
	HistoryMore string
	// Resolvers names who resolved its exceptions (product_pages.go).
	Resolvers map[string]string
}

// runNotices confirm the run page's actions (?done=).
var runNotices = map[string]string{
	"stop":     "The run is stopped: it does nothing more until it is continued.",
	"continue": "The run continues.",
	"rerun":    "This is a new run, with the same inputs as the run it repeats.",
	"resolved": "Your guidance is given: the run goes on from the line that waited.",
}

func (c *Console) run(w http.ResponseWriter, r *http.Request, s *sess) {
	base, err := c.basics(r, s, "Run")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Notice = done(r, runNotices)
	org, ws, a, id := s.OrganizationID, base.WS, r.PathValue("a"), r.PathValue("r")
	run, err := c.runs.GetRun(s.ctx, &platformv1.GetRunRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: id})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &runData{pageData: base, Run: run, Automation: a, AutomationName: a, ID: id, SelfURL: r.URL.Path + "?fragment=1",
		LiveURL: "/w/" + url.PathEscape(ws) + "/live?topic=runs"}
	d.AutomationName = c.automationName(s, ws, a)
	d.State, d.Terminal = runState(run.GetState())
	d.Title = strings.TrimSpace(d.AutomationName+" "+runNumber(run)) + " (" + names.Words(d.State) + ")"
	d.Outputs = factViews(run.GetState().GetCompleted().GetOutputs())
	d.Inputs = factViews(run.GetUserInputs())
	if err := c.runDetails(r, s, d); err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "run", d)
}

func factViews(m map[string]*platformv1.Value) []factView {
	var out []factView
	for k, v := range m {
		out = append(out, factView{k, valueText(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// runDetails reads the run's exceptions and history into d, and lays out
// its program.
func (c *Console) runDetails(r *http.Request, s *sess, d *runData) error {
	org, ws := s.OrganizationID, d.WS
	xs, err := c.exceptions.ListExceptions(s.ctx, &platformv1.ListExceptionsRequest{
		OrganizationId: org, WorkspaceId: ws, Filter: "run = " + strconv.Quote(d.ID), PageSize: 50,
	})
	if err != nil {
		return err
	}
	d.Exceptions = xs.GetExceptions()
	h, err := c.history.ListRunEvents(s.ctx, &platformv1.ListRunEventsRequest{
		OrganizationId: org, WorkspaceId: ws, AutomationId: d.Automation, RunId: d.ID, PageSize: historyPage, PageToken: r.URL.Query().Get("history"),
	})
	if err != nil {
		return err
	}
	d.History = historyItems(h.GetRunEvents())
	d.Resolvers = c.resolverNames(s, ws, d.Automation, d.History, d.Exceptions)
	byID := map[string]*platformv1.Exception{}
	for _, x := range d.Exceptions {
		byID[names.ID(x.GetName())] = x
	}
	for i, it := range d.History {
		if x := byID[it.Exception]; x != nil && it.Kind == "exception" && it.What == "exception raised" {
			d.History[i].What += ": " + x.GetMessage()
		}
	}
	if h.GetNextPageToken() != "" {
		d.HistoryMore = r.URL.Path + "?history=" + url.QueryEscape(h.GetNextPageToken())
	}
	if steps := d.Run.GetExecutableSteps().GetExecutables(); len(steps) > 0 {
		_, completed := d.Run.GetState().GetState().(*platformv1.RunState_Completed)
		d.Program = program(steps[0].GetCode(), h.GetRunEvents(), byID, completed)
		d.MoreSteps = len(steps) - 1
		c.nameNotes(s, d)
	}
	return nil
}

// nameNotes names who gave each guidance of the program's notes and
// links their exceptions.
func (c *Console) nameNotes(s *sess, d *runData) {
	var items []historyItem
	for _, l := range d.Program {
		for _, n := range l.Notes {
			if n.By != "" {
				items = append(items, historyItem{By: n.By, What: " by " + n.By})
			}
		}
	}
	named := c.resolverNames(s, d.WS, d.Automation, items, nil)
	for i := range d.Program {
		for j := range d.Program[i].Notes {
			if x := d.Program[i].Notes[j].Exception; x != "" {
				d.Program[i].Notes[j].Href = "/w/" + url.PathEscape(d.WS) + "/exceptions/" + url.PathEscape(x)
			}
			if by := d.Program[i].Notes[j].By; by != "" {
				d.Program[i].Notes[j].By = cmpOr(named[by], by)
			}
		}
	}
}

// runAction stops, continues or re-runs a run, and says so on the page it
// goes to.
func (c *Console) runAction(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws, a, id := s.OrganizationID, r.PathValue("ws"), r.PathValue("a"), r.PathValue("r")
	action := r.PathValue("action")
	var err error
	switch action {
	case "pause", "stop":
		action = "stop"
		reason := r.PostFormValue("reason")
		if reason == "" {
			reason = "stopped from the console"
		}
		_, err = c.runs.PauseRun(s.ctx, &platformv1.PauseRunRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: id, Reason: reason})
	case "continue":
		_, err = c.runs.ContinueRun(s.ctx, &platformv1.ContinueRunRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: id})
	case "rerun":
		id, err = c.rerun(r, s, org, ws, a, id)
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/automations/"+url.PathEscape(a)+"/runs/"+url.PathEscape(id)+"?done="+action, http.StatusSeeOther)
}

// rerun invokes the run's automation again, at the run's stage, with the
// run's inputs.
func (c *Console) rerun(r *http.Request, s *sess, org, ws, a, id string) (string, error) {
	run, err := c.runs.GetRun(s.ctx, &platformv1.GetRunRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, RunId: id})
	if err != nil {
		return "", err
	}
	res, err := c.automations.InvokeAutomation(s.ctx, &platformv1.InvokeAutomationRequest{
		OrganizationId: org, WorkspaceId: ws, AutomationId: a, Inputs: run.GetUserInputs(), Stage: run.GetStage(), RequestId: r.PostFormValue("request_id"),
	})
	if err != nil {
		return "", err
	}
	return res.GetRunId(), nil
}
