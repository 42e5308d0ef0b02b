package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/safechange"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// The bounds of a replay, product decisions (docs/safe-change.md).
const (
	// defaultReplayRuns is how many runs :replay replays unless told.
	defaultReplayRuns = 100
	// inlineReplayRuns: a replay of at most this many runs is made in the
	// request, which answers it ended; a larger one goes on in the
	// background (state RUNNING) and the request answers at once.
	inlineReplayRuns = 100
	// replayPage is how many runs a replay reads (and saves) at a time.
	replayPage = 500
	// replayStale: a running replay that wrote no progress for this long
	// is taken as stopped (its server went away): shown FAILED, and
	// replaced by the next :replay.
	replayStale = 2 * time.Minute
)

// replayed is one run and how it replayed.
type replayed struct {
	run store.Run
	res safechange.ReplayResult
}

// callKeyHash is the inputs' part of the journal's key of a call (the
// book's version is left out: a replay matches calls by book name).
func callKeyHash(proc lang.BookProcedure, inputs map[string]lang.Value) (string, error) {
	k, err := engine.CallKey(proc, inputs)
	_, hash, _ := strings.Cut(k, "#")
	return hash, err
}

// replayRuns replays up to limit of the newest finished runs of the
// automation's published version (root runs; narrowed by filter) against
// prog, a page at a time, and gives each page to each. Nothing is written
// to the runs and no book is called.
func (s *SafeChangeService) replayRuns(ctx context.Context, a store.Automation, prog *lang.Program, filter store.Filter, limit int, each func([]replayed) error) error {
	f := store.And{
		store.In{Field: "state", Values: []string{string(store.RunCompleted), string(store.RunFailed)}},
		store.Cond{Field: "stage", Op: store.OpEq, Value: string(store.StagePublished)},
		store.Cond{Field: "stage_version", Op: store.OpEq, Value: strconv.FormatInt(a.PublishedVersion, 10)},
		store.Cond{Field: "parent_run", Op: store.OpEq, Value: ""},
	}
	if filter != nil {
		f = append(f, filter)
	}
	opts := safechange.ReplayOptions{Books: safechange.LookupOnce(s.booksOf(a.OrganizationID, a.WorkspaceID)), CallKey: callKeyHash}
	token, done := "", 0
	for done < limit {
		page, err := s.st.ListRuns(ctx, store.ListRunsRequest{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID,
			AutomationID: a.ID, Filter: f, PageSize: min(replayPage, limit-done), PageToken: token})
		if err != nil {
			return err
		}
		runs := page.Items
		if len(runs) > limit-done {
			runs = runs[:limit-done]
		}
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		recs, err := s.st.ListRunRecords(ctx, a.OrganizationID, a.WorkspaceID, ids)
		if err != nil {
			return err
		}
		batch := make([]replayed, 0, len(runs))
		for _, r := range runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			batch = append(batch, replayed{run: r, res: safechange.Replay(ctx, prog, codec.ReplayRecord(r, recs[r.ID]), opts)})
		}
		done += len(batch)
		if len(batch) > 0 {
			if err := each(batch); err != nil {
				return err
			}
		}
		if token = page.NextPageToken; token == "" || len(runs) == 0 {
			return nil
		}
	}
	return nil
}

// ReplayAutomation replays the last finished runs of the published
// version against the draft (or a revision) and keeps the results until
// the next replay: in the request for up to inlineReplayRuns runs, in the
// background beyond (the answer is then RUNNING; GetAutomationReplay
// shows the progress).
func (s *SafeChangeService) ReplayAutomation(ctx context.Context, req *platformv1.ReplayAutomationRequest) (*platformv1.AutomationReplay, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	if err := transport.RequireWorkspace(ctx, ws, store.PermAutomationsGet); err != nil {
		return nil, err
	}
	n := int(req.GetRunCount())
	if n == 0 {
		n = defaultReplayRuns
	}
	filter, err := sqlfilter.ReplayRuns.Parse(req.GetFilter())
	if err != nil {
		return nil, invalidFromStore(err)
	}
	sub, err := s.subjectOf(ctx, org, ws, id, req.GetRevisionId())
	if err != nil {
		return nil, err
	}
	prog, err := sub.program()
	if err != nil {
		return nil, err
	}
	if sub.a.PublishedVersion == 0 {
		return nil, transport.FailedPrecondition(ReasonAutomationNotPublished,
			fmt.Sprintf("automation %s was never published: no run of a published version to replay", names.Automation(org, ws, id)), nil)
	}
	r, err := s.st.StartReplay(ctx, store.Replay{OrganizationID: org, WorkspaceID: ws, AutomationID: id, AutomationVersion: sub.version,
		PublishedVersion: sub.a.PublishedVersion, Filter: req.GetFilter(), RunCount: n}, replayStale)
	if errors.Is(err, store.ErrFailedPrecondition) {
		return nil, transport.FailedPrecondition(ReasonReplayRunning, withoutSentinel(err, store.ErrFailedPrecondition),
			map[string]string{"resource_name": names.AutomationReplay(org, ws, id)})
	}
	if err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	job := replayJob{r: r, a: sub.a, prog: prog, filter: filter}
	if n <= inlineReplayRuns {
		return replayProto(s.runReplay(ctx, job), time.Now()), nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runReplay(s.ctx, job)
	}()
	return replayProto(r, time.Now()), nil
}

// replayJob is a replay to make.
type replayJob struct {
	r      store.Replay
	a      store.Automation
	prog   *lang.Program
	filter store.Filter
}

// runReplay makes a replay, saving its results and progress a page at a
// time, and returns it as it ended.
func (s *SafeChangeService) runReplay(ctx context.Context, job replayJob) store.Replay {
	r, seq := job.r, 0
	err := s.replayRuns(ctx, job.a, job.prog, job.filter, r.RunCount, func(batch []replayed) error {
		results := make([]store.ReplayResult, 0, len(batch))
		for _, x := range batch {
			countOutcome(&r, x.res.Outcome)
			rr, err := codec.EncodeReplayResult(seq, x.run, x.res)
			if err != nil {
				return err
			}
			seq++
			results = append(results, rr)
		}
		r.Replayed += len(batch)
		saved, err := s.st.SaveReplay(ctx, r, results)
		if err == nil {
			r = saved
		}
		return err
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		return r // a newer replay replaced this one
	case err != nil && ctx.Err() != nil:
		r.State, r.ErrorMessage = store.ReplayFailed, "the replay stopped before its end: its request or its server ended"
	case err != nil:
		s.log.Error("replay", "automation", job.a.ID, "title", job.a.DisplayName, "replay", r.ID, "err", err)
		r.State, r.ErrorMessage = store.ReplayFailed, "the replay stopped on an internal error"
	default:
		r.State, r.RunCount = store.ReplaySucceeded, r.Replayed
	}
	r.EndTime = time.Now()
	end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	saved, err := s.st.SaveReplay(end, r, nil)
	if err != nil {
		if !errors.Is(err, store.ErrConflict) {
			s.log.Error("replay: save its end", "automation", job.a.ID, "title", job.a.DisplayName, "replay", r.ID, "err", err)
		}
		return r
	}
	return saved
}

func countOutcome(r *store.Replay, o safechange.Outcome) {
	switch o {
	case safechange.Unchanged:
		r.Unchanged++
	case safechange.OutputsDiffer:
		r.OutputsDiffer++
	case safechange.NewException:
		r.NewException++
	case safechange.UnansweredCall:
		r.UnansweredCall++
	default:
		r.Failed++
	}
}

var replayStates = map[store.ReplayState]platformv1.AutomationReplay_State{
	store.ReplayRunning: platformv1.AutomationReplay_STATE_RUNNING, store.ReplaySucceeded: platformv1.AutomationReplay_STATE_SUCCEEDED,
	store.ReplayFailed: platformv1.AutomationReplay_STATE_FAILED,
}

// replayProto renders a replay as it stands at now: a running one whose
// progress is older than replayStale is shown FAILED (its server went away).
func replayProto(r store.Replay, now time.Time) *platformv1.AutomationReplay {
	p := &platformv1.AutomationReplay{
		Name: names.AutomationReplay(r.OrganizationID, r.WorkspaceID, r.AutomationID), State: replayStates[r.State],
		AutomationVersion: versionStr(r.AutomationVersion), PublishedVersion: versionStr(r.PublishedVersion),
		RunCount: int32(r.RunCount), ReplayedCount: int32(r.Replayed), UnchangedCount: int32(r.Unchanged),
		OutputsDifferCount: int32(r.OutputsDiffer), NewExceptionCount: int32(r.NewException),
		UnansweredCallCount: int32(r.UnansweredCall), FailedCount: int32(r.Failed), ErrorMessage: r.ErrorMessage, Filter: r.Filter,
		CreateTime: timestampOrNil(r.CreateTime), UpdateTime: timestampOrNil(r.UpdateTime), EndTime: timestampOrNil(r.EndTime),
	}
	if r.State == store.ReplayRunning && now.Sub(r.UpdateTime) > replayStale {
		p.State, p.ErrorMessage = platformv1.AutomationReplay_STATE_FAILED, "the replay stopped: the server replaying it went away"
	}
	return p
}

// GetAutomationReplay gets the automation's last replay.
func (s *SafeChangeService) GetAutomationReplay(ctx context.Context, req *platformv1.GetAutomationReplayRequest) (*platformv1.AutomationReplay, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	if _, err := s.st.GetAutomation(ctx, org, ws, id); err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	r, err := s.st.GetReplay(ctx, org, ws, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, transport.NotFound(ReasonReplayNotFound, names.AutomationReplay(org, ws, id))
	}
	if err != nil {
		return nil, err
	}
	return replayProto(r, time.Now()), nil
}

// ListAutomationReplayResults lists the last replay's results, in replay
// order (newest run first). Filter: outcome (= and !=).
func (s *SafeChangeService) ListAutomationReplayResults(ctx context.Context, req *platformv1.ListAutomationReplayResultsRequest) (*platformv1.ListAutomationReplayResultsResponse, error) {
	org, ws, id := req.GetOrganizationId(), req.GetWorkspaceId(), req.GetAutomationId()
	lp, err := parseFiltered(req, sqlfilter.ReplayResults)
	if err != nil {
		return nil, err
	}
	if _, err := s.st.GetAutomation(ctx, org, ws, id); err != nil {
		return nil, automationErr(err, org, ws, id)
	}
	page, err := s.st.ListReplayResults(ctx, store.ListReplayResultsRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: id,
		Filter: lp.Filter, PageSize: lp.Size, PageToken: lp.Token})
	if errors.Is(err, store.ErrNotFound) {
		return nil, transport.NotFound(ReasonReplayNotFound, names.AutomationReplay(org, ws, id))
	}
	if err != nil {
		return nil, invalidOr(err)
	}
	out := &platformv1.ListAutomationReplayResultsResponse{NextPageToken: page.NextPageToken}
	for _, x := range page.Items {
		p, err := codec.ReplayResultProto(x, names.Run(org, ws, id, x.RunID))
		if err != nil {
			return nil, err
		}
		out.Results = append(out.Results, p)
	}
	return out, nil
}

// invalidOr maps a list's store error: a bad token or filter is
// INVALID_ARGUMENT, anything else internal.
func invalidOr(err error) error {
	if errors.Is(err, store.ErrInvalidArgument) {
		return invalidFromStore(err)
	}
	return err
}
