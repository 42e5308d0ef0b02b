package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"
	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
	"github.com/proserun/prose/store/sqlfilter"
)

// Limits of the insights (README, "Limits: requests and stored sizes").
const (
	// MaxDailyRange is the longest range of QueryDailyRunAggregates, in days.
	MaxDailyRange = 366
	// DefaultDailyRange is its range when start_date is not given.
	DefaultDailyRange = 30
	// MaxInsightsWorkspaces bounds the workspaces one organization-wide
	// query counts.
	MaxInsightsWorkspaces = 1000
	// MaxEstimates bounds the estimates of one ConfigureAutomationEstimates.
	MaxEstimates = 1000
	// MaxTimeSavedSecs bounds an estimate's time: a week per run.
	MaxTimeSavedSecs = 7 * 24 * 3600
	// MaxCostDigits bounds an estimate's cost: significant digits.
	MaxCostDigits = 30
)

// InsightsService implements prose.platform.v1.InsightsService from the
// counts the store keeps as runs change (store.RunAggregates): every
// figure is about the runs created in the period asked, with their state
// now; a period's edges are taken to the hour (store.AggregateHour).
type InsightsService struct {
	platformv1.UnimplementedInsightsServiceServer
	st  store.Store
	now func() time.Time
}

// NewInsightsService returns the insights service; now is the clock
// (nil: time.Now).
func NewInsightsService(st store.Store, now func() time.Time) *InsightsService {
	if now == nil {
		now = time.Now
	}
	return &InsightsService{st: st, now: now}
}

func invalid(reason transport.ErrorReason, field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return transport.InvalidArgument(reason, msg, transport.Violation(field, msg))
}

// location reads an IANA time zone ("" is def).
func location(name, field, def string) (*time.Location, error) {
	if name == "" {
		name = def
	}
	if name == "" {
		return nil, invalid(ReasonInvalidTimeZone, field, "%s is required: an IANA time zone such as \"Europe/Berlin\" or \"UTC\"", field)
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return nil, invalid(ReasonInvalidTimeZone, field, "%s %q is not an IANA time zone (such as \"Europe/Berlin\" or \"UTC\")", field, name)
	}
	return loc, nil
}

func (s *InsightsService) workspaceExists(ctx context.Context, org, ws string) error {
	if _, err := s.st.GetWorkspace(ctx, org, ws); err != nil {
		return storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, names.Workspace(org, ws))
	}
	return nil
}

// QueryAutomationRunAggregates counts the runs of each automation of a
// workspace that has runs (all time), by automation name.
func (s *InsightsService) QueryAutomationRunAggregates(ctx context.Context, req *platformv1.QueryAutomationRunAggregatesRequest) (*platformv1.QueryAutomationRunAggregatesResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	if err := s.workspaceExists(ctx, org, ws); err != nil {
		return nil, err
	}
	rows, err := s.st.SumRunAggregates(ctx, store.RunAggregatesRequest{OrganizationID: org, WorkspaceIDs: []string{ws},
		Periods: []store.TimeRange{{}}, ByAutomation: true})
	if err != nil {
		return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, names.Workspace(org, ws))
	}
	out := &platformv1.QueryAutomationRunAggregatesResponse{}
	for _, g := range rows {
		if g.Counts.Runs == 0 {
			continue
		}
		out.AutomationRunAggregates = append(out.AutomationRunAggregates, &platformv1.AutomationRunAggregateEntry{
			AutomationId: names.Automation(org, ws, g.AutomationID),
			Stats:        &platformv1.AutomationRunAggregate{TotalRuns: g.Counts.Runs, CompletedRuns: g.Counts.Completed},
		})
	}
	return out, nil
}

// dayOf reads a google.type.Date as the midnight starting that day in loc.
func dayOf(d *date.Date, field string, loc *time.Location) (time.Time, error) {
	y, m, dd := int(d.GetYear()), time.Month(d.GetMonth()), int(d.GetDay())
	t := time.Date(y, m, dd, 0, 0, 0, 0, loc)
	if y < 1 || y > 9999 || t.Year() != y || t.Month() != m || t.Day() != dd {
		return time.Time{}, invalid(ReasonInvalidField, field, "%s %04d-%02d-%02d is not a date (year, month and day are all required)", field, y, m, dd)
	}
	return t, nil
}

// automationFilterIDs reads the filter of QueryDailyRunAggregates:
// automation_id = "…" joined with OR (ids or names of automations of the
// workspace). nil: no filter.
func automationFilterIDs(text, org, ws string) ([]string, error) {
	f, err := sqlfilter.DailyRunAggregates.Parse(text)
	if err != nil {
		return nil, invalidFromStore(err)
	}
	if f == nil {
		return nil, nil
	}
	var ids []string
	var walk func(f store.Filter) error
	walk = func(f store.Filter) error {
		switch f := f.(type) {
		case store.Text:
			return walk(f.Filter)
		case store.Or:
			for _, m := range f {
				if err := walk(m); err != nil {
					return err
				}
			}
			return nil
		case store.Cond:
			if f.Op != store.OpEq {
				break
			}
			v := fmt.Sprint(f.Value)
			if strings.Contains(v, "/") {
				o, w, a, ok := names.ParseAutomation(v)
				if !ok {
					return invalid(ReasonInvalidFilter, "filter", "filter: %q is not an automation id or name", v)
				}
				if o != org || w != ws {
					v = "" // another workspace's automation: matches nothing here
				} else {
					v = a
				}
			}
			ids = append(ids, v)
			return nil
		}
		return invalid(ReasonInvalidFilter, "filter", `filter: only automation_id = "…" conditions joined with OR are supported`)
	}
	if err := walk(f); err != nil {
		return nil, err
	}
	return ids, nil
}

// QueryDailyRunAggregates counts the runs of a workspace created on each
// day (midnight to midnight in time_zone) from start_date to end_date.
func (s *InsightsService) QueryDailyRunAggregates(ctx context.Context, req *platformv1.QueryDailyRunAggregatesRequest) (*platformv1.QueryDailyRunAggregatesResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	loc, err := location(req.GetTimeZone(), "time_zone", "")
	if err != nil {
		return nil, err
	}
	now := s.now().In(loc)
	end := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	if req.GetEndDate() != nil {
		if end, err = dayOf(req.GetEndDate(), "end_date", loc); err != nil {
			return nil, err
		}
	}
	start := end.AddDate(0, 0, -(DefaultDailyRange - 1))
	if req.GetStartDate() != nil {
		if start, err = dayOf(req.GetStartDate(), "start_date", loc); err != nil {
			return nil, err
		}
	}
	if start.After(end) {
		return nil, invalid(ReasonInvalidField, "start_date", "start_date %s is after end_date %s", start.Format(time.DateOnly), end.Format(time.DateOnly))
	}
	var days []time.Time
	for d := start; !d.After(end); d = d.AddDate(0, 0, 1) {
		if len(days) == MaxDailyRange {
			return nil, invalid(ReasonInvalidField, "start_date", "at most %d days from start_date to end_date", MaxDailyRange)
		}
		days = append(days, d)
	}
	autos, err := automationFilterIDs(req.GetFilter(), org, ws)
	if err != nil {
		return nil, err
	}
	if err := s.workspaceExists(ctx, org, ws); err != nil {
		return nil, err
	}
	periods := make([]store.TimeRange, len(days))
	for i, d := range days {
		periods[i] = store.TimeRange{Start: d, End: d.AddDate(0, 0, 1)}
	}
	counts := make([]int64, len(days))
	if autos == nil || len(autos) > 0 {
		rows, err := s.st.SumRunAggregates(ctx, store.RunAggregatesRequest{OrganizationID: org, WorkspaceIDs: []string{ws},
			AutomationIDs: autos, Periods: periods})
		if err != nil {
			return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, names.Workspace(org, ws))
		}
		for _, g := range rows {
			counts[g.Period] += g.Counts.Runs
		}
	}
	out := &platformv1.QueryDailyRunAggregatesResponse{}
	for i, d := range days {
		out.DailyRunAggregates = append(out.DailyRunAggregates, &platformv1.DailyRunAggregateEntry{
			Date: d.Format(time.DateOnly), Stats: &platformv1.DailyRunAggregate{TotalRuns: int32(min(counts[i], math.MaxInt32))},
		})
	}
	return out, nil
}

// decimalCtx computes money: exact for any cost of at most MaxCostDigits
// digits times any run count.
var decimalCtx = apd.BaseContext.WithPrecision(60)

// parseCost reads a cost in USD: a decimal number, 0 or more.
func parseCost(s, field string) (*apd.Decimal, error) {
	d, _, err := apd.NewFromString(strings.TrimSpace(s))
	if err != nil || d.Form != apd.Finite {
		return nil, invalid(ReasonInvalidEstimate, field, "%s %q is not a decimal number of USD (such as \"12.50\")", field, s)
	}
	if d.Negative {
		return nil, invalid(ReasonInvalidEstimate, field, "%s %q is negative", field, s)
	}
	if d.NumDigits() > MaxCostDigits || d.Exponent < -MaxCostDigits || d.Exponent > MaxCostDigits {
		return nil, invalid(ReasonInvalidEstimate, field, "%s %q has more than %d digits", field, s, MaxCostDigits)
	}
	return d, nil
}

func estimateProto(e store.AutomationEstimate) *platformv1.AutomationEstimate {
	return &platformv1.AutomationEstimate{AutomationId: names.Automation(e.OrganizationID, e.WorkspaceID, e.AutomationID),
		CostUsd: e.CostUSD, TimeSavedSecs: e.TimeSavedSecs}
}

// ConfigureAutomationEstimates sets the estimates of automations of a
// workspace (each replaces that automation's) and returns them all.
func (s *InsightsService) ConfigureAutomationEstimates(ctx context.Context, req *platformv1.ConfigureAutomationEstimatesRequest) (*platformv1.ConfigureAutomationEstimatesResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	in := req.GetAutomationEstimates()
	if len(in) == 0 {
		return nil, invalid(ReasonInvalidEstimate, "automation_estimates", "automation_estimates is required (at least one estimate)")
	}
	if len(in) > MaxEstimates {
		return nil, invalid(ReasonInvalidEstimate, "automation_estimates", "at most %d estimates per call, not %d", MaxEstimates, len(in))
	}
	var es []store.AutomationEstimate
	seen := map[string]bool{}
	for i, e := range in {
		field := fmt.Sprintf("automation_estimates[%d]", i)
		id := e.GetAutomationId()
		if strings.Contains(id, "/") {
			o, w, a, ok := names.ParseAutomation(id)
			if !ok || o != org || w != ws {
				return nil, invalid(ReasonInvalidEstimate, field+".automation_id", "%s.automation_id %q is not an automation of %s", field, id, names.Workspace(org, ws))
			}
			id = a
		}
		if id == "" {
			return nil, invalid(ReasonInvalidEstimate, field+".automation_id", "%s.automation_id is required", field)
		}
		if seen[id] {
			return nil, invalid(ReasonInvalidEstimate, field+".automation_id", "%s.automation_id: automation %q is given twice", field, id)
		}
		seen[id] = true
		cost, err := parseCost(e.GetCostUsd(), field+".cost_usd")
		if err != nil {
			return nil, err
		}
		if t := e.GetTimeSavedSecs(); t < 0 || t > MaxTimeSavedSecs {
			return nil, invalid(ReasonInvalidEstimate, field+".time_saved_secs", "%s.time_saved_secs must be from 0 to %d, not %d", field, MaxTimeSavedSecs, t)
		}
		es = append(es, store.AutomationEstimate{AutomationID: id, CostUSD: cost.Text('f'), TimeSavedSecs: e.GetTimeSavedSecs()})
	}
	if err := s.workspaceExists(ctx, org, ws); err != nil {
		return nil, err
	}
	got, err := s.st.SetAutomationEstimates(ctx, org, ws, es)
	if errors.Is(err, store.ErrNotFound) {
		return nil, transport.NotFound(ReasonAutomationNotFound, withoutSentinel(err, store.ErrNotFound))
	}
	if err != nil {
		return nil, err
	}
	out := &platformv1.ConfigureAutomationEstimatesResponse{}
	for _, e := range got {
		out.AutomationEstimates = append(out.AutomationEstimates, estimateProto(e))
	}
	return out, nil
}

// readableWorkspaces are the workspaces of org the caller may read runs
// of: those of names (each must be readable: PERMISSION_DENIED otherwise),
// or when names is empty every one the caller's key and roles allow.
func (s *InsightsService) readableWorkspaces(ctx context.Context, org string, wsNames []string, field string) ([]string, error) {
	if len(wsNames) > 0 {
		var out []string
		for i, n := range wsNames {
			o, ws, ok := names.ParseWorkspace(n)
			if !ok || ws == "" || strings.Contains(ws, "/") {
				// A bare id is taken as the id of a workspace of org.
				if strings.Contains(n, "/") || n == "" {
					return nil, invalid(ReasonInvalidField, fmt.Sprintf("%s[%d]", field, i), "%s[%d] %q is not a workspace name (organizations/{organization}/workspaces/{workspace})", field, i, n)
				}
				o, ws = org, n
			}
			if o != org {
				return nil, invalid(ReasonInvalidField, fmt.Sprintf("%s[%d]", field, i), "%s[%d] %q is not a workspace of organizations/%s", field, i, n, org)
			}
			if err := transport.RequireWorkspace(ctx, ws, store.PermRunsGet); err != nil {
				return nil, err
			}
			if err := s.workspaceExists(ctx, org, ws); err != nil {
				return nil, err
			}
			if !slices.Contains(out, ws) {
				out = append(out, ws)
			}
		}
		return out, nil
	}
	var out []string
	token := ""
	for {
		page, err := s.st.ListWorkspaces(ctx, store.ListWorkspacesRequest{OrganizationID: org, Filter: scopedToCaller(ctx, nil), PageSize: 1000, PageToken: token})
		if err != nil {
			return nil, orgStatus(err, org)
		}
		for _, w := range page.Items {
			if transport.RequireWorkspace(ctx, w.ID, store.PermRunsGet) == nil {
				if len(out) == MaxInsightsWorkspaces {
					return nil, invalid(ReasonInvalidField, field, "the organization has more than %d workspaces: name at most %d in %s", MaxInsightsWorkspaces, MaxInsightsWorkspaces, field)
				}
				out = append(out, w.ID)
			}
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		token = page.NextPageToken
	}
}

// QueryAutomationEstimates returns the estimates of every workspace of the
// organization the caller may read, by workspace name.
func (s *InsightsService) QueryAutomationEstimates(ctx context.Context, req *platformv1.QueryAutomationEstimatesRequest) (*platformv1.QueryAutomationEstimatesResponse, error) {
	org := req.GetOrganizationId()
	wss, err := s.readableWorkspaces(ctx, org, nil, "workspace_ids")
	if err != nil {
		return nil, err
	}
	es, err := s.st.ListAutomationEstimates(ctx, org, wss)
	if err != nil {
		return nil, err
	}
	out := &platformv1.QueryAutomationEstimatesResponse{WorkspaceEstimates: map[string]*platformv1.AutomationEstimateList{}}
	for _, e := range es {
		k := names.Workspace(org, e.WorkspaceID)
		if out.WorkspaceEstimates[k] == nil {
			out.WorkspaceEstimates[k] = &platformv1.AutomationEstimateList{}
		}
		out.WorkspaceEstimates[k].Estimates = append(out.WorkspaceEstimates[k].Estimates, estimateProto(e))
	}
	return out, nil
}

// period is one labelled period of a window.
type period struct {
	store.TimeRange
	label string
}

// windowPeriods cuts [start, end) into the periods the insights show,
// aligned to the calendar of loc and clipped to the window: days up to 31
// days, weeks (from Monday) up to 92 days, months beyond.
func windowPeriods(start, end time.Time, loc *time.Location) []period {
	start, end = start.In(loc), end.In(loc)
	span := end.Sub(start)
	var first time.Time
	var next func(time.Time) time.Time
	var label func(time.Time, int) string
	switch {
	case span <= 31*24*time.Hour:
		first = time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, loc)
		next = func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }
		label = func(t time.Time, _ int) string { return t.Format(time.DateOnly) }
	case span <= 92*24*time.Hour:
		d := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, loc)
		first = d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
		next = func(t time.Time) time.Time { return t.AddDate(0, 0, 7) }
		label = func(t time.Time, i int) string { return fmt.Sprintf("Week %d (%s)", i+1, t.Format(time.DateOnly)) }
	default:
		first = time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, loc)
		next = func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }
		label = func(t time.Time, _ int) string { return t.Format("January 2006") }
	}
	var out []period
	for t := first; t.Before(end); t = next(t) {
		p := period{TimeRange: store.TimeRange{Start: t, End: next(t)}, label: label(t, len(out))}
		if p.Start.Before(start) {
			p.Start = start
		}
		if p.End.After(end) {
			p.End = end
		}
		out = append(out, p)
	}
	return out
}

// percent is 100·n/d (0 when d is 0).
func percent(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return 100 * float64(n) / float64(d)
}

// trend compares cur with prev (nil when prev is 0: no change can be told).
func trend(cur, prev float64, label string) *platformv1.Trend {
	if prev == 0 {
		return nil
	}
	return &platformv1.Trend{PercentChange: 100 * (cur - prev) / prev, ComparisonWindow: label}
}

type autoKey struct{ ws, auto string }

// QueryInsights answers the insights of the runs created in a time window
// in the organization's workspaces (or those of the filter): runs,
// completion and straight-through processing, runs awaiting guidance, and
// the time and money the completed runs saved by their automations'
// estimates; per automation and per period (days, weeks or months of the
// window's time zone), with trends against the window just before.
func (s *InsightsService) QueryInsights(ctx context.Context, req *platformv1.QueryInsightsRequest) (*platformv1.QueryInsightsResponse, error) {
	org := req.GetOrganizationId()
	f := req.GetFilter()
	start, end, periods, err := insightsWindow(f.GetTimeWindow())
	if err != nil {
		return nil, err
	}
	wss, err := s.readableWorkspaces(ctx, org, f.GetWorkspaceIds(), "filter.workspace_ids")
	if err != nil {
		return nil, err
	}
	only, autoIDs, err := insightsAutomations(ctx, org, f.GetAutomationIds())
	if err != nil {
		return nil, err
	}
	resp := newInsightsResponse()
	if len(wss) == 0 {
		resp.ValueInsight.TotalMoneySavedUsd = "0"
		return resp, nil
	}
	span := end.Sub(start)
	rows, autoRows, err := s.insightRows(ctx, org, wss, autoIDs, periods, start, end)
	if err != nil {
		return nil, err
	}
	estOf, err := s.estimates(ctx, org, wss)
	if err != nil {
		return nil, err
	}
	t := newInsightTally(len(periods), only, estOf, len(autoIDs) == 0)
	if err := t.addPeriodRows(rows); err != nil {
		return nil, err
	}
	t.addAutomationRows(autoRows)
	display, err := s.displayNames(ctx, org, t.perAuto)
	if err != nil {
		return nil, err
	}
	cmpLabel := fmt.Sprintf("Previous %s", humanSpan(span))
	t.fillRuns(resp, org, wss, periods, display, cmpLabel)
	t.fillCompletion(resp, periods, cmpLabel)
	return resp, nil
}

// insightsWindow checks QueryInsights' time window and cuts it into
// periods; end is the window's end, excluded.
func insightsWindow(tw *platformv1.InsightsTimeWindow) (start, end time.Time, periods []period, err error) {
	if tw.GetStartTime() == nil || tw.GetEndTime() == nil {
		return start, end, nil, invalid(ReasonInvalidField, "filter.time_window", "filter.time_window.start_time and end_time are required")
	}
	if err := tw.GetStartTime().CheckValid(); err != nil {
		return start, end, nil, invalid(ReasonInvalidField, "filter.time_window.start_time", "filter.time_window.start_time: %v", err)
	}
	if err := tw.GetEndTime().CheckValid(); err != nil {
		return start, end, nil, invalid(ReasonInvalidField, "filter.time_window.end_time", "filter.time_window.end_time: %v", err)
	}
	loc, err := location(tw.GetTimeZone(), "filter.time_window.time_zone", "UTC")
	if err != nil {
		return start, end, nil, err
	}
	start, end = tw.GetStartTime().AsTime(), tw.GetEndTime().AsTime().Add(time.Nanosecond) // end is included
	if !start.Before(end) {
		return start, end, nil, invalid(ReasonInvalidField, "filter.time_window.end_time", "filter.time_window.end_time is before start_time")
	}
	periods = windowPeriods(start, end, loc)
	if len(periods) > store.MaxAggregatePeriods-1 {
		return start, end, nil, invalid(ReasonInvalidField, "filter.time_window", "the window is too long: at most %d periods", store.MaxAggregatePeriods-1)
	}
	return start, end, periods, nil
}

// insightsAutomations checks the automations of QueryInsights' filter:
// only is nil without them.
func insightsAutomations(ctx context.Context, org string, automations []string) (only map[autoKey]bool, autoIDs []string, err error) {
	for i, n := range automations {
		o, w, a, ok := names.ParseAutomation(n)
		if !ok || o != org {
			return nil, nil, invalid(ReasonInvalidField, fmt.Sprintf("filter.automation_ids[%d]", i),
				"filter.automation_ids[%d] %q is not an automation name of organizations/%s (organizations/{organization}/workspaces/{workspace}/automations/{automation})", i, n, org)
		}
		if err := transport.RequireWorkspace(ctx, w, store.PermRunsGet); err != nil {
			return nil, nil, err
		}
		if only == nil {
			only = map[autoKey]bool{}
		}
		only[autoKey{w, a}] = true
		autoIDs = append(autoIDs, a)
	}
	return only, autoIDs, nil
}

func newInsightsResponse() *platformv1.QueryInsightsResponse {
	return &platformv1.QueryInsightsResponse{
		ValueInsight: &platformv1.ValueInsight{InsightsPerAutomationPerWorkspace: map[string]*platformv1.AutomationValueInsightList{},
			InsightsPerPeriodPerWorkspace: map[string]*platformv1.CumulativeValueInsightList{}},
		RunInsight: &platformv1.RunInsight{InsightsPerAutomationPerWorkspace: map[string]*platformv1.AutomationRunInsightList{},
			InsightsPerPeriodPerWorkspace: map[string]*platformv1.CumulativeRunInsightList{}},
		CompletionInsight:       &platformv1.CompletionInsight{},
		AwaitingGuidanceInsight: &platformv1.AwaitingGuidanceInsight{},
	}
}

// insightRows reads the counts of the window's periods and, as one more
// period, of the window before it of the same length (for the trends).
// Without an automation filter, the counts and the value per workspace
// and period come from the workspaces' rollups (the value kept in them:
// migration 00032), and those per automation (autoRows) from one more
// request for the whole window (few rows an automation: its larger
// buckets). With a filter, the automations' rows per period (the rollups
// count every automation).
func (s *InsightsService) insightRows(ctx context.Context, org string, wss, autoIDs []string, periods []period, start, end time.Time) (rows, autoRows []store.RunAggregate, err error) {
	ranges := make([]store.TimeRange, 0, len(periods)+1)
	for _, p := range periods {
		ranges = append(ranges, p.TimeRange)
	}
	span := end.Sub(start)
	ranges = append(ranges, store.TimeRange{Start: start.Add(-span), End: start})
	if len(autoIDs) == 0 {
		if rows, err = s.st.SumRunAggregates(ctx, store.RunAggregatesRequest{OrganizationID: org, WorkspaceIDs: wss, Periods: ranges}); err == nil {
			autoRows, err = s.st.SumRunAggregates(ctx, store.RunAggregatesRequest{OrganizationID: org, WorkspaceIDs: wss,
				Periods: []store.TimeRange{{Start: start, End: end}}, ByAutomation: true})
		}
	} else {
		rows, err = s.st.SumRunAggregates(ctx, store.RunAggregatesRequest{OrganizationID: org, WorkspaceIDs: wss, AutomationIDs: autoIDs,
			Periods: ranges, ByAutomation: true})
		autoRows = rows
	}
	if err != nil {
		return nil, nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, "organizations/"+org)
	}
	return rows, autoRows, nil
}

// estimate is an automation's estimate: the cost and time a completed run
// saves.
type estimate struct {
	cost *apd.Decimal
	secs int64
}

func (s *InsightsService) estimates(ctx context.Context, org string, wss []string) (map[autoKey]estimate, error) {
	ests, err := s.st.ListAutomationEstimates(ctx, org, wss)
	if err != nil {
		return nil, err
	}
	estOf := map[autoKey]estimate{}
	for _, e := range ests {
		c, err := parseCost(e.CostUSD, "cost_usd")
		if err != nil {
			return nil, fmt.Errorf("stored estimate of %s: %w", e.AutomationID, err)
		}
		estOf[autoKey{e.WorkspaceID, e.AutomationID}] = estimate{c, int64(e.TimeSavedSecs)}
	}
	return estOf, nil
}

// wsPeriod is a workspace's period (its index).
type wsPeriod struct {
	ws string
	p  int
}

// insightTally sums the rows of QueryInsights: over the window (total), the
// window before (prev), per period, per automation and per workspace and
// period, with the time and money saved.
type insightTally struct {
	periods int
	only    map[autoKey]bool // nil: every automation
	estOf   map[autoKey]estimate
	rollups bool // the period rows are the workspaces' rollups, with their value

	total, prev store.RunCounts
	perPeriod   []store.RunCounts
	perAuto     map[autoKey]*store.RunCounts
	perWsPeriod map[wsPeriod]*store.RunCounts
	money       map[wsPeriod]*apd.Decimal
	secs        map[wsPeriod]int64
	autoMoney   map[autoKey]*apd.Decimal
	autoSecs    map[autoKey]int64
	totalMoney  *apd.Decimal
	totalSecs   int64
}

func newInsightTally(periods int, only map[autoKey]bool, estOf map[autoKey]estimate, rollups bool) *insightTally {
	return &insightTally{periods: periods, only: only, estOf: estOf, rollups: rollups,
		perPeriod: make([]store.RunCounts, periods), perAuto: map[autoKey]*store.RunCounts{}, perWsPeriod: map[wsPeriod]*store.RunCounts{},
		money: map[wsPeriod]*apd.Decimal{}, secs: map[wsPeriod]int64{}, autoMoney: map[autoKey]*apd.Decimal{}, autoSecs: map[autoKey]int64{},
		totalMoney: new(apd.Decimal)}
}

// mulCost is cost times n.
func mulCost(c *apd.Decimal, n int64) *apd.Decimal {
	out := new(apd.Decimal)
	if _, err := decimalCtx.Mul(out, c, apd.New(n, 0)); err != nil {
		panic(err) // 60 digits hold any cost of 30 digits times any int64
	}
	return out
}

// addMoney adds d to the sum *m (allocated at the first).
func addMoney(m **apd.Decimal, d *apd.Decimal) {
	if *m == nil {
		*m = new(apd.Decimal)
	}
	_, _ = decimalCtx.Add(*m, *m, d)
}

// addPeriodRows counts the rows per workspace and period (and the window
// before).
func (t *insightTally) addPeriodRows(rows []store.RunAggregate) error {
	for _, g := range rows {
		k := autoKey{g.WorkspaceID, g.AutomationID}
		if t.only != nil && !t.only[k] {
			continue
		}
		if g.Period == t.periods {
			t.prev.Add(g.Counts)
			continue
		}
		t.total.Add(g.Counts)
		t.perPeriod[g.Period].Add(g.Counts)
		wp := wsPeriod{g.WorkspaceID, g.Period}
		if t.perWsPeriod[wp] == nil {
			t.perWsPeriod[wp] = &store.RunCounts{}
		}
		t.perWsPeriod[wp].Add(g.Counts)
		saved, secs := (*apd.Decimal)(nil), int64(0)
		switch {
		case t.rollups:
			m, _, err := apd.NewFromString(g.SavedUSD)
			if err != nil {
				return fmt.Errorf("stored value of %s: %w", g.WorkspaceID, err)
			}
			if !m.IsZero() {
				saved = m
			}
			secs = g.SavedSecs
		default:
			if e, ok := t.estOf[k]; ok && g.Counts.Completed > 0 {
				saved, secs = mulCost(e.cost, g.Counts.Completed), e.secs*g.Counts.Completed
			}
		}
		if saved != nil {
			m := t.money[wp]
			addMoney(&m, saved)
			t.money[wp] = m
			_, _ = decimalCtx.Add(t.totalMoney, t.totalMoney, saved)
		}
		t.secs[wp] += secs
		t.totalSecs += secs
	}
	return nil
}

// addAutomationRows counts the rows per automation, over the window.
func (t *insightTally) addAutomationRows(autoRows []store.RunAggregate) {
	for _, g := range autoRows {
		k := autoKey{g.WorkspaceID, g.AutomationID}
		if t.only != nil && !t.only[k] || g.Period == t.periods && !t.rollups {
			continue
		}
		if t.perAuto[k] == nil {
			t.perAuto[k] = &store.RunCounts{}
		}
		t.perAuto[k].Add(g.Counts)
		if e, ok := t.estOf[k]; ok && g.Counts.Completed > 0 {
			m := t.autoMoney[k]
			addMoney(&m, mulCost(e.cost, g.Counts.Completed))
			t.autoMoney[k] = m
			t.autoSecs[k] += e.secs * g.Counts.Completed
		}
	}
}

// fillRuns writes the runs and the value: in total, per automation and per
// workspace and period.
func (t *insightTally) fillRuns(resp *platformv1.QueryInsightsResponse, org string, wss []string, periods []period, display map[autoKey]string, cmpLabel string) {
	ri, vi := resp.RunInsight, resp.ValueInsight
	ri.TotalRunsCount = t.total.Runs
	ri.Trend = trend(float64(t.total.Runs), float64(t.prev.Runs), cmpLabel)
	keys := slices.SortedFunc(maps.Keys(t.perAuto), func(a, b autoKey) int { return cmp.Or(cmp.Compare(a.ws, b.ws), cmp.Compare(a.auto, b.auto)) })
	for _, k := range keys {
		wn := names.Workspace(org, k.ws)
		an := names.Automation(org, k.ws, k.auto)
		if ri.InsightsPerAutomationPerWorkspace[wn] == nil {
			ri.InsightsPerAutomationPerWorkspace[wn] = &platformv1.AutomationRunInsightList{}
		}
		ri.InsightsPerAutomationPerWorkspace[wn].Values = append(ri.InsightsPerAutomationPerWorkspace[wn].Values,
			&platformv1.AutomationRunInsight{AutomationId: an, DisplayName: display[k], RunsCount: t.perAuto[k].Runs})
		if _, ok := t.estOf[k]; ok {
			m := t.autoMoney[k]
			if m == nil {
				m = new(apd.Decimal)
			}
			if vi.InsightsPerAutomationPerWorkspace[wn] == nil {
				vi.InsightsPerAutomationPerWorkspace[wn] = &platformv1.AutomationValueInsightList{}
			}
			vi.InsightsPerAutomationPerWorkspace[wn].Values = append(vi.InsightsPerAutomationPerWorkspace[wn].Values,
				&platformv1.AutomationValueInsight{AutomationId: an, DisplayName: display[k], TimeSavedSecs: t.autoSecs[k], MoneySavedUsd: m.Text('f')})
		}
	}
	for _, ws := range wss {
		wn := names.Workspace(org, ws)
		runs := &platformv1.CumulativeRunInsightList{}
		vals := &platformv1.CumulativeValueInsightList{}
		for i, p := range periods {
			c := t.perWsPeriod[wsPeriod{ws, i}]
			if c == nil {
				c = &store.RunCounts{}
			}
			runs.Values = append(runs.Values, &platformv1.CumulativeRunInsight{WindowLabel: p.label, RunsCount: c.Runs})
			m := t.money[wsPeriod{ws, i}]
			if m == nil {
				m = new(apd.Decimal)
			}
			vals.Values = append(vals.Values, &platformv1.CumulativeValueInsight{WindowLabel: p.label, TimeSavedSecs: t.secs[wsPeriod{ws, i}], MoneySavedUsd: m.Text('f')})
		}
		ri.InsightsPerPeriodPerWorkspace[wn] = runs
		vi.InsightsPerPeriodPerWorkspace[wn] = vals
	}
	vi.TotalMoneySavedUsd = t.totalMoney.Text('f')
	vi.TotalTimeSavedSecs = t.totalSecs
}

// fillCompletion writes the completion (completed runs of the runs
// created; straight through: completed with no human guidance, of the
// completed) and the runs awaiting guidance.
func (t *insightTally) fillCompletion(resp *platformv1.QueryInsightsResponse, periods []period, cmpLabel string) {
	ci := resp.CompletionInsight
	ci.TotalPercentCompletions = percent(t.total.Completed, t.total.Runs)
	ci.Stp = percent(t.total.Completed-t.total.GuidedCompleted, t.total.Completed)
	ci.Trend = trend(ci.TotalPercentCompletions, percent(t.prev.Completed, t.prev.Runs), cmpLabel)
	ai := resp.AwaitingGuidanceInsight
	ai.TotalRunsAwaitingGuidance = t.total.Awaiting
	for i, p := range periods {
		c := t.perPeriod[i]
		ci.CompletionsPerPeriod = append(ci.CompletionsPerPeriod, &platformv1.CumulativeCompletionInsight{WindowLabel: p.label,
			AutoCompletedCount: c.Completed - c.GuidedCompleted, ManuallyResolvedCount: c.GuidedCompleted})
		ai.RunsPerPeriod = append(ai.RunsPerPeriod, &platformv1.RunsAwaitingGuidanceByPeriod{WindowLabel: p.label, RunsAwaitingGuidance: c.Awaiting})
	}
}

// humanSpan names a window's length ("7 days", "12 hours").
func humanSpan(d time.Duration) string {
	if d >= 24*time.Hour {
		n := int64(math.Round(d.Hours() / 24))
		if n == 1 {
			return "day"
		}
		return strconv.FormatInt(n, 10) + " days"
	}
	n := max(int64(math.Round(d.Hours())), 1)
	if n == 1 {
		return "hour"
	}
	return strconv.FormatInt(n, 10) + " hours"
}

// displayNames reads the display names of the automations of keys (one
// list per workspace; deleted automations included).
func (s *InsightsService) displayNames(ctx context.Context, org string, keys map[autoKey]*store.RunCounts) (map[autoKey]string, error) {
	out := map[autoKey]string{}
	wss := map[string]bool{}
	for k := range keys {
		wss[k.ws] = true
	}
	for ws := range wss {
		token := ""
		for {
			page, err := s.st.ListAutomations(ctx, store.ListAutomationsRequest{OrganizationID: org, WorkspaceID: ws, ShowDeleted: true, PageSize: 1000, PageToken: token})
			if err != nil {
				return nil, err
			}
			for _, a := range page.Items {
				if _, ok := keys[autoKey{ws, a.ID}]; ok {
					out[autoKey{ws, a.ID}] = a.DisplayName
				}
			}
			if page.NextPageToken == "" {
				break
			}
			token = page.NextPageToken
		}
	}
	return out, nil
}

// The metrics of QueryMetrics: counts of the runs created in each
// interval, by their state now.
var metricCounts = map[string]func(c store.RunCounts) int64{
	"runs":                   func(c store.RunCounts) int64 { return c.Runs },
	"completed_runs":         func(c store.RunCounts) int64 { return c.Completed },
	"failed_runs":            func(c store.RunCounts) int64 { return c.Failed },
	"guided_runs":            func(c store.RunCounts) int64 { return c.GuidedCompleted },
	"straight_through_runs":  func(c store.RunCounts) int64 { return c.Completed - c.GuidedCompleted },
	"runs_awaiting_guidance": func(c store.RunCounts) int64 { return c.Awaiting },
}

// metricTags are the tags of QueryMetrics' group_by and filter.
var metricTags = []string{"workspace_id", "automation_id"}

// metricIntervals cuts [start, end) into intervals of iv (UTC calendar;
// weeks from Monday), the first starting at or before start.
func metricIntervals(start, end time.Time, iv platformv1.MetricInterval) ([]period, error) {
	start, end = start.UTC(), end.UTC()
	var first time.Time
	var next func(time.Time) time.Time
	var label func(time.Time) string
	switch iv {
	case platformv1.MetricInterval_METRIC_INTERVAL_HOUR:
		first = start.Truncate(time.Hour)
		next = func(t time.Time) time.Time { return t.Add(time.Hour) }
		label = func(t time.Time) string { return t.Format("2006-01-02 15:04") }
	case platformv1.MetricInterval_METRIC_INTERVAL_DAY:
		first = time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
		next = func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }
		label = func(t time.Time) string { return t.Format(time.DateOnly) }
	case platformv1.MetricInterval_METRIC_INTERVAL_WEEK:
		d := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
		first = d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
		next = func(t time.Time) time.Time { return t.AddDate(0, 0, 7) }
		label = func(t time.Time) string { y, w := t.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }
	case platformv1.MetricInterval_METRIC_INTERVAL_MONTH:
		first = time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
		next = func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }
		label = func(t time.Time) string { return t.Format("2006-01") }
	default:
		return nil, invalid(ReasonInvalidField, "interval", "interval %v is not one of METRIC_INTERVAL_HOUR, _DAY, _WEEK, _MONTH", iv)
	}
	var out []period
	for t := first; t.Before(end); t = next(t) {
		if len(out) == store.MaxAggregatePeriods {
			return nil, invalid(ReasonInvalidField, "interval", "the range holds more than %d intervals: choose a longer interval or a shorter range", store.MaxAggregatePeriods)
		}
		out = append(out, period{TimeRange: store.TimeRange{Start: t, End: next(t)}, label: label(t)})
	}
	return out, nil
}

// autoInterval is the interval QueryMetrics uses when none is asked.
func autoInterval(span time.Duration) platformv1.MetricInterval {
	switch {
	case span <= 2*24*time.Hour:
		return platformv1.MetricInterval_METRIC_INTERVAL_HOUR
	case span <= 92*24*time.Hour:
		return platformv1.MetricInterval_METRIC_INTERVAL_DAY
	case span <= 2*366*24*time.Hour:
		return platformv1.MetricInterval_METRIC_INTERVAL_WEEK
	}
	return platformv1.MetricInterval_METRIC_INTERVAL_MONTH
}

// matchTags evaluates a parsed metric filter on a series' tags.
func matchTags(f store.Filter, tags map[string]string) bool {
	switch f := f.(type) {
	case nil:
		return true
	case store.Text:
		return matchTags(f.Filter, tags)
	case store.And:
		for _, m := range f {
			if !matchTags(m, tags) {
				return false
			}
		}
		return true
	case store.Or:
		for _, m := range f {
			if matchTags(m, tags) {
				return true
			}
		}
		return false
	case store.Not:
		return !matchTags(f.Filter, tags)
	case store.Cond:
		eq := tags[f.Field] == fmt.Sprint(f.Value)
		if f.Op == store.OpNe {
			return !eq
		}
		return eq
	case store.In:
		return slices.Contains(f.Values, tags[f.Field])
	}
	return false
}

// QueryMetrics answers time series of run counts (metricCounts) of the
// organization's workspaces the caller may read, grouped by the tags
// workspace_id and automation_id (ids), filtered on them, ordered and
// paged by series.
func (s *InsightsService) QueryMetrics(ctx context.Context, req *platformv1.QueryMetricsRequest) (*platformv1.QueryMetricsResponse, error) {
	org := req.GetOrganizationId()
	q, err := parseMetricsQuery(req)
	if err != nil {
		return nil, err
	}
	wss, err := s.readableWorkspaces(ctx, org, nil, "filter")
	if err != nil {
		return nil, err
	}
	var rows []store.RunAggregate
	if len(wss) > 0 {
		// Per automation only when the filter or the grouping names it:
		// else the workspaces' rollup rows (a row per bucket, not one per
		// automation). The filter is matched on the tags below; one that
		// does not mention automation_id reads no automation tag.
		byAuto := slices.Contains(req.GetGroupBy(), "automation_id") || strings.Contains(req.GetFilter(), "automation_id")
		if rows, err = s.st.SumRunAggregates(ctx, store.RunAggregatesRequest{OrganizationID: org, WorkspaceIDs: wss, Periods: q.ranges, ByAutomation: byAuto}); err != nil {
			return nil, storeStatus(err, ReasonWorkspaceNotFound, ReasonWorkspaceNotFound, "organizations/"+org)
		}
	}
	all := q.series(rows, req.GetGroupBy())
	out := &platformv1.QueryMetricsResponse{}
	more := false
	for _, m := range req.GetMetrics() {
		res, cut := q.result(m, all)
		out.Results = append(out.Results, res)
		more = more || cut
	}
	if more {
		out.NextPageToken = pagination.Encode(q.bind, []string{strconv.Itoa(q.offset + q.size)})
	}
	return out, nil
}

// metricsQuery is a checked QueryMetricsRequest.
type metricsQuery struct {
	filter    store.Filter
	orderBy   store.OrderBy
	agg       platformv1.AggregationFunction
	iv        platformv1.MetricInterval
	intervals []period
	ranges    []store.TimeRange // the intervals, the first and last clipped to the range
	size      int
	offset    int
	bind      pagination.Binding // the page token's binding
}

func parseMetricsQuery(req *platformv1.QueryMetricsRequest) (*metricsQuery, error) {
	if err := checkMetricNames(req); err != nil {
		return nil, err
	}
	q := &metricsQuery{}
	var err error
	if q.filter, err = sqlfilter.MetricTags.Parse(req.GetFilter()); err != nil {
		return nil, invalidFromStore(err)
	}
	if q.orderBy, err = store.ParseOrderBy(req.GetOrderBy(), store.Ordering{Fields: append([]string{"value"}, req.GetGroupBy()...)}); err != nil {
		return nil, invalidFromStore(err)
	}
	switch req.GetAggregation() {
	case platformv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED, platformv1.AggregationFunction_AGGREGATION_FUNCTION_COUNT,
		platformv1.AggregationFunction_AGGREGATION_FUNCTION_SUM:
	default:
		return nil, invalid(ReasonInvalidField, "aggregation", "aggregation %v does not apply to run counts: use AGGREGATION_FUNCTION_COUNT (or SUM, the same for counts)", req.GetAggregation())
	}
	q.agg = req.GetAggregation()
	if q.agg == platformv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED {
		q.agg = platformv1.AggregationFunction_AGGREGATION_FUNCTION_COUNT
	}
	start, end, err := metricsRange(req)
	if err != nil {
		return nil, err
	}
	if q.size, err = pagination.PageSize(req.GetPageSize()); err != nil {
		return nil, invalid(ReasonInvalidField, "page_size", "%v", err)
	}
	q.iv = req.GetInterval()
	if q.iv == platformv1.MetricInterval_METRIC_INTERVAL_UNSPECIFIED {
		q.iv = autoInterval(end.Sub(start))
	}
	if q.intervals, err = metricIntervals(start, end, q.iv); err != nil {
		return nil, err
	}
	q.ranges = make([]store.TimeRange, len(q.intervals))
	for i, p := range q.intervals {
		q.ranges[i] = p.TimeRange
		if q.ranges[i].Start.Before(start) {
			q.ranges[i].Start = start
		}
		if q.ranges[i].End.After(end) {
			q.ranges[i].End = end
		}
	}
	q.bind = pagination.Bind("metrics", req.GetOrganizationId(), strings.Join(req.GetMetrics(), ","), req.GetFilter(), strings.Join(req.GetGroupBy(), ","),
		start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano), q.iv.String(), q.agg.String(), q.orderBy.String(), strconv.Itoa(q.size))
	if req.GetPageToken() != "" {
		keys, err := pagination.Decode(req.GetPageToken(), q.bind, 1)
		if err != nil {
			return nil, invalidFromStore(err)
		}
		if q.offset, err = strconv.Atoi(keys[0]); err != nil || q.offset < 0 {
			return nil, invalid(ReasonInvalidField, "page_token", "page_token is malformed")
		}
	}
	return q, nil
}

// checkMetricNames checks the metrics and the tags to group by.
func checkMetricNames(req *platformv1.QueryMetricsRequest) error {
	if len(req.GetMetrics()) == 0 {
		return invalid(ReasonInvalidField, "metrics", "metrics is required: one or more of %s", strings.Join(slices.Sorted(maps.Keys(metricCounts)), ", "))
	}
	for i, m := range req.GetMetrics() {
		if metricCounts[m] == nil {
			return invalid(ReasonInvalidField, fmt.Sprintf("metrics[%d]", i), "metrics[%d] %q is not one of %s", i, m, strings.Join(slices.Sorted(maps.Keys(metricCounts)), ", "))
		}
	}
	for i, g := range req.GetGroupBy() {
		if !slices.Contains(metricTags, g) {
			return invalid(ReasonInvalidField, fmt.Sprintf("group_by[%d]", i), "group_by[%d] %q is not a tag (%s)", i, g, strings.Join(metricTags, ", "))
		}
		if slices.Index(req.GetGroupBy(), g) != i {
			return invalid(ReasonInvalidField, fmt.Sprintf("group_by[%d]", i), "group_by[%d] %q is given twice", i, g)
		}
	}
	return nil
}

// metricsRange checks the range of QueryMetrics.
func metricsRange(req *platformv1.QueryMetricsRequest) (start, end time.Time, err error) {
	if req.GetStartTime() == nil || req.GetEndTime() == nil {
		return start, end, invalid(ReasonInvalidField, "start_time", "start_time and end_time are required")
	}
	if err := req.GetStartTime().CheckValid(); err != nil {
		return start, end, invalid(ReasonInvalidField, "start_time", "start_time: %v", err)
	}
	if err := req.GetEndTime().CheckValid(); err != nil {
		return start, end, invalid(ReasonInvalidField, "end_time", "end_time: %v", err)
	}
	start, end = req.GetStartTime().AsTime(), req.GetEndTime().AsTime()
	if !start.Before(end) {
		return start, end, invalid(ReasonInvalidField, "end_time", "end_time must be after start_time")
	}
	return start, end, nil
}

// metricSeries is a series of QueryMetrics: the counts of each interval of
// the rows with its tags.
type metricSeries struct {
	tags   map[string]string
	key    string
	counts []store.RunCounts
}

// series groups the rows matching the filter by the tags of groupBy (one
// empty series when nothing is grouped and nothing matched).
func (q *metricsQuery) series(rows []store.RunAggregate, groupBy []string) []*metricSeries {
	byKey := map[string]*metricSeries{}
	var all []*metricSeries
	for _, g := range rows {
		tags := map[string]string{"workspace_id": g.WorkspaceID, "automation_id": g.AutomationID}
		if !matchTags(q.filter, tags) {
			continue
		}
		st := map[string]string{}
		var kb strings.Builder
		for _, t := range groupBy {
			st[t] = tags[t]
			kb.WriteString(tags[t] + "\x00")
		}
		k := kb.String()
		se := byKey[k]
		if se == nil {
			se = &metricSeries{tags: st, key: k, counts: make([]store.RunCounts, len(q.intervals))}
			byKey[k] = se
			all = append(all, se)
		}
		se.counts[g.Period].Add(g.Counts)
	}
	if len(all) == 0 && len(groupBy) == 0 {
		all = append(all, &metricSeries{tags: map[string]string{}, counts: make([]store.RunCounts, len(q.intervals))})
	}
	return all
}

// result is the page of metric m over the series all, ordered; more: the
// page was cut.
func (q *metricsQuery) result(m string, all []*metricSeries) (res *platformv1.MetricResult, more bool) {
	count := metricCounts[m]
	last := func(se *metricSeries) int64 { return count(se.counts[len(se.counts)-1]) }
	list := slices.Clone(all)
	slices.SortStableFunc(list, func(a, b *metricSeries) int {
		for _, o := range q.orderBy {
			var c int
			if o.Field == "value" {
				c = cmp.Compare(last(a), last(b))
			} else {
				c = cmp.Compare(a.tags[o.Field], b.tags[o.Field])
			}
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Compare(a.key, b.key)
	})
	if q.offset < len(list) {
		list = list[q.offset:]
	} else {
		list = nil
	}
	if q.size > 0 && len(list) > q.size {
		list, more = list[:q.size], true
	}
	res = &platformv1.MetricResult{Metric: m, Interval: q.iv, Aggregation: q.agg, Series: []*platformv1.MetricSeries{}}
	for _, se := range list {
		ms := &platformv1.MetricSeries{Tags: se.tags}
		for i, p := range q.intervals {
			ms.Points = append(ms.Points, &platformv1.MetricDataPoint{StartTime: timestamppb.New(p.Start), Value: float64(count(se.counts[i])), WindowLabel: p.label})
		}
		res.Series = append(res.Series, ms)
	}
	return res, more
}
