package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// jumpClock advances by a settable step on every call (the counts test
// spreads exceptions over hours, days and months).
type jumpClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func (c *jumpClock) Peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *jumpClock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step = d
}

// testExceptionCounts checks that counts, totals and skips (which stores
// may answer from precomputed counts) equal exact counts of the matching
// rows, for many random filters, as exceptions are created over months,
// change state and are deleted with their workspace.
func testExceptionCounts(t *testing.T, open Opener) {
	t.Run("ExceptionCounts", func(t *testing.T) {
		clock := &jumpClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), step: time.Second}
		s := &suite{st: open(t, store.WithClock(clock.Now)), clock: &Clock{}, ctx: t.Context()}
		rng := rand.New(rand.NewPCG(1, 2))
		autos := []store.Automation{s.automation(t, "inv"), s.automation(t, "pay"), s.automation(t, "zzz")}
		s.ws(t, "acme", "dev", "Dev")
		dev := of(s.st.CreateAutomation(s.ctx, store.Automation{OrganizationID: "acme", WorkspaceID: "dev", ID: "inv",
			DisplayName: "inv", Code: "the output x is 1\n"})).must(t)
		groups := []string{"", "missing_values", "user_system_error", "internal_error"}
		steps := []time.Duration{time.Second, 7 * time.Minute, 59 * time.Minute, time.Hour, 5 * time.Hour, 26 * time.Hour, 31 * 24 * time.Hour}
		model := map[string]store.Exception{}
		var runs []string
		create := func(a store.Automation) {
			clock.set(steps[rng.IntN(len(steps))])
			r, e := s.countsException(t, clock, a, groups[rng.IntN(len(groups))])
			if a.WorkspaceID == "ops" {
				model[e.ID] = e
				runs = append(runs, r.ID)
			}
		}
		for range 120 {
			create(autos[rng.IntN(len(autos))])
			if rng.IntN(6) == 0 {
				create(dev)
			}
		}
		check := func(round string) {
			t.Helper()
			var times []time.Time
			for _, e := range model {
				times = append(times, e.CreateTime)
			}
			for i := range 70 {
				text := randomExcFilter(rng, times, runs, i)
				f, err := sqlfilter.Exceptions.Parse(text)
				if err != nil {
					t.Fatalf("%s: filter %q: %v", round, text, err)
				}
				s.checkExcCounts(t, round+": "+text, f, model)
			}
			s.checkExcCounts(t, round+": no filter", nil, model)
		}
		check("created")

		// Transitions: archive, resolve, unarchive at random.
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range model {
				if !yield(id) {
					return
				}
			}
		})
		for _, id := range ids {
			var e store.Exception
			var err error
			switch rng.IntN(4) {
			case 0:
				e, err = s.st.ArchiveException(s.ctx, "acme", "ops", id, nil)
				if err == nil && rng.IntN(2) == 0 {
					e, err = s.st.UnarchiveException(s.ctx, "acme", "ops", id, nil)
				}
			case 1:
				e, err = s.st.ResolveException(s.ctx, "acme", "ops", id, accept(store.Resolution{Resolver: "users/u1", Data: []byte("d")}))
			default:
				continue
			}
			noErr(t, err)
			model[id] = e
		}
		check("transitioned")

		// Deleting a workspace deletes its exceptions and their counts.
		noErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "dev"))
		s.ws(t, "acme", "dev", "Dev")
		p := of(s.st.CountExceptionsByGroup(s.ctx, store.CountRequest{OrganizationID: "acme", WorkspaceID: "dev"})).must(t)
		if p.TotalCount != 0 || p.TotalKeys != 0 {
			t.Fatalf("recreated workspace counts %+v", p)
		}
		_, total, err := s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "dev", Skip: 3})
		noErr(t, err)
		if total != 0 {
			t.Fatalf("recreated workspace total %d", total)
		}
		check("after delete")
	})
}

// countsException makes a run of a wait for guidance on a new exception in
// group g (as suite.exception, with the jumping clock).
func (s *suite) countsException(t *testing.T, clock *jumpClock, a store.Automation, g string) (store.Run, store.Exception) {
	t.Helper()
	r, _, err := s.st.CreateRun(s.ctx, store.Run{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID,
		Stage: store.StageDraft, StageVersion: a.Version, Steps: []byte("steps")})
	noErr(t, err)
	far := clock.Peek().Add(100000 * time.Hour)
	for {
		claimed := of(s.st.ClaimRuns(s.ctx, "w1", 1000, far)).must(t)
		if len(claimed) == 0 {
			t.Fatalf("run %s was not claimed", r.ID)
		}
		for _, c := range claimed {
			if c.ID != r.ID {
				of(s.st.FinishRun(s.ctx, "w1", c.ID, store.RunOutcome{State: store.RunCompleted, Outputs: []byte("out")})).must(t)
				continue
			}
			w := of(s.st.FinishRun(s.ctx, "w1", r.ID, store.RunOutcome{
				State: store.RunAwaitingGuidance, Description: "x",
				Exception:  &store.Exception{Step: 1, Group: g, Message: "m", State: store.ExceptionPending},
				Checkpoint: []byte("cp"), Step: 1,
			})).must(t)
			return w, of(s.st.GetException(s.ctx, a.OrganizationID, a.WorkspaceID, w.ExceptionID)).must(t)
		}
	}
}

// randomExcFilter makes a filter of up to four operands, mostly ones that
// precomputed counts can answer (state, group, automation, create_time
// ranges), some that they cannot (run, create_time under OR or NOT, !=).
func randomExcFilter(rng *rand.Rand, times []time.Time, runs []string, i int) string {
	states := []string{"PENDING", "RESOLVED", "ARCHIVED"}
	groups := []string{`""`, `"missing_values"`, `"user_system_error"`, `"internal_error"`}
	autos := []string{"inv", "pay", "zzz", "nope"}
	ops := []string{"=", "!=", "<", "<=", ">", ">="}
	ts := func() string {
		t := times[rng.IntN(len(times))]
		switch rng.IntN(5) {
		case 0:
			t = t.Truncate(time.Hour)
		case 1:
			t = t.Add(time.Duration(rng.IntN(3)-1) * time.Microsecond)
		case 2:
			t = t.Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
		case 3:
			t = t.Add(500 * time.Nanosecond)
		}
		return `"` + t.Format(time.RFC3339Nano) + `"`
	}
	term := func() string {
		switch rng.IntN(12) {
		case 0, 1:
			return "state " + []string{"=", "!="}[rng.IntN(2)] + " " + states[rng.IntN(3)]
		case 2:
			return "state " + ops[rng.IntN(len(ops))] + " " + states[rng.IntN(3)]
		case 3:
			return "group " + []string{"=", "!="}[rng.IntN(2)] + " " + groups[rng.IntN(len(groups))]
		case 4:
			return "automation " + []string{"=", "!="}[rng.IntN(2)] + ` "` + autos[rng.IntN(len(autos))] + `"`
		case 5, 6, 7:
			return "create_time " + []string{"<", "<=", ">", ">=", ">=", "<"}[rng.IntN(6)] + " " + ts()
		case 8:
			return "(state = " + states[rng.IntN(3)] + " OR group = " + groups[rng.IntN(len(groups))] + ")"
		case 9:
			return "NOT (automation = \"" + autos[rng.IntN(len(autos))] + "\")"
		case 10:
			if rng.IntN(2) == 0 {
				return `run = "` + runs[rng.IntN(len(runs))] + `"`
			}
			return "create_time " + []string{"=", "!="}[rng.IntN(2)] + " " + ts()
		default:
			return "(create_time < " + ts() + " OR state = " + states[rng.IntN(3)] + ")"
		}
	}
	n := 1 + rng.IntN(4)
	if i%10 == 0 { // a create_time range and nothing else
		return "create_time >= " + ts() + " AND create_time < " + ts()
	}
	parts := make([]string, n)
	for j := range parts {
		parts[j] = term()
	}
	return strings.Join(parts, " AND ")
}

// checkExcCounts compares the store's total, counts and skipped pages for f
// with the exact set of matching ids (ListExceptionIDs: a plain scan).
func (s *suite) checkExcCounts(t *testing.T, what string, f store.Filter, model map[string]store.Exception) {
	t.Helper()
	ids := of(s.st.ListExceptionIDs(s.ctx, "acme", "ops", f, 1_000_000)).must(t)
	byGroup, byAuto := map[string]int{}, map[string]int{}
	for _, id := range ids {
		e, ok := model[id]
		if !ok {
			t.Fatalf("%s: unknown id %s", what, id)
		}
		byGroup[e.Group]++
		byAuto[e.AutomationID]++
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)

	for _, c := range []struct {
		name  string
		want  map[string]int
		count func(context.Context, store.CountRequest) (store.CountPage, error)
	}{
		{"group", byGroup, s.st.CountExceptionsByGroup},
		{"automation", byAuto, s.st.CountExceptionsByAutomation},
	} {
		got := map[string]int{}
		req := store.CountRequest{OrganizationID: "acme", WorkspaceID: "ops", Filter: f, PageSize: 2}
		for {
			p := of(c.count(s.ctx, req)).must(t)
			if p.TotalCount != len(ids) || p.TotalKeys != len(c.want) {
				t.Fatalf("%s: by %s: totals %d keys %d, want %d keys %d", what, c.name, p.TotalCount, p.TotalKeys, len(ids), len(c.want))
			}
			for _, x := range p.Counts {
				got[x.Key] = x.Count
			}
			if p.NextPageToken == "" {
				break
			}
			req.PageToken = p.NextPageToken
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Fatalf("%s: by %s: %v, want %v", what, c.name, got, c.want)
		}
	}

	for _, skip := range []int{0, 1, 3, len(ids) / 2, len(ids) - 1, len(ids), len(ids) + 4} {
		if skip < 0 {
			continue
		}
		p, total, err := s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops",
			Filter: f, Skip: skip, PageSize: 5})
		noErr(t, err)
		if total != len(ids) {
			t.Fatalf("%s: total %d, want %d", what, total, len(ids))
		}
		want := newest[min(skip, len(newest)):min(skip+5, len(newest))]
		if got := excIDList(p.Items); !slices.Equal(got, want) {
			t.Fatalf("%s: skip %d: %v, want %v", what, skip, got, want)
		}
		if p.NextPageToken != "" {
			p2, _, err := s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops",
				Filter: f, Skip: skip, PageSize: 5, PageToken: p.NextPageToken})
			noErr(t, err)
			// The skip is not applied again; the token is bound to it.
			want := newest[min(skip+5, len(newest)):min(skip+10, len(newest))]
			if got := excIDList(p2.Items); !slices.Equal(got, want) {
				t.Fatalf("%s: skip %d, page 2: %v, want %v", what, skip, got, want)
			}
			_, _, err = s.st.ListExceptions(s.ctx, store.ListExceptionsRequest{OrganizationID: "acme", WorkspaceID: "ops",
				Filter: f, Skip: skip + 1, PageSize: 5, PageToken: p.NextPageToken})
			wantErr(t, err, store.ErrInvalidArgument, what+": a token with another skip")
		}
	}
}
