package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine/schedule"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// fakeClock is a settable clock shared by the scheduler and the schedule
// service of a test app.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = utcTime(s)
}

func utcTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

const weekdayBerlin = `{"config":{"start":{"start_date":{"year":2026,"month":3,"day":23},"time":{"hours":9},"time_zone":"Europe/Berlin"},
	"repeat_interval":{"unit":"FREQUENCY_UNIT_WEEK"},
	"weekly_pattern":{"days":["DAY_OF_WEEK_MONDAY","DAY_OF_WEEK_TUESDAY","DAY_OF_WEEK_WEDNESDAY","DAY_OF_WEEK_THURSDAY","DAY_OF_WEEK_FRIDAY"]}}}`

func nextTimes(m map[string]any) []string {
	var out []string
	list, _ := m["next_run_times"].([]any)
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// scheduledRuns lists the runs of an automation over HTTP (oldest first).
func (e *testEnv) scheduledRuns(t *testing.T, automation string) []map[string]any {
	t.Helper()
	m := e.API(t, "GET", e.AutomationsPath()+"/"+automation+"/runs?order_by=create_time", "", 200)
	var out []map[string]any
	list, _ := m["runs"].([]any)
	for _, x := range list {
		out = append(out, x.(map[string]any))
	}
	return out
}

func (e *testEnv) tick(t *testing.T) {
	t.Helper()
	if _, err := e.App.Scheduler.Tick(context.Background()); err != nil {
		t.Fatalf("scheduler: %v", err)
	}
}

// TestSchedulesHTTPAndGRPC: the six operations with the reference's JSON,
// an automation started every weekday at 09:00 Europe/Berlin across the
// change to summer time, one run per occurrence however often the
// scheduler looks, the missed-occurrence policy, disable and enable.
func TestSchedulesHTTPAndGRPC(t *testing.T) {
	clk := &fakeClock{}
	clk.Set("2026-03-27T06:00:00Z") // Friday 07:00 in Berlin
	e := newTestEnvWith(t, func(c *app.Config) { c.Clock = clk.Now })
	a := e.MkAutomation(t, "Morning report", "the output x is 1\n", false)
	path := e.AutomationsPath() + "/" + a.ID + "/schedule"

	m := e.API(t, "POST", path, weekdayBerlin, 200)
	checkSchema(t, "v1AutomationSchedule", m)
	if m["name"] != "organizations/"+e.Init.OrganizationID+"/workspaces/"+e.Init.WorkspaceID+"/automations/"+a.ID+"/schedule" ||
		m["enabled"] != true || m["summary"] != "Every weekday at 09:00 (Europe/Berlin)" {
		t.Fatalf("created: %v", m)
	}
	// 08:00 UTC in winter, 07:00 UTC from Monday 2026-03-30 (summer time).
	if got, want := nextTimes(m), []string{"2026-03-27T08:00:00Z", "2026-03-30T07:00:00Z", "2026-03-31T07:00:00Z", "2026-04-01T07:00:00Z", "2026-04-02T07:00:00Z"}; !slices.Equal(got, want) {
		t.Errorf("next_run_times = %v, want %v", got, want)
	}
	if _, ok := m["remaining_occurrences"]; ok {
		t.Errorf("remaining_occurrences without an end after occurrences: %v", m)
	}

	// One schedule per automation; bad configurations name their field.
	code, body, raw := e.DoHTTP(t, "POST", path, weekdayBerlin, e.Bearer())
	if code != http.StatusConflict || testenv.Field(body, "details.0.reason") != "SCHEDULE_ALREADY_EXISTS" {
		t.Errorf("second create: %d %s", code, raw)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"config":{"start":{"start_date":{"year":2026,"month":2,"day":30}}}}`, "schedule.config.start.start_date.day"},
		{`{"config":{"start":{"start_date":{"year":2026,"month":2,"day":3},"time_zone":"Mars/Base"}}}`, "schedule.config.start.time_zone"},
		{`{"config":{"start":{"start_date":{"year":2026,"month":2,"day":3}},"repeat_interval":{"unit":"FREQUENCY_UNIT_DAY","interval":0},"weekly_pattern":{"days":["DAY_OF_WEEK_MONDAY"]}}}`, "schedule.config.weekly_pattern"},
		{`{}`, "schedule.config"},
	} {
		code, body, raw := e.DoHTTP(t, "PATCH", path, bad.body, e.Bearer())
		if code != http.StatusBadRequest || !strings.Contains(string(raw), bad.field) {
			t.Errorf("PATCH %s: %d %s (%v), want 400 naming %s", bad.body, code, raw, body, bad.field)
		}
	}
	if code, _, raw := e.DoHTTP(t, "POST", e.AutomationsPath()+"/nope/schedule", weekdayBerlin, e.Bearer()); code != http.StatusNotFound {
		t.Errorf("schedule of an unknown automation: %d %s", code, raw)
	}
	if code, _, raw := e.DoHTTP(t, "POST", path, `{"config":{"start":{"start_date":{"year":2026,"month":3,"day":23}}},"surprise":1}`, e.Bearer()); code != http.StatusBadRequest {
		t.Errorf("unknown field: %d %s", code, raw)
	}

	// Before the occurrence: nothing. At it: one run, however often the
	// scheduler looks.
	e.tick(t)
	if n := len(e.scheduledRuns(t, a.ID)); n != 0 {
		t.Fatalf("%d runs before the first occurrence", n)
	}
	clk.Set("2026-03-27T08:00:00Z")
	e.tick(t)
	e.tick(t)
	runs := e.scheduledRuns(t, a.ID)
	if len(runs) != 1 || testenv.Field(runs[0], "invocation_details.invocation_source") != "INVOCATION_SOURCE_SCHEDULE" ||
		testenv.Field(runs[0], "invocation_details.trigger_id") != m["name"] {
		t.Fatalf("runs after the first occurrence: %v", runs)
	}
	clk.Set("2026-03-30T07:00:01Z") // Monday 09:00:01 CEST
	e.tick(t)
	if n := len(e.scheduledRuns(t, a.ID)); n != 2 {
		t.Fatalf("%d runs after Monday's occurrence, want 2", n)
	}
	m = e.API(t, "GET", path, "", 200)
	checkSchema(t, "v1AutomationSchedule", m)
	if got := nextTimes(m); len(got) != 5 || got[0] != "2026-03-31T07:00:00Z" {
		t.Errorf("next_run_times after Monday = %v", got)
	}

	// No server ran from Monday to Friday 09:30: only Friday's occurrence
	// (the latest, 30 minutes late) starts a run.
	clk.Set("2026-04-03T07:30:00Z")
	e.tick(t)
	runs = e.scheduledRuns(t, a.ID)
	if len(runs) != 3 {
		t.Fatalf("%d runs after the missed week, want 3", len(runs))
	}
	r, err := e.Store.GetRunByID(context.Background(), store.LastSegment(fmt.Sprint(runs[2]["name"])))
	if err != nil || r.RequestID != schedule.RequestID(e.Init.WorkspaceID, a.ID, utcTime("2026-04-03T07:00:00Z")) {
		t.Errorf("the caught-up run: %+v %v", r.RequestID, err)
	}

	// Disabled: nothing runs and nothing is shown as next; enabled again,
	// occurrences that passed meanwhile do not run.
	d := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":disableAutomationSchedule", `{}`, 200)
	checkSchema(t, "v1DisableAutomationScheduleResponse", d)
	if testenv.Field(d, "schedule.enabled") != nil || len(nextTimes(d["schedule"].(map[string]any))) != 0 {
		t.Errorf("disabled: %v", d)
	}
	clk.Set("2026-04-06T07:00:00Z")
	e.tick(t)
	clk.Set("2026-04-07T06:00:00Z")
	en := e.API(t, "POST", e.AutomationsPath()+"/"+a.ID+":enableAutomationSchedule", `{}`, 200)
	checkSchema(t, "v1EnableAutomationScheduleResponse", en)
	if got := nextTimes(en["schedule"].(map[string]any)); len(got) == 0 || got[0] != "2026-04-07T07:00:00Z" {
		t.Errorf("enabled: %v", en)
	}
	e.tick(t)
	if n := len(e.scheduledRuns(t, a.ID)); n != 3 {
		t.Fatalf("%d runs after disable/enable, want 3", n)
	}

	// Update: daily at 12:00 UTC, three times.
	u := e.API(t, "PATCH", path, `{"config":{"start":{"start_date":{"year":2026,"month":4,"day":7},"time":{"hours":12}},
		"repeat_interval":{"unit":"FREQUENCY_UNIT_DAY"},"end":{"end_type":"SCHEDULE_END_TYPE_AFTER_OCCURRENCES","max_occurrences":3}}}`, 200)
	checkSchema(t, "v1AutomationSchedule", u)
	if u["remaining_occurrences"] != float64(3) || len(nextTimes(u)) != 3 || u["summary"] != "Every day at 12:00 (UTC), 3 times" {
		t.Errorf("updated: %v", u)
	}
	clk.Set("2026-04-07T12:00:00Z")
	e.tick(t)
	if n := len(e.scheduledRuns(t, a.ID)); n != 4 {
		t.Fatalf("%d runs after the updated schedule's first occurrence, want 4", n)
	}
	if g := e.API(t, "GET", path, "", 200); g["remaining_occurrences"] != float64(2) {
		t.Errorf("remaining after one: %v", g)
	}

	// gRPC: the same service, then delete.
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+e.Init.APIKey))
	cl := platformv1.NewScheduleServiceClient(e.Conn)
	ref := &platformv1.GetAutomationScheduleRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID}
	gs, err := cl.GetAutomationSchedule(ctx, ref)
	if err != nil || gs.GetRemainingOccurrences() != 2 || gs.GetConfig().GetRepeatInterval().GetUnit() != platformv1.FrequencyUnit_FREQUENCY_UNIT_DAY {
		t.Fatalf("gRPC get: %v %v", gs, err)
	}
	if _, err := cl.DeleteAutomationSchedule(ctx, &platformv1.DeleteAutomationScheduleRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID, AutomationId: a.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetAutomationSchedule(ctx, ref); status.Code(err) != codes.NotFound {
		t.Errorf("get after delete: %v", err)
	}
	if m := e.API(t, "DELETE", path, "", 404); testenv.Field(m, "details.0.reason") != "SCHEDULE_NOT_FOUND" {
		t.Errorf("delete twice: %v", m)
	}
	clk.Set("2026-04-08T12:00:00Z")
	e.tick(t)
	if n := len(e.scheduledRuns(t, a.ID)); n != 4 {
		t.Fatalf("%d runs after delete, want 4", n)
	}
}

// TestSchedulesTwoReplicasPostgres: two replicas on one PostgreSQL database
// look at an every-minute schedule at every occurrence, at the same time
// (and their own loops look too); one of them restarts halfway. Each of the
// 60 occurrences starts exactly one run, whose request id is the
// occurrence.
func TestSchedulesTwoReplicasPostgres(t *testing.T) {
	replica := testenv.PGReplica(t)
	clk := &fakeClock{}
	clk.Set("2025-12-31T23:59:30Z")
	withClock := func() app.Config { c := replica(); c.Clock = clk.Now; return c }
	a, stopA := startApp(t, withClock(), app.InitResult{}, "")
	a.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Schedule replicas", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, withClock(), a.Init, a.Email)
	auto := a.MkAutomation(t, "Every minute", "the output x is 1\n", false)
	a.API(t, "POST", a.AutomationsPath()+"/"+auto.ID+"/schedule",
		`{"config":{"start":{"start_date":{"year":2026,"month":1,"day":1}},"repeat_interval":{"unit":"FREQUENCY_UNIT_MINUTE"}}}`, 200)

	first := utcTime("2026-01-01T00:00:00Z")
	const n = 60
	replicas := []*testEnv{a, b}
	for i := range n {
		if i == n/2 { // replica A restarts
			stopA()
			c, _ := startApp(t, withClock(), a.Init, a.Email)
			replicas = []*testEnv{c, b}
		}
		clk.mu.Lock()
		clk.t = first.Add(time.Duration(i) * time.Minute)
		clk.mu.Unlock()
		var wg sync.WaitGroup
		for _, r := range replicas {
			wg.Go(func() {
				if _, err := r.App.Scheduler.Tick(context.Background()); err != nil {
					t.Errorf("tick: %v", err)
				}
			})
		}
		wg.Wait()
	}
	m := b.API(t, "GET", b.AutomationsPath()+"/"+auto.ID+"/runs?page_size=1000", "", 200)
	list, _ := m["runs"].([]any)
	seen := map[string]bool{}
	for _, x := range list {
		r, err := b.Store.GetRunByID(context.Background(), store.LastSegment(fmt.Sprint(x.(map[string]any)["name"])))
		if err != nil {
			t.Fatal(err)
		}
		if seen[r.RequestID] {
			t.Errorf("two runs with request id %s", r.RequestID)
		}
		seen[r.RequestID] = true
	}
	for i := range n {
		if id := schedule.RequestID(a.Init.WorkspaceID, auto.ID, first.Add(time.Duration(i)*time.Minute)); !seen[id] {
			t.Errorf("occurrence %d (%s) started no run", i, id)
		}
	}
	if len(list) != n {
		t.Errorf("%d runs, want %d", len(list), n)
	}
}
