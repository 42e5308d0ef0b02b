package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

// exceptionNotices confirm the exception page's actions (?done=).
var exceptionNotices = map[string]string{
	"archive":   "The exception is archived: its run is stopped.",
	"unarchive": "The exception waits for guidance again.",
	"assign":    "The assignment is saved.",
}

// resolutionView is the guidance that resolved an exception: what kind,
// the values or answer given, who (by name) and when.
type resolutionView struct {
	What   string
	Values []factView
	Code   string
	By     string
	When   *timestamppb.Timestamp
}

// exceptionState fills what the page says of the exception's state: the
// resolution once resolved, the corrected-values form of a pending user
// error, the live part.
func (c *Console) exceptionState(r *http.Request, s *sess, d *exceptionData) {
	x := d.X
	d.Pending = x.GetState() == platformv1.ExceptionState_EXCEPTION_STATE_PENDING
	d.SelfURL = r.URL.Path + "?fragment=1"
	d.LiveURL = "/w/" + url.PathEscape(d.WS) + "/live?topic=exceptions"
	if x.GetAssignee() != "" {
		d.AssigneeName = cmpOr(c.peopleNames(s, d.WS)[x.GetAssignee()], "someone no longer in the workspace")
	}
	if x.GetState() == platformv1.ExceptionState_EXCEPTION_STATE_RESOLVED {
		d.Resolution = c.resolution(s, d)
	}
	if d.Pending && len(x.GetGuidanceRequest().GetFacts()) == 0 && x.GetGuidanceRequest().GetQuestion() == "" && userError(x) {
		d.Corrections, d.CorrectionExtra = corrections(d.Span)
	}
}

// userError: the exception's group promises corrected values (a user or
// system error, or facts that failed their checks).
func userError(x *platformv1.Exception) bool {
	g := names.ID(x.GetGroup())
	return g == string(lang.GroupUserSystemError) || len(x.GetGuidanceRequest().GetFailedChecks()) > 0
}

// corrections are the fields of the corrected-values form: the facts the
// failing statement reads (typed where it tells), and free rows.
func corrections(stmt string) ([]invokeInput, []int) {
	in, extra := invokeForm(strings.TrimSpace(stmt), "")
	for i := range in {
		in[i].Name = "the " + in[i].Name // the run's facts, as exceptions name them
	}
	return in, extra
}

// resolution reads the guidance that resolved the exception from its
// run's history.
func (c *Console) resolution(s *sess, d *exceptionData) *resolutionView {
	x := d.X
	rv := &resolutionView{By: x.GetResolver(), When: x.GetUpdateTime(), What: "resolved"}
	if _, _, automation, runID, ok := names.ParseRun(x.GetRun()); ok {
		h, err := c.history.ListRunEvents(s.ctx, &platformv1.ListRunEventsRequest{
			OrganizationId: s.OrganizationID, WorkspaceId: d.WS, AutomationId: automation, RunId: runID,
			Filter: "node_kind = " + strconv.Quote(store.ExceptionNodeKind), PageSize: 100,
		})
		if err == nil {
			for _, ev := range h.GetRunEvents() {
				j := ev.GetExecutionJournal()
				p := j.GetNodePatched()
				if p == nil || j.GetExtraMetadata()["exception"].GetText() != x.GetName() {
					continue
				}
				rv.What, rv.When = guidanceLabel(j.GetExtraMetadata()["guidance"].GetText()), j.GetEventTime()
				rv.Values, rv.Code = factViews(p.GetInputsPatch()), p.GetCodePatch()
			}
		}
	}
	if rv.By != "" {
		rv.By = c.resolverNames(s, d.WS, d.Automation, nil, []*platformv1.Exception{x})[rv.By]
	}
	return rv
}

// pastDescription says what the exception asked, once it is no longer
// waiting.
func pastDescription(x *platformv1.Exception) string {
	gr := x.GetGuidanceRequest()
	switch {
	case gr.GetQuestion() != "":
		return "The automation asked: " + gr.GetQuestion()
	case len(gr.GetFailedChecks()) > 0:
		return "Some facts did not pass their checks."
	case len(gr.GetFacts()) > 0:
		return "The automation needed " + strings.Join(gr.GetFacts(), ", ") + "."
	}
	return "The automation could not go on: " + x.GetMessage() + "."
}
