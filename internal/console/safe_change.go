package console

import (
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// The safe change page of an automation (docs/safe-change.md): before
// publishing, its tests against the draft with the lines no test reaches
// highlighted, the last replay of the published version's runs with each
// changed run's outputs side by side (recorded, draft), and the publish
// itself, refused with its failures listed unless forced with a reason.

func (c *Console) safeChangeRoutes() {
	c.mux.HandleFunc("GET /w/{ws}/automations/{a}/safe-change", c.session(c.safeChange))
	c.mux.HandleFunc("POST /w/{ws}/automations/{a}/safe-change/{action}", c.session(c.safeChangeAction))
}

// coveredLine is a line of the draft, marked when no test reaches it.
type coveredLine struct {
	N         int
	Text      string
	Uncovered bool
}

// outputPair is one output of a changed run: what it recorded, what the
// draft gives.
type outputPair struct {
	Output, Recorded, Draft string
}

type changedRun struct {
	Run     string
	Outcome string
	Message string
	Outputs []outputPair
}

type safeChangeData struct {
	pageData
	A        *platformv1.Automation
	ID       string
	Tests    *platformv1.RunAutomationTestsResponse
	Lines    []coveredLine
	Replay   *platformv1.AutomationReplay
	Changed  []changedRun
	Failures []string
}

func (c *Console) safeChange(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showSafeChange(w, r, s, http.StatusOK, "", nil)
}

func (c *Console) showSafeChange(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg string, failures []string) {
	base, err := c.basics(r, s, "Check and publish")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	org, ws, id := s.OrganizationID, base.WS, r.PathValue("a")
	a, err := c.automations.GetAutomation(s.ctx, &platformv1.GetAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	tests := platformv1.NewAutomationTestServiceClient(c.opts.Conn)
	run, err := tests.RunAutomationTests(s.ctx, &platformv1.RunAutomationTestsRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &safeChangeData{pageData: base, A: a, ID: id, Tests: run, Failures: failures}
	d.Title = "Check and publish " + a.GetDisplayName()
	uncovered := map[int32]bool{}
	for _, l := range run.GetCoverage().GetUncoveredLines() {
		uncovered[l] = true
	}
	for i, l := range strings.Split(strings.TrimSuffix(a.GetEnglishCode(), "\n"), "\n") {
		d.Lines = append(d.Lines, coveredLine{N: i + 1, Text: l, Uncovered: uncovered[int32(i+1)]})
	}
	if rep, err := tests.GetAutomationReplay(s.ctx, &platformv1.GetAutomationReplayRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id}); err == nil {
		d.Replay = rep
		res, err := tests.ListAutomationReplayResults(s.ctx, &platformv1.ListAutomationReplayResultsRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: id, Filter: "outcome != OUTCOME_UNCHANGED", PageSize: 100})
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		for _, x := range res.GetResults() {
			cr := changedRun{Run: x.GetRun(), Message: x.GetMessage(),
				Outcome: strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(x.GetOutcome().String(), "OUTCOME_"), "_", " "))}
			for _, diff := range x.GetDifferences() {
				p := outputPair{Output: diff.GetOutput(), Recorded: "—", Draft: "—"}
				if diff.GetPath() != "" {
					p.Output += "'s " + diff.GetPath()
				}
				if diff.GetExpected() != nil {
					p.Recorded = valueText(diff.GetExpected())
				}
				if diff.GetActual() != nil {
					p.Draft = valueText(diff.GetActual())
				}
				cr.Outputs = append(cr.Outputs, p)
			}
			d.Changed = append(d.Changed, cr)
		}
	} else if status.Code(err) != codes.NotFound {
		c.grpcFail(w, r, s, err)
		return
	}
	c.render(w, r, code, "safe_change", d)
}

func (c *Console) safeChangeAction(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws, id := s.OrganizationID, r.PathValue("ws"), r.PathValue("a")
	back := "/w/" + url.PathEscape(ws) + "/automations/" + url.PathEscape(id) + "/safe-change"
	var err error
	switch r.PathValue("action") {
	case "replay":
		_, err = platformv1.NewAutomationTestServiceClient(c.opts.Conn).ReplayAutomation(s.ctx, &platformv1.ReplayAutomationRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: id})
	case "publish":
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		_, err = c.automations.PublishAutomation(s.ctx, &platformv1.PublishAutomationRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationId: id, Force: reason != "", ForceReason: reason})
		if err == nil {
			http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/automations/"+url.PathEscape(id), http.StatusSeeOther)
			return
		}
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		st := status.Convert(err)
		if st.Code() == codes.FailedPrecondition || st.Code() == codes.InvalidArgument || st.Code() == codes.Aborted {
			var failures []string
			for _, det := range st.Details() {
				if pf, ok := det.(*errdetails.PreconditionFailure); ok {
					for _, v := range pf.GetViolations() {
						failures = append(failures, v.GetDescription())
					}
				}
			}
			msg, code := st.Message(), http.StatusBadRequest
			if len(failures) > 0 {
				// a refused publish is this page with why: an answer, not
				// a mistake of the request
				msg, code = "Publishing is refused: the draft fails the checks below. Fix them, or publish anyway with a reason.", http.StatusOK
			}
			c.showSafeChange(w, r, s, code, msg, failures)
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
