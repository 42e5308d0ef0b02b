package server_test

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

const insSvc = "/prose.platform.v1.InsightsService/"

// insightsFixture runs, in the test workspace: automation auto, 3 runs
// that complete on their own; automation guided, 5 runs that stop on a
// division by zero: one skipped by a person (API :resolve) and one by a
// guide entry (the engine's Resolve with resolver guideEntries/…), both
// then complete; one archived (stopped); two left waiting.
type insightsFixture struct {
	auto, guided store.Automation
}

func (e *testEnv) insightsFixture(t *testing.T) insightsFixture {
	t.Helper()
	ctx := context.Background()
	f := insightsFixture{auto: e.ExcAutomation(t, "the output x is 1\n"), guided: e.ExcAutomation(t, testenv.ExcSkipCode)}
	for range 3 {
		r, _, err := e.App.Engine.Invoke(ctx, engine.InvokeRequest{OrganizationID: e.Init.OrganizationID, WorkspaceID: e.Init.WorkspaceID, AutomationID: f.auto.ID, Stage: store.StageDraft})
		if err != nil {
			t.Fatal(err)
		}
		e.WaitRunState(t, f.auto.ID, r.ID, store.RunCompleted)
	}
	var waiting []store.Run
	for range 5 {
		waiting = append(waiting, e.ExcRun(t, f.guided))
	}
	e.API(t, "POST", e.WsPath()+"/exceptions/"+waiting[0].ExceptionID+":resolve", `{"skip": {}}`, 200)
	if _, err := e.App.Engine.Resolve(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, waiting[1].ExceptionID, "guideEntries/g1", engine.Guidance{Kind: engine.GuidanceSkip}); err != nil {
		t.Fatal(err)
	}
	e.API(t, "POST", e.WsPath()+"/exceptions/"+waiting[2].ExceptionID+":archive", `{}`, 200)
	e.WaitRunState(t, f.guided.ID, waiting[0].ID, store.RunCompleted)
	e.WaitRunState(t, f.guided.ID, waiting[1].ID, store.RunCompleted)
	return f
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		var f float64
		_, _ = fmt.Sscan(x, &f)
		return f
	}
	return 0
}

// TestInsights: the run aggregates, estimates, insights and metrics of the
// fixture's runs, over HTTP and gRPC: counts per automation and per day
// (in time zones on both sides of UTC), completion, straight-through
// processing (a guide entry's guidance is not human guidance), runs
// awaiting guidance, exact money and time saved; client mistakes; and over
// HTTP every answer checked field by field against the reference.
func TestInsights(t *testing.T) {
	ref := loadReference(t)
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		e := newTestEnv(t)
		org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
		f := e.insightsFixture(t)
		autoName := "organizations/" + org + "/workspaces/" + ws + "/automations/" + f.auto.ID
		guidedName := "organizations/" + org + "/workspaces/" + ws + "/automations/" + f.guided.ID
		wsName := "organizations/" + org + "/workspaces/" + ws

		// Per automation, all time.
		agg := e.mustCall(t, tr, insSvc+"QueryAutomationRunAggregates", &platformv1.QueryAutomationRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws})
		got := map[string]string{}
		l, _ := agg["automation_run_aggregates"].([]any)
		for _, x := range l {
			got[fmt.Sprint(testenv.Field(x, "automation_id"))] = fmt.Sprint(testenv.Field(x, "stats.total_runs"), "/", testenv.Field(x, "stats.completed_runs"))
		}
		if fmt.Sprint(got) != fmt.Sprint(map[string]string{autoName: "3/3", guidedName: "5/2"}) {
			t.Errorf("automation run aggregates: %v", got)
		}

		// Per day: today in three zones, three days around it; the runs are in one of them.
		now := time.Now()
		for _, zone := range []string{"UTC", "America/New_York", "Pacific/Kiritimati", "Asia/Kolkata"} {
			loc, _ := time.LoadLocation(zone)
			today := now.In(loc)
			d := func(t time.Time) *date.Date {
				return &date.Date{Year: int32(t.Year()), Month: int32(t.Month()), Day: int32(t.Day())}
			}
			daily := e.mustCall(t, tr, insSvc+"QueryDailyRunAggregates", &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws,
				TimeZone: zone, StartDate: d(today.AddDate(0, 0, -1)), EndDate: d(today.AddDate(0, 0, 1))})
			days, _ := daily["daily_run_aggregates"].([]any)
			var sum float64
			var dates []string
			for _, x := range days {
				sum += num(testenv.Field(x, "stats.total_runs"))
				dates = append(dates, fmt.Sprint(testenv.Field(x, "date")))
			}
			if len(days) != 3 || sum != 8 || dates[1] != today.Format(time.DateOnly) {
				t.Errorf("%s: daily aggregates %v", zone, daily)
			}
		}
		filtered := e.mustCall(t, tr, insSvc+"QueryDailyRunAggregates", &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws,
			TimeZone: "UTC", Filter: fmt.Sprintf(`automation_id = %q OR automation_id = "nope"`, f.auto.ID)})
		days, _ := filtered["daily_run_aggregates"].([]any)
		var sum float64
		for _, x := range days {
			sum += num(testenv.Field(x, "stats.total_runs"))
		}
		if len(days) != 30 || sum != 3 || testenv.Field(days[29], "date") != now.UTC().Format(time.DateOnly) {
			t.Errorf("filtered daily aggregates (default range: the 30 days to today): %d days, %v runs", len(days), sum)
		}

		// Estimates: exact decimals.
		conf := e.mustCall(t, tr, insSvc+"ConfigureAutomationEstimates", &platformv1.ConfigureAutomationEstimatesRequest{OrganizationId: org, WorkspaceId: ws,
			AutomationEstimates: []*platformv1.AutomationEstimate{
				{AutomationId: autoName, CostUsd: "0.10", TimeSavedSecs: 30},
				{AutomationId: f.guided.ID, CostUsd: "12.345", TimeSavedSecs: 600},
			}})
		if l, _ := conf["automation_estimates"].([]any); len(l) != 2 {
			t.Errorf("configured: %v", conf)
		}
		qe := e.mustCall(t, tr, insSvc+"QueryAutomationEstimates", &platformv1.QueryAutomationEstimatesRequest{OrganizationId: org})
		if l, _ := testenv.Field(qe, "workspace_estimates."+wsName+".estimates").([]any); len(l) != 2 {
			t.Errorf("estimates by workspace: %v", qe)
		}

		// Insights of the last hour and the next.
		win := &platformv1.InsightsTimeWindow{StartTime: timestamppb.New(now.Add(-time.Hour)), EndTime: timestamppb.New(now.Add(time.Hour)), TimeZone: "Europe/Berlin"}
		ins := e.mustCall(t, tr, insSvc+"QueryInsights", &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: &platformv1.InsightsFilter{TimeWindow: win}})
		checks := map[string]any{
			"run_insight.total_runs_count":                           "8",
			"value_insight.total_money_saved_usd":                    "24.990", // 3 × 0.10 + 2 × 12.345
			"value_insight.total_time_saved_secs":                    "1290",   // 3 × 30 + 2 × 600
			"awaiting_guidance_insight.total_runs_awaiting_guidance": "2",
			"completion_insight.total_percent_completions":           62.5, // 5 of 8
			"completion_insight.stp":                                 80.0, // 4 of 5 with no person's or agent's guidance
		}
		for k, want := range checks {
			if got := testenv.Field(ins, k); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s = %v, want %v", k, got, want)
			}
		}
		var auto, manual, awaiting float64
		for _, x := range testenv.Field(ins, "completion_insight.completions_per_period").([]any) {
			auto += num(testenv.Field(x, "auto_completed_count"))
			manual += num(testenv.Field(x, "manually_resolved_count"))
		}
		for _, x := range testenv.Field(ins, "awaiting_guidance_insight.runs_per_period").([]any) {
			awaiting += num(testenv.Field(x, "runs_awaiting_guidance"))
		}
		if auto != 4 || manual != 1 || awaiting != 2 {
			t.Errorf("per period: %v auto, %v manual, %v awaiting", auto, manual, awaiting)
		}
		per, _ := testenv.Field(ins, "value_insight.insights_per_automation_per_workspace."+wsName+".values").([]any)
		money := map[string]string{}
		for _, x := range per {
			money[fmt.Sprint(testenv.Field(x, "automation_id"))] = fmt.Sprint(testenv.Field(x, "money_saved_usd"), " ", testenv.Field(x, "time_saved_secs"), " ", testenv.Field(x, "display_name"))
		}
		if fmt.Sprint(money) != fmt.Sprint(map[string]string{autoName: "0.30 90 exceptions", guidedName: "24.690 1200 exceptions"}) {
			t.Errorf("value per automation: %v", money)
		}
		// Filtered to one automation.
		one := e.mustCall(t, tr, insSvc+"QueryInsights", &platformv1.QueryInsightsRequest{OrganizationId: org,
			Filter: &platformv1.InsightsFilter{TimeWindow: win, AutomationIds: []string{guidedName}, WorkspaceIds: []string{wsName}}})
		if testenv.Field(one, "run_insight.total_runs_count") != "5" || testenv.Field(one, "completion_insight.stp") != 50.0 {
			t.Errorf("insights of one automation: %v", one)
		}
		// A window with no runs.
		empty := e.mustCall(t, tr, insSvc+"QueryInsights", &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: &platformv1.InsightsFilter{
			TimeWindow: &platformv1.InsightsTimeWindow{StartTime: timestamppb.New(now.AddDate(0, -3, 0)), EndTime: timestamppb.New(now.AddDate(0, 0, -2))}}})
		if testenv.Field(empty, "run_insight.total_runs_count") != nil || testenv.Field(empty, "value_insight.total_money_saved_usd") != "0" {
			t.Errorf("empty window: %v", empty)
		}

		// Metrics: runs and straight-through runs per automation, by hour.
		met := e.mustCall(t, tr, insSvc+"QueryMetrics", &platformv1.QueryMetricsRequest{OrganizationId: org, Metrics: []string{"runs", "straight_through_runs"},
			GroupBy: []string{"automation_id"}, StartTime: timestamppb.New(now.Add(-2 * time.Hour)), EndTime: timestamppb.New(now.Add(time.Hour)),
			Interval: platformv1.MetricInterval_METRIC_INTERVAL_HOUR, OrderBy: "automation_id"})
		results, _ := met["results"].([]any)
		sums := map[string]float64{}
		for _, r := range results {
			for _, s := range testenv.Field(r, "series").([]any) {
				for _, p := range testenv.Field(s, "points").([]any) {
					sums[fmt.Sprint(testenv.Field(r, "metric"), "/", testenv.Field(s, "tags.automation_id"))] += num(testenv.Field(p, "value"))
				}
				if n := len(testenv.Field(s, "points").([]any)); n != 3 && n != 4 {
					t.Errorf("%d hourly points in 3 hours", n)
				}
			}
		}
		want := map[string]float64{"runs/" + f.auto.ID: 3, "runs/" + f.guided.ID: 5, "straight_through_runs/" + f.auto.ID: 3, "straight_through_runs/" + f.guided.ID: 1}
		if fmt.Sprint(sums) != fmt.Sprint(want) {
			t.Errorf("metrics: %v, want %v", sums, want)
		}
		// Not grouped (the workspaces' rollup rows, migration 00030), then
		// filtered by an automation without grouping by it (its own rows).
		for filter, wantRuns := range map[string]float64{"": 8, fmt.Sprintf(`automation_id = %q`, f.auto.ID): 3} {
			m := e.mustCall(t, tr, insSvc+"QueryMetrics", &platformv1.QueryMetricsRequest{OrganizationId: org, Metrics: []string{"runs"},
				StartTime: timestamppb.New(now.Add(-2 * time.Hour)), EndTime: timestamppb.New(now.Add(time.Hour)),
				Interval: platformv1.MetricInterval_METRIC_INTERVAL_HOUR, Filter: filter})
			var n float64
			for _, p := range testenv.Field(m, "results.0.series.0.points").([]any) {
				n += num(testenv.Field(p, "value"))
			}
			if n != wantRuns {
				t.Errorf("metrics, filter %q, not grouped: %v runs, want %v", filter, n, wantRuns)
			}
		}
		// "value" is the last point's: days, the last one today's (it holds the runs).
		page := e.mustCall(t, tr, insSvc+"QueryMetrics", &platformv1.QueryMetricsRequest{OrganizationId: org, Metrics: []string{"runs"}, GroupBy: []string{"automation_id"},
			StartTime: timestamppb.New(now.Add(-time.Hour)), EndTime: timestamppb.New(time.Now().Add(time.Minute)), OrderBy: "value desc", PageSize: 1,
			Interval: platformv1.MetricInterval_METRIC_INTERVAL_DAY,
			Filter:   fmt.Sprintf(`workspace_id = %q`, ws)})
		if s := testenv.Field(page, "results.0.series").([]any); len(s) != 1 || testenv.Field(s[0], "tags.automation_id") != f.guided.ID || page["next_page_token"] == nil {
			t.Errorf("top series: %v", page)
		}

		// Client mistakes.
		bad := []struct {
			rpc    string
			call   func() error
			code   codes.Code
			reason string
		}{
			{"daily without a time zone", func() error {
				_, err := e.call(t, tr, insSvc+"QueryDailyRunAggregates", &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws})
				return err
			}, codes.InvalidArgument, "REQUIRED_FIELD_MISSING"},
			{"daily in an unknown zone", func() error {
				_, err := e.call(t, tr, insSvc+"QueryDailyRunAggregates", &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws, TimeZone: "Mars/Olympus"})
				return err
			}, codes.InvalidArgument, "INVALID_TIME_ZONE"},
			{"daily on February 30", func() error {
				_, err := e.call(t, tr, insSvc+"QueryDailyRunAggregates", &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws, TimeZone: "UTC",
					StartDate: &date.Date{Year: 2026, Month: 2, Day: 30}})
				return err
			}, codes.InvalidArgument, "INVALID_FIELD"},
			{"daily over two years", func() error {
				_, err := e.call(t, tr, insSvc+"QueryDailyRunAggregates", &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws, TimeZone: "UTC",
					StartDate: &date.Date{Year: 2024, Month: 1, Day: 1}, EndDate: &date.Date{Year: 2026, Month: 1, Day: 1}})
				return err
			}, codes.InvalidArgument, "INVALID_FIELD"},
			{"daily with another filter", func() error {
				_, err := e.call(t, tr, insSvc+"QueryDailyRunAggregates", &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: ws, TimeZone: "UTC",
					Filter: `automation_id = "a" AND automation_id = "b"`})
				return err
			}, codes.InvalidArgument, "INVALID_FILTER"},
			{"daily of an unknown workspace", func() error {
				_, err := e.call(t, tr, insSvc+"QueryDailyRunAggregates", &platformv1.QueryDailyRunAggregatesRequest{OrganizationId: org, WorkspaceId: "nope", TimeZone: "UTC"})
				return err
			}, codes.NotFound, "WORKSPACE_NOT_FOUND"},
			{"estimate that is not a number", func() error {
				_, err := e.call(t, tr, insSvc+"ConfigureAutomationEstimates", &platformv1.ConfigureAutomationEstimatesRequest{OrganizationId: org, WorkspaceId: ws,
					AutomationEstimates: []*platformv1.AutomationEstimate{{AutomationId: f.auto.ID, CostUsd: "ten"}}})
				return err
			}, codes.InvalidArgument, "INVALID_ESTIMATE"},
			{"negative estimate", func() error {
				_, err := e.call(t, tr, insSvc+"ConfigureAutomationEstimates", &platformv1.ConfigureAutomationEstimatesRequest{OrganizationId: org, WorkspaceId: ws,
					AutomationEstimates: []*platformv1.AutomationEstimate{{AutomationId: f.auto.ID, CostUsd: "-1"}}})
				return err
			}, codes.InvalidArgument, "INVALID_ESTIMATE"},
			{"estimate of an unknown automation", func() error {
				_, err := e.call(t, tr, insSvc+"ConfigureAutomationEstimates", &platformv1.ConfigureAutomationEstimatesRequest{OrganizationId: org, WorkspaceId: ws,
					AutomationEstimates: []*platformv1.AutomationEstimate{{AutomationId: "nope", CostUsd: "1"}}})
				return err
			}, codes.NotFound, "AUTOMATION_NOT_FOUND"},
			{"insights without a window", func() error {
				_, err := e.call(t, tr, insSvc+"QueryInsights", &platformv1.QueryInsightsRequest{OrganizationId: org})
				return err
			}, codes.InvalidArgument, "INVALID_FIELD"},
			{"insights of another organization's automation", func() error {
				_, err := e.call(t, tr, insSvc+"QueryInsights", &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: &platformv1.InsightsFilter{TimeWindow: win,
					AutomationIds: []string{"organizations/other/workspaces/w/automations/a"}}})
				return err
			}, codes.InvalidArgument, "INVALID_FIELD"},
			{"unknown metric", func() error {
				_, err := e.call(t, tr, insSvc+"QueryMetrics", &platformv1.QueryMetricsRequest{OrganizationId: org, Metrics: []string{"pages"},
					StartTime: win.StartTime, EndTime: win.EndTime})
				return err
			}, codes.InvalidArgument, "INVALID_FIELD"},
			{"average of counts", func() error {
				_, err := e.call(t, tr, insSvc+"QueryMetrics", &platformv1.QueryMetricsRequest{OrganizationId: org, Metrics: []string{"runs"},
					StartTime: win.StartTime, EndTime: win.EndTime, Aggregation: platformv1.AggregationFunction_AGGREGATION_FUNCTION_AVG})
				return err
			}, codes.InvalidArgument, "INVALID_FIELD"},
			{"hours of three months", func() error {
				_, err := e.call(t, tr, insSvc+"QueryMetrics", &platformv1.QueryMetricsRequest{OrganizationId: org, Metrics: []string{"runs"},
					StartTime: timestamppb.New(now.AddDate(0, -3, 0)), EndTime: win.EndTime, Interval: platformv1.MetricInterval_METRIC_INTERVAL_HOUR})
				return err
			}, codes.InvalidArgument, "INVALID_FIELD"},
			{"metrics grouped by an unknown tag", func() error {
				_, err := e.call(t, tr, insSvc+"QueryMetrics", &platformv1.QueryMetricsRequest{OrganizationId: org, Metrics: []string{"runs"}, GroupBy: []string{"colour"},
					StartTime: win.StartTime, EndTime: win.EndTime})
				return err
			}, codes.InvalidArgument, "INVALID_FIELD"},
		}
		for _, c := range bad {
			t.Run(c.rpc, func(t *testing.T) { wantStatus(t, tr, c.call(), c.code, c.reason) })
		}

		// A key scoped to another workspace sees none of these runs.
		other := e.NewWorkspace(t, "Other")
		key := e.NewKey(t, testenv.KeySpec{Level: store.PermissionAll, Workspaces: []string{other}})
		if tr.grpc {
			m, err := e.DoGRPC(t, insSvc+"QueryInsights", &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: &platformv1.InsightsFilter{TimeWindow: win}},
				evAuth(key))
			if err != nil || testenv.Field(m, "run_insight.total_runs_count") != nil {
				t.Errorf("scoped key: %v %v", m, err)
			}
		} else {
			q := url.Values{"filter.time_window.start_time": {win.StartTime.AsTime().Format(time.RFC3339Nano)}, "filter.time_window.end_time": {win.EndTime.AsTime().Format(time.RFC3339Nano)}}
			code, m, raw := e.DoHTTP(t, "GET", "/api/v1/organizations/"+org+"/dashboards:queryInsights?"+q.Encode(), "", map[string]string{"Authorization": "Bearer " + key})
			if code != 200 || testenv.Field(m, "run_insight.total_runs_count") != nil {
				t.Errorf("scoped key: %d %s", code, raw)
			}
			code, _, raw = e.DoHTTP(t, "GET", "/api/v1/organizations/"+org+"/dashboards:queryInsights?"+q.Encode()+"&filter.workspace_ids="+url.QueryEscape(wsName), "",
				map[string]string{"Authorization": "Bearer " + key})
			if code != 403 {
				t.Errorf("scoped key naming a workspace out of scope: %d %s", code, raw)
			}
		}

		if tr.grpc {
			return
		}
		// The JSON, field by field, against the reference's schemas.
		wsBase := "/api/v1/organizations/" + org + "/workspaces/" + ws
		q := url.Values{"filter.time_window.start_time": {win.StartTime.AsTime().Format(time.RFC3339Nano)},
			"filter.time_window.end_time": {win.EndTime.AsTime().Format(time.RFC3339Nano)}, "filter.time_window.time_zone": {"Europe/Berlin"}}
		kolkata, _ := time.LoadLocation("Asia/Kolkata")
		day := now.In(kolkata)
		dq := url.Values{"time_zone": {"Asia/Kolkata"}}
		for _, part := range []string{"start_date", "end_date"} {
			dq.Set(part+".year", fmt.Sprint(day.Year()))
			dq.Set(part+".month", fmt.Sprint(int(day.Month())))
			dq.Set(part+".day", fmt.Sprint(day.Day()))
		}
		mq := url.Values{"page_size": {"1"}, "metrics": {"runs", "guided_runs"}, "group_by": {"workspace_id", "automation_id"}, "start_time": {now.Add(-time.Hour).UTC().Format(time.RFC3339)},
			"end_time": {now.Add(time.Hour).UTC().Format(time.RFC3339)}, "interval": {"METRIC_INTERVAL_HOUR"}, "aggregation": {"AGGREGATION_FUNCTION_COUNT"}}
		const p = "/api/v1/organizations/{organization_id}"
		for _, c := range []struct{ method, path, body, refPath, schema string }{
			{"GET", wsBase + ":automationRunAggregates", "", p + "/workspaces/{workspace_id}:automationRunAggregates", "v1QueryAutomationRunAggregatesResponse"},
			{"GET", wsBase + ":dailyRunAggregates?" + dq.Encode(), "", p + "/workspaces/{workspace_id}:dailyRunAggregates", "v1QueryDailyRunAggregatesResponse"},
			{"POST", wsBase + "/dashboards:configureAutomationEstimates", `{"automation_estimates": [{"automation_id": "` + autoName + `", "cost_usd": "0.10", "time_saved_secs": 30}]}`,
				p + "/workspaces/{workspace_id}/dashboards:configureAutomationEstimates", "dashboardsConfigureAutomationEstimatesResponse"},
			{"GET", "/api/v1/organizations/" + org + "/dashboards:queryAutomationEstimates", "", p + "/dashboards:queryAutomationEstimates", "dashboardsQueryAutomationEstimatesResponse"},
			{"GET", "/api/v1/organizations/" + org + "/dashboards:queryInsights?" + q.Encode(), "", p + "/dashboards:queryInsights", "dashboardsQueryInsightsResponse"},
			{"GET", "/api/v1/organizations/" + org + "/metrics:query?" + mq.Encode(), "", p + "/metrics:query", "v1QueryMetricsResponse"},
		} {
			code, raw := e.APIRaw(t, c.method, c.path, c.body)
			if code != 200 {
				t.Fatalf("%s %s: %d %s", c.method, c.path, code, raw)
			}
			ref.checkAnswer(t, c.refPath, c.method, raw)
			v := decodeJSON(t, raw)
			checkSchema(t, c.schema, v)
			// Every field the reference declares is answered (where a value is set).
			for _, missing := range refMissing(t, c.schema, v) {
				if strings.HasSuffix(missing, ".trend") {
					continue // no runs before the window: no change to tell
				}
				t.Errorf("%s %s: the reference's field %s is never answered", c.method, c.path, missing)
			}
		}
	})
}

// refMissing lists the properties of the reference's schema name (and of
// the objects it nests) that v never holds, for the fields whose zero
// value proto JSON leaves out it cannot tell apart; callers give answers
// whose every field is set.
func refMissing(t *testing.T, name string, v any) []string {
	t.Helper()
	schemas := referenceSchemas(t)
	seen := map[string]bool{}
	var walk func(s map[string]any, v any, path string)
	walk = func(s map[string]any, v any, path string) {
		for {
			ref, ok := s["$ref"].(string)
			if !ok {
				break
			}
			s, _ = schemas[ref[len("#/components/schemas/"):]].(map[string]any)
		}
		switch x := v.(type) {
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			if props == nil {
				if addl, ok := s["additionalProperties"].(map[string]any); ok {
					for _, y := range x {
						walk(addl, y, path+".*")
					}
				}
				return
			}
			for k, ps := range props {
				p := path + "." + k
				if _, ok := seen[p]; !ok {
					seen[p] = false
				}
				if y, ok := x[k]; ok {
					seen[p] = true
					walk(ps.(map[string]any), y, p)
				}
			}
		case []any:
			items, _ := s["items"].(map[string]any)
			for _, y := range x {
				walk(items, y, path+"[]")
			}
		}
	}
	root, _ := schemas[name].(map[string]any)
	walk(root, v, name)
	var out []string
	for p, ok := range seen {
		if !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// TestInsightsWithGuideEntries: the learning loop as it runs (main's guide
// entries): a person resolves a run's gap with "remember", the entry is
// approved, the next runs complete by themselves (the entry resolves their
// gap at once). Straight-through processing counts those runs (a guide
// entry is not human guidance) and not the one the person guided.
func TestInsightsWithGuideEntries(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr apiTransport) {
		e := newTestEnv(t)
		org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
		a := e.ExcAutomation(t, guideCode)
		first := e.guideInvoke(t, tr, a.ID, 100)
		r := e.WaitRunState(t, a.ID, first, store.RunAwaitingGuidance)
		res := e.mustCall(t, tr, excSvc+"ResolveException", &platformv1.ResolveExceptionRequest{
			OrganizationId: org, WorkspaceId: ws, ExceptionId: r.ExceptionID, Remember: true,
			Guidance: &platformv1.ResolveExceptionRequest_ProvideValues{ProvideValues: &platformv1.ProvideValues{
				Values: map[string]*platformv1.Value{"the grand total": {Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: 11000, Flags: 2 << 16}}}},
			}},
		})
		gid := store.LastSegment(fmt.Sprint(testenv.Field(res, "extra.remembered_guide_entry")))
		e.WaitRunState(t, a.ID, first, store.RunCompleted)
		e.mustCall(t, tr, guideSvc+"ApproveGuideEntry", &platformv1.ApproveGuideEntryRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a.ID, GuideEntryId: gid})
		for i := range 5 {
			e.WaitRunState(t, a.ID, e.guideInvoke(t, tr, a.ID, uint32(i+1)), store.RunCompleted)
		}
		now := time.Now()
		ins := e.mustCall(t, tr, insSvc+"QueryInsights", &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: &platformv1.InsightsFilter{
			TimeWindow: &platformv1.InsightsTimeWindow{StartTime: timestamppb.New(now.Add(-time.Hour)), EndTime: timestamppb.New(now.Add(time.Hour))}}})
		if testenv.Field(ins, "run_insight.total_runs_count") != "6" || testenv.Field(ins, "completion_insight.total_percent_completions") != 100.0 ||
			fmt.Sprintf("%.4f", testenv.Field(ins, "completion_insight.stp")) != "83.3333" {
			t.Errorf("insights: %v", ins)
		}
		var auto, manual float64
		for _, x := range testenv.Field(ins, "completion_insight.completions_per_period").([]any) {
			auto += num(testenv.Field(x, "auto_completed_count"))
			manual += num(testenv.Field(x, "manually_resolved_count"))
		}
		if auto != 5 || manual != 1 {
			t.Errorf("per period: %v straight through, %v guided by a person", auto, manual)
		}
	})
}
