package server

import (
	"context"
	"strings"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// RunService implements prose.platform.v1.RunService over the store and the
// engine.
type RunService struct {
	platformv1.UnimplementedRunServiceServer
	st  store.Store
	eng *engine.Engine
}

// NewRunService returns the run service.
func NewRunService(st store.Store, eng *engine.Engine) *RunService {
	return &RunService{st: st, eng: eng}
}

// runErr maps a store error about a run: ErrFailedPrecondition (a pause or
// continue from a state that does not allow it) is FAILED_PRECONDITION
// RUN_STATE_CONFLICT.
func runErr(err error, org, ws, automation, id string) error {
	return storeErrors{name: names.Run(org, ws, automation, id), notFound: ReasonRunNotFound, exists: ReasonRunNotFound,
		precondition: ReasonRunStateConflict}.status(err)
}

// getRun finds a run; automation "-" finds it in any automation of the
// workspace.
func (s *RunService) getRun(ctx context.Context, org, ws, automation, id string) (store.Run, error) {
	if automation != "-" {
		r, err := s.st.GetRun(ctx, org, ws, automation, id)
		if err != nil {
			return r, runErr(err, org, ws, automation, id)
		}
		return r, nil
	}
	r, err := s.st.GetRunByID(ctx, id)
	if err != nil || r.OrganizationID != org || r.WorkspaceID != ws {
		return store.Run{}, transport.NotFound(ReasonRunNotFound, names.Run(org, ws, automation, id))
	}
	return r, nil
}

// GetRun gets a run (automation_id "-" finds it whatever its automation).
func (s *RunService) GetRun(ctx context.Context, req *platformv1.GetRunRequest) (*platformv1.Run, error) {
	r, err := s.getRun(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRunId())
	if err != nil {
		return nil, err
	}
	return RunToProto(r)
}

// ListRuns lists the runs of an automation ("-": of every automation of the
// workspace). Filter: state (= !=), create_time (= != < <= > >=),
// parent_run (= !=; an id or resource name, "" for runs no run started). Order:
// create_time or update_time, optionally desc (default create_time desc).
func (s *RunService) ListRuns(ctx context.Context, req *platformv1.ListRunsRequest) (*platformv1.ListRunsResponse, error) {
	org, ws, automation := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	lp, err := parseList(req, sqlfilter.Runs, store.RunOrdering)
	if err != nil {
		return nil, err
	}
	if automation == "" || automation == "-" {
		automation = "-"
		if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
			return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceExists, names.Workspace(org, ws))
		}
	} else if _, err := s.st.GetAutomation(ctx, org, ws, automation); err != nil {
		return nil, automationErr(err, org, ws, automation)
	}
	page, err := s.st.ListRuns(ctx, store.ListRunsRequest{
		OrganizationID: org, WorkspaceID: ws, AutomationID: automation, Filter: lp.Filter, OrderBy: lp.OrderBy,
		PageSize: lp.Size, PageToken: lp.Token,
	})
	if err != nil {
		return nil, storeStatus(err, ReasonAutomationNotFound, ReasonAutomationNotFound, names.Automation(org, ws, automation))
	}
	out := &platformv1.ListRunsResponse{NextPageToken: page.NextPageToken}
	if out.Runs, err = mapItems(page.Items, RunToProto); err != nil {
		return nil, err
	}
	return out, nil
}

// PauseRun pauses a run with a reason (required): executing → stopping (→
// stopped once it reaches its next statement); pending or
// awaiting_guidance → stopped. Other states are FAILED_PRECONDITION.
func (s *RunService) PauseRun(ctx context.Context, req *platformv1.PauseRunRequest) (*platformv1.Run, error) {
	org, ws, automation, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRunId()
	if strings.TrimSpace(req.GetReason()) == "" {
		return nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "reason is required: say why the run is paused", transport.Violation("reason", "required"))
	}
	if s.eng == nil {
		return nil, errStoreUnavailable
	}
	cur, err := s.getRun(ctx, org, ws, automation, id)
	if err != nil {
		return nil, err
	}
	r, err := s.eng.Pause(ctx, org, ws, cur.AutomationID, id, req.GetReason(), actor(ctx))
	if err != nil {
		return nil, runErr(err, org, ws, automation, id)
	}
	return RunToProto(r)
}

// actor is who makes a change with this call, for the run's history: the
// API key it authenticated with (organizations/{o}/apiKeys/{k}, a console
// session opened with a key included), else the user (users/{u}).
func actor(ctx context.Context) string {
	p, ok := transport.PrincipalFrom(ctx)
	switch {
	case !ok:
		return ""
	case p.KeyID != "":
		return names.APIKey(p.OrganizationID, p.KeyID)
	case p.UserID != "":
		return names.User(p.UserID)
	}
	return ""
}

// ContinueRun continues a stopped run: pending, or awaiting_guidance when
// one of its exceptions is still pending. Other states are
// FAILED_PRECONDITION.
func (s *RunService) ContinueRun(ctx context.Context, req *platformv1.ContinueRunRequest) (*platformv1.Run, error) {
	org, ws, automation, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId(), req.GetRunId()
	if s.eng == nil {
		return nil, errStoreUnavailable
	}
	cur, err := s.getRun(ctx, org, ws, automation, id)
	if err != nil {
		return nil, err
	}
	r, err := s.eng.Continue(ctx, org, ws, cur.AutomationID, id, actor(ctx))
	if err != nil {
		return nil, runErr(err, org, ws, automation, id)
	}
	return RunToProto(r)
}
