package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/safechange"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// The bounds of the checks, product decisions (docs/safe-change.md).
const (
	// maxSuiteTime bounds the tests of one :test or publish together;
	// each run is bounded by safechange.RunLimits.
	maxSuiteTime = 60 * time.Second
	// defaultPublishReplay is how many runs a publish replays unless told.
	defaultPublishReplay = 100
	// maxListedFailures bounds the failures a refused publish lists in its
	// details (and a revision keeps); the message names the first few.
	maxListedFailures = 50
	maxNamedFailures  = 5
)

// subject is what a check runs: the code and tests of the draft or of a
// revision.
type subject struct {
	a       store.Automation
	code    string
	version int64
	tests   []store.AutomationTest
}

// subjectOf reads the draft (revisionID "") or a revision ("3", "latest").
func (s *SafeChangeService) subjectOf(ctx context.Context, org, ws, id, revisionID string) (subject, error) {
	a, err := s.st.GetAutomation(ctx, org, ws, id)
	if err == nil && !a.DeleteTime.IsZero() {
		err = store.ErrNotFound
	}
	if err != nil {
		return subject{}, automationErr(err, org, ws, id)
	}
	if revisionID == "" {
		tests, err := s.st.AllAutomationTests(ctx, org, ws, id)
		return subject{a: a, code: a.Code, version: a.Version, tests: tests}, err
	}
	name := names.Automation(org, ws, id) + "/revisions/" + revisionID
	var version int64
	if revisionID != LatestRevision {
		if version, err = strconv.ParseInt(revisionID, 10, 64); err != nil || version <= 0 {
			return subject{}, transport.NotFound(ReasonRevisionNotFound, name)
		}
	}
	v, err := s.st.GetAutomationRevision(ctx, org, ws, id, version)
	if errors.Is(err, store.ErrNotFound) {
		return subject{}, transport.NotFound(ReasonRevisionNotFound, name)
	}
	return subject{a: a, code: v.Code, version: v.Version, tests: v.Tests}, err
}

// program parses a subject's code (drafts and revisions were checked when
// saved: a failure here is a precondition of the call).
func (sub subject) program() (*lang.Program, error) {
	prog, err := lang.Parse(sub.code)
	if err != nil {
		return nil, transport.FailedPrecondition(ReasonCodeSyntaxError, fmt.Sprintf("version %d of the automation does not parse: %v", sub.version, err), nil)
	}
	return prog, nil
}

// cases reads the subject's tests (ids: only those, each must exist).
func (sub subject) cases(ids []string) ([]safechange.Case, []store.AutomationTest, error) {
	tests := sub.tests
	if len(ids) > 0 {
		byID := map[string]store.AutomationTest{}
		for _, t := range sub.tests {
			byID[t.ID] = t
		}
		tests = nil
		for _, id := range ids {
			t, ok := byID[id]
			if !ok {
				return nil, nil, transport.NotFound(ReasonTestNotFound, testName(sub.a.OrganizationID, sub.a.WorkspaceID, sub.a.ID, id))
			}
			tests = append(tests, t)
		}
	}
	cases := make([]safechange.Case, 0, len(tests))
	for _, t := range tests {
		c, err := safechange.DecodeCase(t.Spec)
		if err != nil {
			return nil, nil, fmt.Errorf("test %s: %w", t.ID, err)
		}
		c.Name = t.DisplayName
		cases = append(cases, c)
	}
	return cases, tests, nil
}

// runTests runs cases against prog, within maxSuiteTime together.
func (s *SafeChangeService) runTests(ctx context.Context, a store.Automation, prog *lang.Program, cases []safechange.Case) safechange.SuiteResult {
	ctx, cancel := context.WithTimeout(ctx, maxSuiteTime)
	defer cancel()
	return safechange.RunSuite(ctx, prog, cases, safechange.Options{Books: s.booksOf(a.OrganizationID, a.WorkspaceID)})
}

// RunAutomationTests runs the tests of the draft (or of a revision)
// against its code. No book is called and nothing is written.
func (s *SafeChangeService) RunAutomationTests(ctx context.Context, req *platformv1.RunAutomationTestsRequest) (*platformv1.RunAutomationTestsResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	sub, err := s.subjectOf(ctx, org, ws, id, req.GetRevisionId())
	if err != nil {
		return nil, err
	}
	prog, err := sub.program()
	if err != nil {
		return nil, err
	}
	cases, tests, err := sub.cases(req.GetTestIds())
	if err != nil {
		return nil, err
	}
	res := s.runTests(ctx, sub.a, prog, cases)
	out := &platformv1.RunAutomationTestsResponse{AutomationVersion: versionStr(sub.version), PassedCount: int32(res.Passed),
		FailedCount: int32(res.Failed), Coverage: coverageProto(res.Coverage)}
	for i, r := range res.Results {
		p, err := testResultProto(r, testName(org, ws, id, tests[i].ID))
		if err != nil {
			return nil, err
		}
		out.Results = append(out.Results, p)
	}
	return out, nil
}

func int32s(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

func coverageProto(c safechange.Coverage) *platformv1.AutomationTestCoverage {
	return &platformv1.AutomationTestCoverage{Lines: int32s(c.Lines), CoveredLines: int32s(c.Covered),
		UncoveredLines: int32s(c.Uncovered), Percent: int32(c.Percent())}
}

func testResultProto(r safechange.Result, name string) (*platformv1.AutomationTestResult, error) {
	p := &platformv1.AutomationTestResult{Test: name, DisplayName: r.Name, Passed: r.Passed, Failures: r.Failures, Log: r.Log}
	var err error
	if p.Differences, err = codec.DiffsProto(r.Diffs); err != nil {
		return nil, err
	}
	if len(r.Outputs) > 0 {
		if p.Outputs, err = protovalue.MapToProto(r.Outputs); err != nil {
			return nil, err
		}
	}
	if x := r.Exception; x != nil {
		p.Exception = &platformv1.TestRunException{Group: string(x.Group), Message: x.Message, Line: int32(r.Line),
			Location: &platformv1.Location{StartByte: int64(x.Span.Start), EndByte: int64(x.Span.End)}}
	}
	return p, nil
}

// Publish is the gated publish of PublishAutomation: it runs the draft's
// tests and, when the automation was published before, replays the last
// finished runs of the published version against the draft; a failing
// test or a changed run refuses the publish (FAILED_PRECONDITION
// PUBLISH_CHECKS_FAILED, the failures as PreconditionFailure violations)
// unless force comes with a reason. The published revision keeps what was
// checked, and the draft is published only if it is still the one checked.
func (s *SafeChangeService) Publish(ctx context.Context, req *platformv1.PublishAutomationRequest) (store.Automation, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	force, reason := req.GetForce(), strings.TrimSpace(req.GetForceReason())
	switch {
	case force && reason == "":
		return store.Automation{}, transport.InvalidArgument(ReasonInvalidField, "a forced publish needs force_reason: why it goes on past its failures",
			transport.Violation("force_reason", "required with force"))
	case !force && req.GetForceReason() != "":
		return store.Automation{}, transport.InvalidArgument(ReasonInvalidField, "force_reason is given without force",
			transport.Violation("force_reason", "only with force"))
	}
	runs := int(req.GetReplayRunCount())
	if runs == 0 {
		runs = defaultPublishReplay
	}
	sub, err := s.subjectOf(ctx, org, ws, id, "")
	if err != nil {
		return store.Automation{}, err
	}
	check, violations, err := s.check(ctx, sub, runs)
	if err != nil {
		return store.Automation{}, err
	}
	if len(violations) > 0 && !force {
		return store.Automation{}, refusal(check, violations)
	}
	if len(violations) > 0 {
		check.Forced, check.ForceReason = true, reason
	}
	b, err := codec.EncodePublishCheck(check)
	if err != nil {
		return store.Automation{}, err
	}
	a, err := s.st.PublishCheckedAutomation(ctx, org, ws, id, callerID(ctx), sub.version, b)
	if errors.Is(err, store.ErrStageChanged) {
		return store.Automation{}, transport.Aborted(ReasonDraftChanged, "the draft changed while its checks ran: publish again")
	}
	if err != nil {
		return store.Automation{}, automationErr(err, org, ws, id)
	}
	return a, nil
}

// check runs a publish's checks on the draft: what they found, and the
// failures as violations.
func (s *SafeChangeService) check(ctx context.Context, sub subject, runs int) (*platformv1.PublishCheck, []*errdetails.PreconditionFailure_Violation, error) {
	prog, err := sub.program()
	if err != nil {
		return nil, nil, err
	}
	cases, tests, err := sub.cases(nil)
	if err != nil {
		return nil, nil, err
	}
	a := sub.a
	res := s.runTests(ctx, a, prog, cases)
	check := &platformv1.PublishCheck{TestsRun: int32(len(cases)), TestsFailed: int32(res.Failed), CoveragePercent: int32(res.Coverage.Percent())}
	var vs []*errdetails.PreconditionFailure_Violation
	for i, r := range res.Results {
		if !r.Passed {
			vs = append(vs, &errdetails.PreconditionFailure_Violation{Type: "TEST", Subject: testName(a.OrganizationID, a.WorkspaceID, a.ID, tests[i].ID),
				Description: fmt.Sprintf("test %q: %s", r.Name, strings.Join(r.Failures, "; "))})
		}
	}
	if a.PublishedVersion > 0 {
		err := s.replayRuns(ctx, a, prog, nil, runs, func(batch []replayed) error {
			for _, x := range batch {
				check.RunsReplayed++
				if x.res.Outcome == safechange.Unchanged {
					continue
				}
				check.RunsChanged++
				vs = append(vs, &errdetails.PreconditionFailure_Violation{Type: "REPLAY",
					Subject:     names.Run(a.OrganizationID, a.WorkspaceID, a.ID, x.run.ID),
					Description: fmt.Sprintf("run %s: %s: %s", x.run.ID, x.res.Outcome, x.res.Message)})
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	for _, v := range vs {
		if len(check.Failures) == maxListedFailures {
			break
		}
		check.Failures = append(check.Failures, v.GetDescription())
	}
	return check, vs, nil
}

// refusal is the error of a publish its checks refuse.
func refusal(check *platformv1.PublishCheck, vs []*errdetails.PreconditionFailure_Violation) error {
	var what []string
	if check.GetTestsFailed() > 0 {
		what = append(what, fmt.Sprintf("%d of %d tests fail", check.GetTestsFailed(), check.GetTestsRun()))
	}
	if check.GetRunsChanged() > 0 {
		what = append(what, fmt.Sprintf("%d of %d replayed runs change", check.GetRunsChanged(), check.GetRunsReplayed()))
	}
	var named []string
	for i, v := range vs {
		if i == maxNamedFailures {
			named = append(named, fmt.Sprintf("and %d more", len(vs)-i))
			break
		}
		named = append(named, v.GetDescription())
	}
	msg := "publish refused: " + strings.Join(what, " and ") + " (fix them, or publish with force and a reason): " + strings.Join(named, "; ")
	if len(vs) > maxListedFailures {
		vs = vs[:maxListedFailures]
	}
	return transport.NewError(codes.FailedPrecondition, ReasonPublishChecksFailed, msg).
		Meta("tests_run", fmt.Sprint(check.GetTestsRun())).Meta("tests_failed", fmt.Sprint(check.GetTestsFailed())).
		Meta("runs_replayed", fmt.Sprint(check.GetRunsReplayed())).Meta("runs_changed", fmt.Sprint(check.GetRunsChanged())).
		Preconditions(vs...).Err()
}
