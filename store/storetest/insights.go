package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// decimal parses an exact decimal.
func decimal(s string) (*apd.Decimal, error) {
	d, _, err := apd.NewFromString(s)
	return d, err
}

// decimalText is the decimal text s in its shortest form ("2.50" → "2.5").
func decimalText(t *testing.T, s string) string {
	t.Helper()
	d := of(decimal(s)).must(t)
	d.Reduce(d)
	return d.Text('f')
}

// testRevisions checks that every save and publish writes a revision,
// listed newest first, filtered by stage and paged, and read by version
// (0: the newest).
func testRevisions(t *testing.T, open Opener) {
	t.Run("AutomationRevisions", func(t *testing.T) {
		s := setup(t, open)
		a := s.automation(t, "inv") // version 1, draft
		a.Code, a.UpdateUserID = "the output x is 2\n", "u2"
		a = of(s.st.UpdateAutomation(s.ctx, a, []string{"code"})).must(t)         // 2
		a = of(s.st.PublishAutomation(s.ctx, "acme", "ops", "inv", "u3")).must(t) // 3
		a.Code, a.DisplayName, a.UpdateUserID = "the output x is 4\n", "Renamed", "u4"
		a = of(s.st.UpdateAutomation(s.ctx, a, nil)).must(t) // 4
		if a.Version != 4 || a.PublishedVersion != 3 {
			t.Fatalf("versions: %d, published %d", a.Version, a.PublishedVersion)
		}
		list := func(filter string, size int, token string) store.Page[store.AutomationRevision] {
			t.Helper()
			req := store.ListAutomationRevisionsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv", PageSize: size, PageToken: token}
			if filter != "" {
				req.Filter = of(sqlfilter.AutomationRevisions.Parse(filter)).must(t)
			}
			return of(s.st.ListAutomationRevisions(s.ctx, req)).must(t)
		}
		versions := func(p store.Page[store.AutomationRevision]) []int64 {
			var out []int64
			for _, v := range p.Items {
				out = append(out, v.Version)
			}
			return out
		}
		all := list("", 0, "")
		if got := versions(all); !slices.Equal(got, []int64{4, 3, 2, 1}) || all.NextPageToken != "" {
			t.Fatalf("revisions = %v (token %q), want 4 3 2 1", got, all.NextPageToken)
		}
		want := []struct {
			stage       store.Stage
			code, user  string
			displayName string
		}{
			{store.StageDraft, "the output x is 4\n", "u4", "Renamed"},
			{store.StagePublished, "the output x is 2\n", "u3", "Automation inv"},
			{store.StageDraft, "the output x is 2\n", "u2", "Automation inv"},
			{store.StageDraft, "the output x is 1\n", "u1", "Automation inv"},
		}
		for i, v := range all.Items {
			w := want[i]
			if v.Stage != w.stage || v.Code != w.code || v.UserID != w.user || v.DisplayName != w.displayName || string(v.Details) != "\x01\x02" || v.CreateTime.IsZero() {
				t.Errorf("revision %d = %+v, want %+v", v.Version, v, w)
			}
		}
		if got := versions(list(`stage = "PUBLISHED"`, 0, "")); !slices.Equal(got, []int64{3}) {
			t.Errorf("published revisions = %v", got)
		}
		if got := versions(list(`stage = DRAFT`, 0, "")); !slices.Equal(got, []int64{4, 2, 1}) {
			t.Errorf("draft revisions = %v", got)
		}
		p1 := list("", 3, "")
		p2 := list("", 3, p1.NextPageToken)
		if !slices.Equal(versions(p1), []int64{4, 3, 2}) || !slices.Equal(versions(p2), []int64{1}) || p2.NextPageToken != "" {
			t.Errorf("pages: %v then %v", versions(p1), versions(p2))
		}
		_, err := s.st.ListAutomationRevisions(s.ctx, store.ListAutomationRevisionsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "inv",
			PageSize: 3, PageToken: p1.NextPageToken, Filter: of(sqlfilter.AutomationRevisions.Parse(`stage = DRAFT`)).must(t)})
		wantErr(t, err, store.ErrInvalidArgument, "token with another filter")
		_, err = s.st.ListAutomationRevisions(s.ctx, store.ListAutomationRevisionsRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "nope"})
		wantErr(t, err, store.ErrNotFound, "revisions of an unknown automation")

		if v := of(s.st.GetAutomationRevision(s.ctx, "acme", "ops", "inv", 0)).must(t); v.Version != 4 {
			t.Errorf("latest = %d", v.Version)
		}
		if v := of(s.st.GetAutomationRevision(s.ctx, "acme", "ops", "inv", 3)).must(t); v.Stage != store.StagePublished || v.Code != "the output x is 2\n" {
			t.Errorf("revision 3 = %+v", v)
		}
		_, err = s.st.GetAutomationRevision(s.ctx, "acme", "ops", "inv", 9)
		wantErr(t, err, store.ErrNotFound, "revision 9")
		_, err = s.st.GetAutomationRevision(s.ctx, "acme", "ops", "nope", 0)
		wantErr(t, err, store.ErrNotFound, "latest revision of an unknown automation")
		// A failed save writes no revision.
		_, err = s.st.UpdateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "ops", ID: "inv"}, []string{"bogus"})
		wantErr(t, err, store.ErrInvalidArgument, "bad mask")
		if got := versions(list("", 0, "")); len(got) != 4 {
			t.Errorf("after a failed save: %v", got)
		}
	})
}

// aggRun is the model of one run for testRunAggregates.
type aggRun struct {
	ws, auto string
	created  time.Time
	state    store.RunState
	guided   bool
}

// testRunAggregates drives runs through their states (completed
// straight through, completed after a person's or an agent's guidance,
// completed after a guide entry's, failed, waiting, abandoned, paused and
// continued) over weeks, and checks that the maintained counts of random
// periods (edges in several time zones) equal counts of the model, per
// workspace and per automation, with and without an automation filter;
// then deletes a workspace.
func testRunAggregates(t *testing.T, open Opener) {
	t.Run("RunAggregates", func(t *testing.T) {
		clock := &jumpClock{t: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), step: time.Second}
		s := &suite{st: open(t, store.WithClock(clock.Now)), clock: &Clock{}, ctx: t.Context()}
		rng := rand.New(rand.NewPCG(3, 4))
		autos := []store.Automation{s.automation(t, "inv"), s.automation(t, "pay")}
		s.ws(t, "acme", "dev", "Dev")
		autos = append(autos, of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "dev", ID: "inv",
			DisplayName: "inv", Code: "the output x is 1\n"})).must(t))
		steps := []time.Duration{time.Second, 13 * time.Minute, 59 * time.Minute, time.Hour, 7 * time.Hour, 26 * time.Hour}
		model := map[string]*aggRun{}
		far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
		claim := func(id string) {
			t.Helper()
			c := of(s.st.ClaimRuns(s.ctx, "w1", 10, far)).must(t)
			if len(c) != 1 || c[0].ID != id {
				t.Fatalf("claimed %d runs, want run %s", len(c), id)
			}
		}
		finish := func(id string, st store.RunState) store.Run {
			t.Helper()
			o := store.RunOutcome{State: st, Outputs: []byte("out"), ErrorID: "e", Description: "d"}
			if st == store.RunAwaitingGuidance {
				o.Exception = &store.Exception{Step: 1, Message: "m", State: store.ExceptionPending}
				o.Checkpoint = []byte("cp")
			}
			return of(s.st.FinishRun(s.ctx, "w1", id, o)).must(t)
		}
		resolve := func(r store.Run, resolver string) {
			t.Helper()
			of(s.st.ResolveException(s.ctx, r.OrganizationID, r.WorkspaceID, r.ExceptionID, accept(store.Resolution{Resolver: resolver, Data: []byte("g")}))).must(t)
		}
		// Estimates (the value kept in the rollups, migration 00032): set
		// before the runs, changed in their middle and after them; every
		// completed run is valued by its automation's estimate now.
		estimates := map[string]store.AutomationEstimate{}
		setEstimates := func(ws string, es ...store.AutomationEstimate) {
			t.Helper()
			of(s.st.SetAutomationEstimates(s.ctx, "acme", ws, es)).must(t)
			for _, e := range es {
				estimates[ws+"/"+e.AutomationID] = e
			}
		}
		setEstimates("ops", store.AutomationEstimate{AutomationID: "inv", CostUSD: "1.25", TimeSavedSecs: 60},
			store.AutomationEstimate{AutomationID: "pay", CostUSD: "0.333", TimeSavedSecs: 7})
		for i := range 150 {
			if i == 75 {
				setEstimates("ops", store.AutomationEstimate{AutomationID: "inv", CostUSD: "2.5", TimeSavedSecs: 30})
				setEstimates("dev", store.AutomationEstimate{AutomationID: "inv", CostUSD: "10", TimeSavedSecs: 1})
			}
			clock.set(steps[rng.IntN(len(steps))])
			a := autos[rng.IntN(len(autos))]
			r := s.run(t, a, "")
			m := &aggRun{ws: a.WorkspaceID, auto: a.ID, created: r.CreateTime, state: store.RunPending}
			model[r.ID] = m
			clock.set(time.Second)
			switch rng.IntN(9) {
			case 0: // paused before it starts
				of(s.st.ChangeRun(s.ctx, r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID, pause("hold"))).must(t)
				m.state = store.RunStopped
			case 1, 2:
				claim(r.ID)
				finish(r.ID, store.RunCompleted)
				m.state = store.RunCompleted
			case 3:
				claim(r.ID)
				finish(r.ID, store.RunFailed)
				m.state = store.RunFailed
			case 4:
				claim(r.ID)
				finish(r.ID, store.RunAwaitingGuidance)
				m.state = store.RunAwaitingGuidance
			case 5, 6: // guided by a person, an agent or a guide entry, then completed
				claim(r.ID)
				w := finish(r.ID, store.RunAwaitingGuidance)
				resolver := []string{"users/u1", "agents/a1", "guideEntries/g1"}[rng.IntN(3)]
				resolve(w, resolver)
				claim(r.ID)
				finish(r.ID, store.RunCompleted)
				m.state, m.guided = store.RunCompleted, store.HumanGuidance(resolver)
			case 7: // abandoned: archived exception, run stopped
				claim(r.ID)
				w := finish(r.ID, store.RunAwaitingGuidance)
				of(s.st.ArchiveException(s.ctx, w.OrganizationID, w.WorkspaceID, w.ExceptionID, nil)).must(t)
				m.state = store.RunStopped
			case 8: // paused while waiting, continued (waits again), resolved by a person while stopped, continued, completed
				claim(r.ID)
				w := finish(r.ID, store.RunAwaitingGuidance)
				of(s.st.ChangeRun(s.ctx, w.OrganizationID, w.WorkspaceID, w.AutomationID, w.ID, pause("hold"))).must(t)
				of(s.st.ChangeRun(s.ctx, w.OrganizationID, w.WorkspaceID, w.AutomationID, w.ID, resume)).must(t)
				of(s.st.ChangeRun(s.ctx, w.OrganizationID, w.WorkspaceID, w.AutomationID, w.ID, pause("hold"))).must(t)
				resolve(w, "users/u2")
				c := of(s.st.ChangeRun(s.ctx, w.OrganizationID, w.WorkspaceID, w.AutomationID, w.ID, resume)).must(t)
				if c.State != store.RunPending {
					t.Fatalf("continued after guidance: %s", c.State)
				}
				claim(r.ID)
				finish(r.ID, store.RunCompleted)
				m.state, m.guided = store.RunCompleted, true
			}
		}
		// Batches of creates (CreateRuns, as the engine's creator writes
		// them): runs of several automations and workspaces created
		// together, completed or failed at creation (none left pending for
		// the claims below), and a request id used again (its run is not
		// created twice).
		valued := 0
		for round := range 3 {
			clock.set(steps[rng.IntN(len(steps))])
			var in []store.Run
			for i := range 7 {
				a := autos[rng.IntN(len(autos))]
				r := store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, Stage: store.StageDraft,
					StageVersion: a.Version, Steps: []byte("steps"), RequestID: fmt.Sprintf("batch-%d-%d", round, i%6)}
				r.State, r.Outputs, r.Step = store.RunCompleted, []byte("out"), 1
				if rng.IntN(3) == 0 {
					r.State, r.Outputs, r.Step, r.ErrorID, r.Description = store.RunFailed, nil, 0, "e", "d"
				}
				if i == 6 {
					r.OrganizationID, r.WorkspaceID, r.AutomationID, r.StageVersion = in[0].OrganizationID, in[0].WorkspaceID, in[0].AutomationID, in[0].StageVersion
				}
				in = append(in, r)
			}
			runs, created, errs, err := s.st.CreateRuns(s.ctx, in)
			noErr(t, err)
			for i, r := range runs {
				noErr(t, errs[i])
				if created[i] != (i < 6) {
					t.Fatalf("batch run %d: created %v", i, created[i])
				}
				if created[i] {
					model[r.ID] = &aggRun{ws: r.WorkspaceID, auto: r.AutomationID, created: r.CreateTime, state: r.State}
					if _, ok := estimates[r.WorkspaceID+"/"+r.AutomationID]; ok && r.State == store.RunCompleted {
						valued++
					}
				}
			}
		}
		// The value of runs created completed is kept as they are
		// created (SQLite: countCreatedRuns, migration 00033).
		if valued == 0 {
			t.Fatal("no run of the batches was created completed with an estimate")
		}
		var times []time.Time
		for _, m := range model {
			times = append(times, m.created)
		}
		zones := []*time.Location{time.UTC, time.FixedZone("minus5", -5*3600), time.FixedZone("plus9", 9*3600)}
		// counted reports whether a run created at ct counts in [start, end):
		// its hour starts inside the range.
		counted := func(ct time.Time, p store.TimeRange) bool {
			h := ct.Truncate(time.Hour)
			return (p.Start.IsZero() || !h.Before(p.Start)) && (p.End.IsZero() || h.Before(p.End))
		}
		check := func(round string) {
			t.Helper()
			for i := range 40 {
				// Days in a zone (midnight to midnight), arbitrary instants, or all time.
				var periods []store.TimeRange
				switch i % 4 {
				case 0:
					periods = []store.TimeRange{{}}
				case 1, 2:
					z := zones[rng.IntN(len(zones))]
					t0 := times[rng.IntN(len(times))].In(z)
					day := time.Date(t0.Year(), t0.Month(), t0.Day(), 0, 0, 0, 0, z)
					n := 1 + rng.IntN(10)
					for d := range n {
						periods = append(periods, store.TimeRange{Start: day.AddDate(0, 0, d), End: day.AddDate(0, 0, d+1)})
					}
				case 3:
					t0, t1 := times[rng.IntN(len(times))], times[rng.IntN(len(times))]
					if t1.Before(t0) {
						t0, t1 = t1, t0
					}
					periods = []store.TimeRange{{Start: t0.Add(-time.Duration(rng.IntN(3600)) * time.Second), End: t1}}
				}
				var filter []string
				if rng.IntN(3) == 0 {
					filter = []string{"pay"}
				}
				byAuto := rng.IntN(2) == 0
				req := store.RunAggregatesRequest{OrganizationID: "acme", WorkspaceIDs: []string{"ops", "dev"}, AutomationIDs: filter,
					Periods: periods, ByAutomation: byAuto}
				got := map[string]store.RunCounts{}
				gotValue, wantValue := map[string]string{}, map[string]string{}
				for _, g := range of(s.st.SumRunAggregates(s.ctx, req)).must(t) {
					k := fmt.Sprintf("%s/%s/%d", g.WorkspaceID, g.AutomationID, g.Period)
					got[k] = g.Counts
					if filter == nil && !byAuto {
						gotValue[k] = fmt.Sprintf("%s usd %d s", decimalText(t, g.SavedUSD), g.SavedSecs)
					} else if g.SavedUSD != "" || g.SavedSecs != 0 {
						t.Fatalf("%s: query %d: value %q %d in counts per automation", round, i, g.SavedUSD, g.SavedSecs)
					}
				}
				want := map[string]store.RunCounts{}
				type value struct {
					usd  apd.Decimal
					secs int64
				}
				values := map[string]*value{}
				for _, m := range model {
					if filter != nil && !slices.Contains(filter, m.auto) {
						continue
					}
					for pi, p := range periods {
						if !counted(m.created, p) {
							continue
						}
						auto := ""
						if byAuto {
							auto = m.auto
						}
						k := fmt.Sprintf("%s/%s/%d", m.ws, auto, pi)
						c := want[k]
						c.Runs++
						switch m.state {
						case store.RunCompleted:
							c.Completed++
							if m.guided {
								c.GuidedCompleted++
							}
							if e, ok := estimates[m.ws+"/"+m.auto]; ok && filter == nil && !byAuto {
								if values[k] == nil {
									values[k] = &value{}
								}
								_, _ = apd.BaseContext.WithPrecision(60).Add(&values[k].usd, &values[k].usd, of(decimal(e.CostUSD)).must(t))
								values[k].secs += int64(e.TimeSavedSecs)
							}
						case store.RunFailed:
							c.Failed++
						case store.RunAwaitingGuidance:
							c.Awaiting++
						}
						want[k] = c
					}
				}
				if filter == nil && !byAuto {
					for k := range want {
						v := values[k]
						if v == nil {
							v = &value{}
						}
						wantValue[k] = fmt.Sprintf("%s usd %d s", decimalText(t, v.usd.Text('f')), v.secs)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotValue) != fmt.Sprint(wantValue) {
					t.Fatalf("%s: query %d (%+v):\n got %v %v\nwant %v %v", round, i, req, got, gotValue, want, wantValue)
				}
			}
		}
		check("after the runs")

		// Runs still waiting: resolved by a person and completed.
		for id, m := range model {
			if m.state != store.RunAwaitingGuidance || m.ws != "ops" {
				continue
			}
			r := of(s.st.GetRunByID(s.ctx, id)).must(t)
			resolve(r, "users/u1")
			claim(id)
			finish(id, store.RunCompleted)
			m.state, m.guided = store.RunCompleted, true
		}
		check("after resolving the waiting runs")

		// Estimates changed, added and removed (its automation deleted)
		// after the runs: the completed runs re-valued.
		setEstimates("ops", store.AutomationEstimate{AutomationID: "inv", CostUSD: "0.1", TimeSavedSecs: 600},
			store.AutomationEstimate{AutomationID: "pay", CostUSD: "0.333", TimeSavedSecs: 8})
		check("after changing the estimates")

		// The set-based rebuild of the bulk loads keeps what the triggers keep.
		if rb, ok := s.st.(interface{ RebuildRunAggregates(context.Context) error }); ok {
			noErr(t, rb.RebuildRunAggregates(s.ctx))
			check("after rebuilding the aggregates")
		} else {
			t.Errorf("%T has no RebuildRunAggregates", s.st)
		}

		noErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "dev"))
		for id, m := range model {
			if m.ws == "dev" {
				delete(model, id)
			}
		}
		check("after deleting a workspace")

		// Requests the store refuses.
		_, err := s.st.SumRunAggregates(s.ctx, store.RunAggregatesRequest{OrganizationID: "acme", Periods: []store.TimeRange{{}}})
		wantErr(t, err, store.ErrInvalidArgument, "no workspace")
		t0 := times[0]
		_, err = s.st.SumRunAggregates(s.ctx, store.RunAggregatesRequest{OrganizationID: "acme", WorkspaceIDs: []string{"ops"},
			Periods: []store.TimeRange{{Start: t0, End: t0.Add(2 * time.Hour)}, {Start: t0.Add(time.Hour), End: t0.Add(3 * time.Hour)}}})
		wantErr(t, err, store.ErrInvalidArgument, "overlapping periods")
		_, err = s.st.SumRunAggregates(s.ctx, store.RunAggregatesRequest{OrganizationID: "acme", WorkspaceIDs: []string{"ops"},
			Periods: []store.TimeRange{{Start: t0, End: t0.Add(-time.Hour)}}})
		wantErr(t, err, store.ErrInvalidArgument, "a period ending before it starts")
		many := make([]store.TimeRange, store.MaxAggregatePeriods+1)
		for i := range many {
			many[i] = store.TimeRange{Start: t0.Add(time.Duration(i) * time.Hour), End: t0.Add(time.Duration(i+1) * time.Hour)}
		}
		_, err = s.st.SumRunAggregates(s.ctx, store.RunAggregatesRequest{OrganizationID: "acme", WorkspaceIDs: []string{"ops"}, Periods: many})
		wantErr(t, err, store.ErrInvalidArgument, "too many periods")
	})
	t.Run("AutomationEstimates", func(t *testing.T) {
		s := setup(t, open)
		s.automation(t, "inv")
		s.automation(t, "pay")
		s.ws(t, "acme", "dev", "Dev")
		of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "dev", ID: "inv", DisplayName: "inv"})).must(t)
		if got := of(s.st.ListAutomationEstimates(s.ctx, "acme", []string{"ops"})).must(t); len(got) != 0 {
			t.Fatalf("estimates before any: %v", got)
		}
		got := of(s.st.SetAutomationEstimates(s.ctx, "acme", "ops", []store.AutomationEstimate{
			{AutomationID: "pay", CostUSD: "0.10", TimeSavedSecs: 30},
			{AutomationID: "inv", CostUSD: "12.345", TimeSavedSecs: 600},
		})).must(t)
		str := func(es []store.AutomationEstimate) string {
			var out string
			for _, e := range es {
				out += e.WorkspaceID + "/" + e.AutomationID + "=" + e.CostUSD + "," + strconv.Itoa(int(e.TimeSavedSecs)) + " "
			}
			return out
		}
		if str(got) != "ops/inv=12.345,600 ops/pay=0.10,30 " {
			t.Errorf("set: %s", str(got))
		}
		got = of(s.st.SetAutomationEstimates(s.ctx, "acme", "ops", []store.AutomationEstimate{{AutomationID: "pay", CostUSD: "1", TimeSavedSecs: 5}})).must(t)
		if str(got) != "ops/inv=12.345,600 ops/pay=1,5 " {
			t.Errorf("replaced: %s", str(got))
		}
		of(s.st.SetAutomationEstimates(s.ctx, "acme", "dev", []store.AutomationEstimate{{AutomationID: "inv", CostUSD: "2", TimeSavedSecs: 7}})).must(t)
		if got := str(of(s.st.ListAutomationEstimates(s.ctx, "acme", []string{"ops", "dev"})).must(t)); got != "dev/inv=2,7 ops/inv=12.345,600 ops/pay=1,5 " {
			t.Errorf("listed: %s", got)
		}
		_, err := s.st.SetAutomationEstimates(s.ctx, "acme", "dev", []store.AutomationEstimate{{AutomationID: "pay", CostUSD: "1"}})
		wantErr(t, err, store.ErrNotFound, "estimate of an automation of another workspace")
		_, err = s.st.SetAutomationEstimates(s.ctx, "acme", "nope", nil)
		wantErr(t, err, store.ErrNotFound, "estimates of an unknown workspace")
		if got := str(of(s.st.ListAutomationEstimates(s.ctx, "acme", []string{"dev"})).must(t)); got != "dev/inv=2,7 " {
			t.Errorf("a refused set changed estimates: %s", got)
		}
	})
}
