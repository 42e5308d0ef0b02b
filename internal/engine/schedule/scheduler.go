package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

// Invoker starts runs (the engine).
type Invoker interface {
	Invoke(ctx context.Context, req engine.InvokeRequest) (store.Run, bool, error)
}

// Store is what the scheduler reads and writes.
type Store interface {
	store.Schedules
	GetAutomation(ctx context.Context, organizationID, workspaceID, id string) (store.Automation, error)
}

// DefaultCatchUp is how late the scheduler still starts a missed occurrence
// (Options.CatchUp).
const DefaultCatchUp = 24 * time.Hour

// Options configures a Scheduler.
type Options struct {
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Poll is the longest wait between two looks at the store (default 1s):
	// a schedule written by another replica is seen within it.
	Poll time.Duration
	// CatchUp: when a schedule is found with several occurrences due (no
	// server ran at their time), only the latest one starts a run, and only
	// if it is at most CatchUp old; the others are skipped (logged). Default
	// DefaultCatchUp; negative: missed occurrences never run.
	CatchUp time.Duration
	// Batch is how many due schedules one pass reads (default 100).
	Batch  int
	Logger *slog.Logger
	// OnFire, when set, is told of every run started: the occurrence and
	// when the run was created.
	OnFire func(occurrence, started time.Time)
	// Inactive, when set, says why an automation must start no scheduled
	// run ("" : it may run); such an occurrence is logged and passes (the
	// schedule moves on). cmd/prose passes server.AutomationInactive
	// (activation_state AUTOMATION_ACTIVATION_STATE_DEACTIVATED).
	Inactive func(store.Automation) string
}

// Scheduler starts one run per occurrence of every enabled schedule. Any
// number of schedulers (replicas) may share a store: an occurrence's run
// has the request id RequestID(...), so a second start of the same
// occurrence returns the first run; the schedule then moves on with a
// compare-and-set (AdvanceSchedule), and a run is started before the
// schedule moves, so a crash between the two starts nothing twice and
// loses nothing.
type Scheduler struct {
	st   Store
	inv  Invoker
	opts Options
	wake chan struct{}
}

// NewScheduler returns a scheduler.
func NewScheduler(st Store, inv Invoker, opts Options) *Scheduler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.CatchUp == 0 {
		opts.CatchUp = DefaultCatchUp
	}
	if opts.Batch <= 0 {
		opts.Batch = 100
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Scheduler{st: st, inv: inv, opts: opts, wake: make(chan struct{}, 1)}
}

// RequestID is the request id of the run of an occurrence.
func RequestID(workspaceID, automationID string, occurrence time.Time) string {
	return fmt.Sprintf("schedule:%s:%s:%d", workspaceID, automationID, occurrence.Unix())
}

// Name is the resource name of the schedule of an automation.
func Name(org, ws, automation string) string { return names.Schedule(org, ws, automation) }

// Wake makes a running scheduler look at the store now (a schedule changed).
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run runs passes until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	for {
		full, err := s.Tick(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.opts.Logger.Warn("scheduler", "err", err)
		}
		wait := s.opts.Poll
		if full {
			wait = 0
		} else if t, err := s.st.NextScheduleTime(ctx); err == nil && !t.IsZero() {
			wait = min(wait, max(t.Sub(s.opts.Now()), 0))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Tick handles every schedule due at Now: it starts the runs of their
// occurrences and moves them on. full reports that it read a whole batch
// (more may be due).
func (s *Scheduler) Tick(ctx context.Context) (full bool, err error) {
	now := s.opts.Now()
	due, err := s.st.ListDueSchedules(ctx, now, s.opts.Batch)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, sc := range due {
		if err := s.fire(ctx, sc, now); err != nil {
			errs = append(errs, err)
		}
	}
	return len(due) == s.opts.Batch, errors.Join(errs...)
}

// fire handles one due schedule.
func (s *Scheduler) fire(ctx context.Context, sc store.Schedule, now time.Time) error {
	log := s.opts.Logger.With("schedule", Name(sc.OrganizationID, sc.WorkspaceID, sc.AutomationID))
	var cal *Calendar
	cfg, err := DecodeConfig(sc.Config)
	if err == nil {
		cal, err = Parse(cfg)
	}
	if err != nil {
		// Checked when written: only a corrupt row gets here. Stop it.
		log.Error("schedule config unreadable; it starts nothing more", "err", err)
		_, aerr := s.st.AdvanceSchedule(ctx, sc.OrganizationID, sc.WorkspaceID, sc.AutomationID, sc.Generation, sc.NextTime, time.Time{})
		return aerr
	}
	var latest, next time.Time
	skipped := 0
	it := cal.Iter(sc.NextTime)
	for {
		t, _, ok := it()
		if !ok {
			break
		}
		if t.After(now) {
			next = t
			break
		}
		if !latest.IsZero() {
			skipped++
		}
		latest = t
	}
	if !latest.IsZero() && (s.opts.CatchUp < 0 && skipped > 0 || s.opts.CatchUp >= 0 && now.Sub(latest) > s.opts.CatchUp) {
		log.Warn("missed occurrence skipped", "occurrence", latest, "late", now.Sub(latest))
		skipped++
		latest = time.Time{}
	}
	if skipped > 0 {
		log.Warn("missed occurrences skipped (no server ran at their time)", "skipped", skipped, "from", sc.NextTime)
	}
	if !latest.IsZero() {
		if err := s.start(ctx, sc, latest); err != nil {
			return err // not advanced: the next pass tries again
		}
	}
	_, err = s.st.AdvanceSchedule(ctx, sc.OrganizationID, sc.WorkspaceID, sc.AutomationID, sc.Generation, sc.NextTime, next)
	return err
}

// start starts the run of an occurrence. Errors that another try cannot
// cure (the automation is gone) are logged and the occurrence passes.
func (s *Scheduler) start(ctx context.Context, sc store.Schedule, occurrence time.Time) error {
	a, err := s.st.GetAutomation(ctx, sc.OrganizationID, sc.WorkspaceID, sc.AutomationID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !a.DeleteTime.IsZero() {
		s.opts.Logger.Warn("scheduled automation is gone", "automation", sc.AutomationID, "occurrence", occurrence)
		return nil
	}
	if err != nil {
		return err
	}
	if s.opts.Inactive != nil {
		if why := s.opts.Inactive(a); why != "" {
			s.opts.Logger.Warn("scheduled run not started", "automation", sc.AutomationID, "title", a.DisplayName, "occurrence", occurrence, "reason", why)
			return nil
		}
	}
	stage := store.StageDraft
	if a.PublishedVersion > 0 {
		stage = store.StagePublished
	}
	_, created, err := s.inv.Invoke(ctx, engine.InvokeRequest{
		OrganizationID: sc.OrganizationID, WorkspaceID: sc.WorkspaceID, AutomationID: sc.AutomationID, Stage: stage,
		RequestID: RequestID(sc.WorkspaceID, sc.AutomationID, occurrence),
		Invocation: &engine.Invocation{
			TriggerID: Name(sc.OrganizationID, sc.WorkspaceID, sc.AutomationID),
			Source:    engine.SourceSchedule,
		},
	})
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidArgument), errors.Is(err, store.ErrFailedPrecondition),
		errors.Is(err, store.ErrAlreadyExists):
		s.opts.Logger.Warn("scheduled run not started", "automation", sc.AutomationID, "title", a.DisplayName, "occurrence", occurrence, "err", err)
		return nil
	case err != nil:
		return err
	}
	if created && s.opts.OnFire != nil {
		s.opts.OnFire(occurrence, s.opts.Now())
	}
	return nil
}
