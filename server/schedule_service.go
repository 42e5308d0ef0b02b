package server

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine/schedule"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// NextRunTimesShown is how many next_run_times a schedule shows.
const NextRunTimesShown = 5

// ScheduleService implements prose.platform.v1.ScheduleService: at most one
// schedule per automation, checked and described by engine/schedule, run by
// the scheduler of every replica.
type ScheduleService struct {
	platformv1.UnimplementedScheduleServiceServer
	st       store.Store
	now      func() time.Time
	onChange func()
}

// NewScheduleService returns the schedule service. now is the clock (nil:
// time.Now); onChange (may be nil) is called after every change, to wake
// the local scheduler.
func NewScheduleService(st store.Store, now func() time.Time, onChange func()) *ScheduleService {
	if now == nil {
		now = time.Now
	}
	if onChange == nil {
		onChange = func() {}
	}
	return &ScheduleService{st: st, now: now, onChange: onChange}
}

type scheduleRef interface {
	GetOrganizationId() string
	GetWorkspaceId() string
	GetAutomationId() string
}

func scheduleErr(err error, r scheduleRef) error {
	return storeStatus(err, ReasonScheduleNotFound, ReasonScheduleExists,
		schedule.Name(r.GetOrganizationId(), r.GetWorkspaceId(), r.GetAutomationId()))
}

// parseConfig checks the configuration of a request's schedule.
func parseConfig(s *platformv1.AutomationSchedule) (*schedule.Calendar, []byte, error) {
	if s == nil {
		return nil, nil, transport.InvalidArgument(transport.ReasonRequiredFieldMissing, "schedule is required", transport.Violation("schedule", "required"))
	}
	cfg, err := codec.ScheduleConfigToStored(s.GetConfig())
	if err != nil {
		return nil, nil, err
	}
	cal, err := schedule.Parse(cfg)
	if err != nil {
		var fe *schedule.FieldError
		if errors.As(err, &fe) {
			return nil, nil, transport.InvalidArgument(ReasonInvalidSchedule, "schedule."+fe.Error(), transport.Violation("schedule."+fe.Field, fe.Msg))
		}
		return nil, nil, err
	}
	b, err := schedule.EncodeConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cal, b, nil
}

// scheduleProto renders a stored schedule as of now.
func (s *ScheduleService) scheduleProto(sc store.Schedule) (*platformv1.AutomationSchedule, error) {
	cfg, err := schedule.DecodeConfig(sc.Config)
	if err != nil {
		return nil, err
	}
	cal, err := schedule.Parse(cfg)
	if err != nil {
		return nil, err
	}
	apiCfg, err := codec.ScheduleConfigFromStored(cfg)
	if err != nil {
		return nil, err
	}
	out := &platformv1.AutomationSchedule{
		Name:    schedule.Name(sc.OrganizationID, sc.WorkspaceID, sc.AutomationID),
		Config:  apiCfg,
		Enabled: sc.Enabled,
		Summary: cal.Summary(),
	}
	// NextTime is the first occurrence no scheduler has handled (zero: none
	// is left); a disabled schedule shows no next run.
	if sc.Enabled && !sc.NextTime.IsZero() {
		for _, t := range cal.NextN(sc.NextTime, NextRunTimesShown) {
			out.NextRunTimes = append(out.NextRunTimes, timestamppb.New(t))
		}
	}
	from := sc.NextTime
	if !sc.Enabled {
		from = s.now()
	}
	if n, ok := cal.Remaining(from); ok {
		if sc.NextTime.IsZero() {
			n = 0
		}
		out.RemainingOccurrences = int32(n) //nolint:gosec // G115: at most schedule.MaxOccurrences
	}
	return out, nil
}

// CreateAutomationSchedule creates the schedule of an automation, enabled;
// its first occurrence is the first one at or after now.
func (s *ScheduleService) CreateAutomationSchedule(ctx context.Context, req *platformv1.CreateAutomationScheduleRequest) (*platformv1.AutomationSchedule, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	cal, cfg, err := parseConfig(req.GetSchedule())
	if err != nil {
		return nil, err
	}
	a, err := s.st.GetAutomation(ctx, org, ws, id)
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	if !a.DeleteTime.IsZero() {
		return nil, transport.NotFound(ReasonAutomationNotFound, names.Automation(org, ws, id))
	}
	next, _ := cal.Next(s.now())
	sc, err := s.st.CreateSchedule(ctx, store.Schedule{OrganizationID: org, WorkspaceID: ws, AutomationID: id, Config: cfg, Enabled: true, NextTime: next})
	if errors.Is(err, store.ErrNotFound) {
		return nil, transport.NotFound(ReasonAutomationNotFound, names.Automation(org, ws, id))
	}
	if err != nil {
		return nil, scheduleErr(err, req)
	}
	s.onChange()
	return s.scheduleProto(sc)
}

// UpdateAutomationSchedule replaces the configuration; the next occurrence
// is the first of the new one at or after now. Enabled is kept.
func (s *ScheduleService) UpdateAutomationSchedule(ctx context.Context, req *platformv1.UpdateAutomationScheduleRequest) (*platformv1.AutomationSchedule, error) {
	cal, cfg, err := parseConfig(req.GetSchedule())
	if err != nil {
		return nil, err
	}
	cur, err := s.st.GetSchedule(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId())
	if err != nil {
		return nil, scheduleErr(err, req)
	}
	cur.Config = cfg
	cur.NextTime, _ = cal.Next(s.now())
	sc, err := s.st.UpdateSchedule(ctx, cur)
	if err != nil {
		return nil, scheduleErr(err, req)
	}
	s.onChange()
	return s.scheduleProto(sc)
}

// GetAutomationSchedule gets the schedule of an automation.
func (s *ScheduleService) GetAutomationSchedule(ctx context.Context, req *platformv1.GetAutomationScheduleRequest) (*platformv1.AutomationSchedule, error) {
	sc, err := s.st.GetSchedule(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId())
	if err != nil {
		return nil, scheduleErr(err, req)
	}
	return s.scheduleProto(sc)
}

// DeleteAutomationSchedule deletes the schedule of an automation.
func (s *ScheduleService) DeleteAutomationSchedule(ctx context.Context, req *platformv1.DeleteAutomationScheduleRequest) (*emptypb.Empty, error) {
	if err := s.st.DeleteSchedule(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()); err != nil {
		return nil, scheduleErr(err, req)
	}
	s.onChange()
	return &emptypb.Empty{}, nil
}

// setEnabled enables or disables a schedule. Enabling starts from now:
// occurrences that passed while it was disabled are not run.
func (s *ScheduleService) setEnabled(ctx context.Context, req scheduleRef, enabled bool) (*platformv1.AutomationSchedule, error) {
	cur, err := s.st.GetSchedule(ctx, req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId())
	if err != nil {
		return nil, scheduleErr(err, req)
	}
	if enabled && !cur.Enabled {
		cfg, err := schedule.DecodeConfig(cur.Config)
		if err != nil {
			return nil, err
		}
		cal, err := schedule.Parse(cfg)
		if err != nil {
			return nil, err
		}
		cur.NextTime, _ = cal.Next(s.now())
	}
	cur.Enabled = enabled
	sc, err := s.st.UpdateSchedule(ctx, cur)
	if err != nil {
		return nil, scheduleErr(err, req)
	}
	s.onChange()
	return s.scheduleProto(sc)
}

// DisableAutomationSchedule pauses a schedule without deleting it.
func (s *ScheduleService) DisableAutomationSchedule(ctx context.Context, req *platformv1.DisableAutomationScheduleRequest) (*platformv1.DisableAutomationScheduleResponse, error) {
	sc, err := s.setEnabled(ctx, req, false)
	if err != nil {
		return nil, err
	}
	return &platformv1.DisableAutomationScheduleResponse{Schedule: sc}, nil
}

// EnableAutomationSchedule enables a schedule from now on.
func (s *ScheduleService) EnableAutomationSchedule(ctx context.Context, req *platformv1.EnableAutomationScheduleRequest) (*platformv1.EnableAutomationScheduleResponse, error) {
	sc, err := s.setEnabled(ctx, req, true)
	if err != nil {
		return nil, err
	}
	return &platformv1.EnableAutomationScheduleResponse{Schedule: sc}, nil
}
