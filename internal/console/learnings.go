package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// Learnings are the guide entries of the workspace's automations: what a
// person taught an automation about an exception, applied by the engine
// once approved.

// learningStates are the states a person filters by, as the page says them.
var learningStates = []struct{ Value, Label string }{
	{"", "Not retired"}, {"PENDING_APPROVAL", "Waiting for approval"}, {"APPROVED", "Approved"},
	{"REJECTED", "Rejected"}, {"ARCHIVED", "Retired"},
}

// learningState says an entry's state in words.
func learningState(s platformv1.GuideEntry_State) string {
	switch s {
	case platformv1.GuideEntry_STATE_PENDING_APPROVAL:
		return "Waiting for approval"
	case platformv1.GuideEntry_STATE_APPROVED:
		return "Approved"
	case platformv1.GuideEntry_STATE_REJECTED:
		return "Rejected"
	case platformv1.GuideEntry_STATE_ARCHIVED:
		return "Retired"
	}
	return "Unknown"
}

type learningRow struct {
	E          *platformv1.GuideEntry
	ID, AutoID string
	Automation string
	State      string
}

type learningsData struct {
	pageData
	Rows                []learningRow
	State, Automation   string
	States              []struct{ Value, Label string }
	Automations         []*platformv1.Automation
	Total               int32
	NextPageToken, Next string
}

func (c *Console) learnings(w http.ResponseWriter, r *http.Request, s *sess) {
	base, err := c.basics(r, s, "Learnings")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	q := r.URL.Query()
	d := &learningsData{pageData: base, State: q.Get("state"), Automation: q.Get("automation"), States: learningStates}
	autoNames, autos, err := c.automationNames(s, base.WS)
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d.Automations = autos
	req := &platformv1.ListGuideEntriesRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, AutomationId: "-", PageSize: 50, PageToken: q.Get("page_token")}
	if d.Automation != "" {
		req.AutomationId = d.Automation
	}
	switch d.State {
	case "":
	case "ARCHIVED":
		req.ShowDeleted = true
		req.Filter = "state = ARCHIVED"
	default:
		req.Filter = "state = " + d.State
	}
	res, err := c.guide.ListGuideEntries(s.ctx, req)
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	for _, e := range res.GetGuideEntries() {
		a := names.ID(e.GetAutomation())
		d.Rows = append(d.Rows, learningRow{E: e, ID: names.ID(e.GetName()), AutoID: a, Automation: autoNames[a], State: learningState(e.GetState())})
	}
	d.Total, d.NextPageToken = res.GetTotalSize(), res.GetNextPageToken()
	if d.NextPageToken != "" {
		v := url.Values{"state": {d.State}, "automation": {d.Automation}, "page_token": {d.NextPageToken}}
		d.Next = "?" + v.Encode()
	}
	c.render(w, r, http.StatusOK, "learnings", d)
}

type learningData struct {
	pageData
	E                  *platformv1.GuideEntry
	ID, AutoID         string
	Automation, State  string
	SourceRun, SrcExc  string
	Resolved           []resolvedRun
	ResolvedTotal      int32
	Pending, Approved  bool
	Deleted            bool
	Form               learningForm
	SourceExceptionURL string
}

type learningForm struct{ Title, RootCause, Steps, Notes string }

// resolvedRun is a run whose exception the entry resolved.
type resolvedRun struct {
	RunID, Message string
	When           string
}

// maxResolvedShown bounds the runs a learning's page lists.
const maxResolvedShown = 50

func (c *Console) learning(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showLearning(w, r, s, http.StatusOK, "", nil)
}

func (c *Console) showLearning(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg string, form *learningForm) {
	base, err := c.basics(r, s, "Learning")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	base.Notice = done(r, map[string]string{
		"approve": "Approved: from now on the automation resolves this exception by itself.", "reject": "Rejected: it will never apply.",
		"delete": "Retired: it no longer applies (bring it back below).", "undelete": "Brought back, in the state it had.", "update": "Saved.",
	})
	a, g := r.PathValue("a"), r.PathValue("g")
	e, err := c.guide.GetGuideEntry(s.ctx, &platformv1.GetGuideEntryRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, AutomationId: a, GuideEntryId: g})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	autoNames, _, err := c.automationNames(s, base.WS)
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &learningData{pageData: base, E: e, ID: g, AutoID: a, Automation: autoNames[a], State: learningState(e.GetState()),
		Pending: e.GetState() == platformv1.GuideEntry_STATE_PENDING_APPROVAL, Approved: e.GetState() == platformv1.GuideEntry_STATE_APPROVED,
		Deleted: e.GetDeleteTime() != nil,
		Form:    learningForm{Title: e.GetTitle(), RootCause: e.GetRootCause(), Steps: e.GetResolutionSteps(), Notes: e.GetResolutionNotes()}}
	if form != nil {
		d.Form = *form
	}
	d.Title = "Learning: " + e.GetTitle()
	if _, _, _, run, ok := names.ParseRun(e.GetSourceRun()); ok {
		d.SourceRun = run
	}
	d.SrcExc = names.ID(e.GetSourceException())
	xs, err := c.exceptions.ListExceptions(s.ctx, &platformv1.ListExceptionsRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS,
		Filter: "automation = " + strconv.Quote(a) + " AND resolver = " + strconv.Quote("guideEntries/"+g), PageSize: maxResolvedShown})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	for _, x := range xs.GetExceptions() {
		_, _, _, run, _ := names.ParseRun(x.GetRun())
		d.Resolved = append(d.Resolved, resolvedRun{RunID: run, Message: x.GetMessage(), When: tsText(x.GetUpdateTime())})
	}
	d.ResolvedTotal = xs.GetTotalSize()
	c.render(w, r, code, "learning", d)
}

// learningAction approves, rejects, retires (deletes), brings back or edits
// an entry.
func (c *Console) learningAction(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws, a, g := s.OrganizationID, r.PathValue("ws"), r.PathValue("a"), r.PathValue("g")
	action := r.PathValue("action")
	var err error
	switch action {
	case "approve":
		_, err = c.guide.ApproveGuideEntry(s.ctx, &platformv1.ApproveGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, GuideEntryId: g})
	case "reject":
		_, err = c.guide.RejectGuideEntry(s.ctx, &platformv1.RejectGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, GuideEntryId: g})
	case "delete":
		_, err = c.guide.DeleteGuideEntry(s.ctx, &platformv1.DeleteGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, GuideEntryId: g})
	case "undelete":
		_, err = c.guide.UndeleteGuideEntry(s.ctx, &platformv1.UndeleteGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, GuideEntryId: g})
	case "update":
		f := learningForm{Title: strings.TrimSpace(r.PostFormValue("title")), RootCause: r.PostFormValue("root_cause"),
			Steps: r.PostFormValue("resolution_steps"), Notes: r.PostFormValue("resolution_notes")}
		_, err = c.guide.UpdateGuideEntry(s.ctx, &platformv1.UpdateGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a, GuideEntryId: g,
			GuideEntry: &platformv1.GuideEntry{Title: f.Title, RootCause: f.RootCause, ResolutionSteps: f.Steps, ResolutionNotes: f.Notes},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"title", "root_cause", "resolution_steps", "resolution_notes"}}})
		if st := status.Convert(err); err != nil && st.Code() == codes.InvalidArgument {
			c.showLearning(w, r, s, http.StatusBadRequest, st.Message(), &f)
			return
		}
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		if msg, ok := mendable(err, codes.FailedPrecondition, codes.AlreadyExists); ok {
			c.showLearning(w, r, s, http.StatusConflict, msg, nil)
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, wsURL(ws, "learnings", a, g)+"?done="+action, http.StatusSeeOther)
}
