package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"go.einride.tech/aip/fieldmask"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	errorsv1 "github.com/proserun/prose/gen/prose/errors/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/safechange"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// Reasons of the safe change service's errors.
const (
	ReasonTestNotFound        = errorsv1.ErrorReason_ERROR_REASON_AUTOMATION_TEST_NOT_FOUND
	ReasonTestExists          = errorsv1.ErrorReason_ERROR_REASON_AUTOMATION_TEST_ALREADY_EXISTS
	ReasonInvalidTest         = errorsv1.ErrorReason_ERROR_REASON_INVALID_AUTOMATION_TEST
	ReasonTestLimit           = errorsv1.ErrorReason_ERROR_REASON_AUTOMATION_TEST_LIMIT_REACHED
	ReasonPublishChecksFailed = errorsv1.ErrorReason_ERROR_REASON_PUBLISH_CHECKS_FAILED
	ReasonReplayNotFound      = errorsv1.ErrorReason_ERROR_REASON_REPLAY_NOT_FOUND
	ReasonReplayRunning       = errorsv1.ErrorReason_ERROR_REASON_REPLAY_RUNNING
	ReasonDraftChanged        = errorsv1.ErrorReason_ERROR_REASON_DRAFT_CHANGED
)

// SafeChangeService implements prose.platform.v1.AutomationTestService:
// an automation's tests (kept with its draft, versioned in its revisions),
// running them against the draft or a revision, replaying finished runs
// of the published version against the draft, and tests made from guide
// entries. It also makes the checks a publish runs (PublishChecks). The
// format and the runner are package internal/safechange; no book is ever
// called: the workspace's books are only looked up (Books).
type SafeChangeService struct {
	platformv1.UnimplementedAutomationTestServiceServer
	st  store.Store
	eng *engine.Engine
	// books gives the books a workspace's sentences are looked up in.
	books func(org, ws string) lang.Books
	log   *slog.Logger

	// background replays: stopped by Close
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewSafeChangeService returns the service. books gives a workspace's
// books (for lookup only; nil: none but the tests' stubs).
func NewSafeChangeService(st store.Store, eng *engine.Engine, books func(org, ws string) lang.Books, logger *slog.Logger) *SafeChangeService {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &SafeChangeService{st: st, eng: eng, books: books, log: logger, ctx: ctx, cancel: cancel}
}

// Close stops the replays running in the background and waits for them
// (each records that it stopped).
func (s *SafeChangeService) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

func (s *SafeChangeService) booksOf(org, ws string) lang.Books {
	if s.books == nil {
		return nil
	}
	return s.books(org, ws)
}

func testName(org, ws, automation, id string) string {
	return names.AutomationTest(org, ws, automation, id)
}

// testErr maps a store error about a test (id "": about the automation's
// tests; a test of an automation that does not exist does not exist).
func testErr(err error, org, ws, automation, id string) error {
	switch {
	case errors.Is(err, store.ErrNotFound) && id != "":
		return transport.NotFound(ReasonTestNotFound, testName(org, ws, automation, id))
	case errors.Is(err, store.ErrNotFound):
		return transport.NotFound(ReasonAutomationNotFound, names.Automation(org, ws, automation))
	case errors.Is(err, store.ErrAlreadyExists):
		return transport.NewError(codes.AlreadyExists, ReasonTestExists,
			fmt.Sprintf("automation %s has a test with that id or display name", names.Automation(org, ws, automation))).Err()
	case errors.Is(err, store.ErrResourceExhausted):
		return transport.NewError(codes.ResourceExhausted, ReasonTestLimit, withoutSentinel(err, store.ErrResourceExhausted)).
			Meta("limit", fmt.Sprint(safechange.MaxTests)).Err()
	}
	return storeStatus(err, ReasonTestNotFound, ReasonTestExists, testName(org, ws, automation, id))
}

// readTest reads a request's test as the language's test, checked.
func readTest(p *platformv1.AutomationTest, field string) (safechange.Case, []byte, error) {
	if p == nil {
		return safechange.Case{}, nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, field+" is required", transport.Violation(field, "required"))
	}
	c, err := codec.TestCase(p, field)
	var te *codec.TestError
	if errors.As(err, &te) {
		return c, nil, transport.InvalidArgument(ReasonInvalidTest, te.Error(), transport.Violation(te.Field, te.Msg))
	}
	if err != nil {
		return c, nil, err
	}
	if err := c.Check(); err != nil {
		return c, nil, transport.InvalidArgument(ReasonInvalidTest, field+": "+err.Error(), transport.Violation(field, err.Error()))
	}
	spec, err := safechange.EncodeCase(c)
	if err != nil {
		return c, nil, transport.InvalidArgument(ReasonInvalidTest, field+": "+err.Error(), transport.Violation(field, err.Error()))
	}
	if len(spec) > safechange.MaxCaseBytes {
		msg := fmt.Sprintf("the test takes %d bytes written, more than the %d a test may", len(spec), safechange.MaxCaseBytes)
		return c, nil, transport.InvalidArgument(ReasonInvalidTest, field+": "+msg, transport.Violation(field, msg))
	}
	return c, spec, nil
}

// testProto renders a stored test.
func testProto(t store.AutomationTest) (*platformv1.AutomationTest, error) {
	c, err := safechange.DecodeCase(t.Spec)
	if err != nil {
		return nil, fmt.Errorf("test %s: %w", t.ID, err)
	}
	p, err := codec.TestProto(c)
	if err != nil {
		return nil, err
	}
	p.Name = testName(t.OrganizationID, t.WorkspaceID, t.AutomationID, t.ID)
	p.DisplayName = t.DisplayName
	p.CreateTime, p.UpdateTime = timestampOrNil(t.CreateTime), timestampOrNil(t.UpdateTime)
	if t.SourceGuideEntry != "" {
		p.SourceGuideEntry = names.GuideEntry(t.OrganizationID, t.WorkspaceID, t.AutomationID, t.SourceGuideEntry)
	}
	p.FileText = string(t.Spec)
	return p, nil
}

// CreateAutomationTest adds a test to the draft (its version increases).
func (s *SafeChangeService) CreateAutomationTest(ctx context.Context, req *platformv1.CreateAutomationTestRequest) (*platformv1.AutomationTest, error) {
	org, ws, a := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	c, spec, err := readTest(req.GetTest(), "test")
	if err != nil {
		return nil, err
	}
	t, err := s.st.CreateAutomationTest(ctx, store.AutomationTest{OrganizationID: org, WorkspaceID: ws, AutomationID: a,
		ID: req.GetTestId(), DisplayName: c.Name, Spec: spec}, callerID(ctx), safechange.MaxTests)
	if err != nil {
		return nil, testErr(err, org, ws, a, "")
	}
	return testProto(t)
}

// GetAutomationTest gets a test of the draft.
func (s *SafeChangeService) GetAutomationTest(ctx context.Context, req *platformv1.GetAutomationTestRequest) (*platformv1.AutomationTest, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetTestId()
	t, err := s.st.GetAutomationTest(ctx, org, ws, a, id)
	if err != nil {
		return nil, transport.NotFound(ReasonTestNotFound, testName(org, ws, a, id))
	}
	return testProto(t)
}

// ListAutomationTests lists the draft's tests, oldest first.
func (s *SafeChangeService) ListAutomationTests(ctx context.Context, req *platformv1.ListAutomationTestsRequest) (*platformv1.ListAutomationTestsResponse, error) {
	org, ws, a := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	lp, err := parsePage(req)
	if err != nil {
		return nil, err
	}
	if _, err := s.st.GetAutomation(ctx, org, ws, a); err != nil {
		return nil, automationErr(err, org, ws, a)
	}
	page, err := s.st.ListAutomationTests(ctx, store.ListAutomationTestsRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: a,
		PageSize: lp.Size, PageToken: lp.Token})
	if err != nil {
		return nil, testErr(err, org, ws, a, "")
	}
	tests, err := mapItems(page.Items, testProto)
	if err != nil {
		return nil, err
	}
	return &platformv1.ListAutomationTestsResponse{Tests: tests, NextPageToken: page.NextPageToken}, nil
}

// testMask are the paths UpdateAutomationTest may change.
var testMask = []string{"display_name", "inputs", "answers", "book_stubs", "expect", "now"}

// UpdateAutomationTest changes a test (the fields of update_mask; empty or
// `*`: the whole test); the draft's version increases.
func (s *SafeChangeService) UpdateAutomationTest(ctx context.Context, req *platformv1.UpdateAutomationTestRequest) (*platformv1.AutomationTest, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetTestId()
	if req.GetTest() == nil {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "test is required", transport.Violation("test", "required"))
	}
	if err := checkUpdateMask(req.GetUpdateMask(), &platformv1.AutomationTest{}); err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range req.GetUpdateMask().GetPaths() {
		// a field inside one of the test's (the gateway's mask of a PATCH
		// body names the leaves: expect.outputs) changes that field
		p, _, _ = strings.Cut(p, ".")
		if !containsString(paths, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 || fieldmask.IsFullReplacement(req.GetUpdateMask()) {
		paths = testMask
	}
	for _, p := range paths {
		if !containsString(testMask, p) {
			return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("update_mask: %q cannot be updated", p),
				transport.Violation("update_mask", "unknown path "+p))
		}
	}
	in, err := codec.TestCase(req.GetTest(), "test")
	var te *codec.TestError
	if errors.As(err, &te) {
		return nil, transport.InvalidArgument(ReasonInvalidTest, te.Error(), transport.Violation(te.Field, te.Msg))
	}
	if err != nil {
		return nil, err
	}
	t, err := s.st.UpdateAutomationTest(ctx, org, ws, a, id, callerID(ctx), func(t *store.AutomationTest) error {
		c, err := safechange.DecodeCase(t.Spec)
		if err != nil {
			return err
		}
		mergeCase(&c, in, paths)
		p, err := codec.TestProto(c)
		if err != nil {
			return err
		}
		_, spec, err := readTest(p, "test")
		if err != nil {
			return err
		}
		t.DisplayName, t.Spec = c.Name, spec
		return nil
	})
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) {
			return nil, err
		}
		return nil, testErr(err, org, ws, a, id)
	}
	return testProto(t)
}

// mergeCase copies the fields of paths from in to c.
func mergeCase(c *safechange.Case, in safechange.Case, paths []string) {
	for _, p := range paths {
		switch p {
		case "display_name":
			c.Name = in.Name
		case "inputs":
			c.Inputs = in.Inputs
		case "answers":
			c.Answers = in.Answers
		case "book_stubs":
			c.Books = in.Books
		case "expect":
			c.Expect = in.Expect
		case "now":
			c.Now = in.Now
		}
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// DeleteAutomationTest removes a test from the draft (its version increases).
func (s *SafeChangeService) DeleteAutomationTest(ctx context.Context, req *platformv1.DeleteAutomationTestRequest) (*emptypb.Empty, error) {
	org, ws, a, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetTestId()
	if err := s.st.DeleteAutomationTest(ctx, org, ws, a, id, callerID(ctx)); err != nil {
		return nil, testErr(err, org, ws, a, id)
	}
	return &emptypb.Empty{}, nil
}
