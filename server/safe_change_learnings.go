package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/safechange"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// Learnings become tests: an approved guide entry is what a person taught
// the automation about an exception; the test made of it runs the
// entry's source run again — its inputs, its clock, the answers it was
// given (the entry's own at the entry's exception), its book results as
// stubs — and expects what the run came to, so that a later change that
// breaks what was taught fails a test.

// CreateAutomationTestFromGuideEntry makes a test of the draft from an
// approved guide entry.
func (s *SafeChangeService) CreateAutomationTestFromGuideEntry(ctx context.Context, req *platformv1.CreateAutomationTestFromGuideEntryRequest) (*platformv1.AutomationTest, error) {
	org, ws, a, gid := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetGuideEntryId()
	en, err := s.st.GetGuideEntry(ctx, org, ws, a, gid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, transport.NotFound(ReasonGuideEntryNotFound, names.GuideEntry(org, ws, a, gid))
	}
	if err != nil {
		return nil, err
	}
	if en.State != store.GuideApproved || !en.DeleteTime.IsZero() {
		return nil, transport.FailedPrecondition(ReasonGuideEntryStateConflict,
			fmt.Sprintf("guide entry %s is %s: only an approved entry becomes a test", names.GuideEntry(org, ws, a, gid), en.State),
			map[string]string{"state": string(en.State)})
	}
	c, err := s.caseFromEntry(ctx, en)
	if err != nil {
		return nil, err
	}
	if name := req.GetDisplayName(); name != "" {
		c.Name = name
	}
	p, err := codec.TestProto(c)
	if err != nil {
		return nil, err
	}
	c, spec, err := readTest(p, "test")
	if err != nil {
		return nil, err
	}
	t, err := s.st.CreateAutomationTest(ctx, store.AutomationTest{OrganizationID: org, WorkspaceID: ws, AutomationID: a,
		ID: req.GetTestId(), DisplayName: c.Name, Spec: spec, SourceGuideEntry: en.ID}, callerID(ctx), safechange.MaxTests)
	if err != nil {
		return nil, testErr(err, org, ws, a, "")
	}
	return testProto(t)
}

// caseFromEntry makes the test of an entry from its source run's record.
func (s *SafeChangeService) caseFromEntry(ctx context.Context, en store.GuideEntry) (safechange.Case, error) {
	org, ws := en.OrganizationID, en.WorkspaceID
	cannot := func(why string) error {
		return transport.FailedPrecondition(ReasonFailedPrecondition,
			fmt.Sprintf("guide entry %s cannot become a test: %s", names.GuideEntry(org, ws, en.AutomationID, en.ID), why), nil)
	}
	r, err := s.st.GetRunByID(ctx, en.SourceRun)
	if errors.Is(err, store.ErrNotFound) || err == nil && (r.OrganizationID != org || r.WorkspaceID != ws || r.AutomationID != en.AutomationID) {
		return safechange.Case{}, cannot("the run it was made from is gone")
	}
	if err != nil {
		return safechange.Case{}, err
	}
	recs, err := s.st.ListRunRecords(ctx, org, ws, []string{r.ID})
	if err != nil {
		return safechange.Case{}, err
	}
	rec := codec.ReplayRecord(r, recs[r.ID])
	if rec.Unreplayable != "" {
		return safechange.Case{}, cannot(rec.Unreplayable)
	}
	taught, err := codec.DecodeGuidance(en.Guidance)
	if err != nil {
		return safechange.Case{}, err
	}
	c := safechange.Case{Name: en.Title, Inputs: rec.Inputs, Now: r.CreateTime}
	asks := en.Question
	if asks == "" && en.Fact != "" {
		asks = "the " + en.Fact
	}
	found := false
	for _, x := range recs[r.ID].Resolved {
		if x.Exception.Step != 0 {
			continue
		}
		res, err := codec.DecodeGuidance(x.Guidance)
		if err != nil {
			return safechange.Case{}, cannot(err.Error())
		}
		a := ""
		if x.Exception.ID == en.SourceException {
			res, a, found = taught, asks, true
		}
		if ans, ok := answerOf(res, a); ok {
			c.Answers = append(c.Answers, ans)
		}
	}
	if !found {
		// made from an exception not resolved yet: the entry answers it last
		if ans, ok := answerOf(taught, asks); ok {
			c.Answers = append(c.Answers, ans)
		}
	}
	c.Books = stubsOf(rec.Calls)
	// What the test expects is what these answers make of the run with
	// the code it ran: its outputs, or the exception it then waits on.
	code, _ := codec.StepCode(r, 0)
	prog, err := lang.Parse(code)
	if err != nil {
		return safechange.Case{}, cannot("the code of its run does not parse")
	}
	got := safechange.RunCase(ctx, prog, c, safechange.Options{Books: s.booksOf(org, ws)})
	switch {
	case got.Exception != nil:
		c.Expect.Exception = &safechange.ExpectedException{Group: string(got.Exception.Group), Line: got.Line}
	case !got.Passed:
		return safechange.Case{}, cannot(strings.Join(got.Failures, "; "))
	default:
		c.Expect.Outputs = got.Outputs
		if c.Expect.Outputs == nil {
			c.Expect.Outputs = map[string]lang.Value{}
		}
	}
	return c, nil
}

// answerOf is a test's answer of guidance a run was given; retries answer
// book failures, which a test's stubs never give, and are left out.
func answerOf(res lang.Resolution, asks string) (safechange.Answer, bool) {
	a := safechange.Answer{Asks: asks}
	switch res.Kind {
	case lang.Answer:
		a.Kind, a.Value = safechange.AnswerValue, res.Answer
	case lang.ProvideValues:
		a.Kind, a.Values, a.Expressions = safechange.AnswerValues, res.Values, res.Expressions
	case lang.Skip:
		a.Kind = safechange.AnswerSkip
	case lang.ReplaceStep:
		a.Kind, a.Code = safechange.AnswerCode, res.Code
	default:
		return a, false
	}
	return a, true
}

// stubsOf are the stubs that give a test a run's book results: one per
// procedure, its results in the order the run got them.
func stubsOf(calls []safechange.RecordedCall) []safechange.Stub {
	var out []safechange.Stub
	at := map[string]int{}
	for _, c := range calls {
		name := c.Book + "/" + c.Procedure
		i, ok := at[name]
		if !ok {
			i = len(out)
			at[name] = i
			out = append(out, safechange.Stub{Call: name})
		}
		out[i].Results = append(out[i].Results, resultOf(c.Outputs))
	}
	return out
}

// resultOf is the stub result of a call's outputs: the one output, or a
// dictionary of them.
func resultOf(outputs map[string]lang.Value) lang.Value {
	if len(outputs) == 1 {
		for _, v := range outputs {
			return v
		}
	}
	d := lang.NewDictionary()
	for _, k := range codec.SortedNames(outputs) {
		d.SetText(k, outputs[k])
	}
	return lang.DictValue(d)
}
