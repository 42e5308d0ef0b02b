package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// testEvents runs the conversation event cases.
func testEvents(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"EventCreateGetUpdate", testEventCreateGetUpdate},
		{"ListEvents", testListEvents},
		{"EventsSince", testEventsSince},
		{"EventConcurrentCreate", testEventConcurrentCreate},
		{"EventOffsets", testEventOffsets},
		{"EventConcurrentOffsets", testEventConcurrentOffsets},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

func (s *suite) thread(t *testing.T, automation, agent string) store.Thread {
	t.Helper()
	a := s.automation(t, automation)
	r := s.run(t, a, "")
	return store.Thread{OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, AutomationID: a.ID, RunID: r.ID, AgentID: agent}
}

func testEventCreateGetUpdate(t *testing.T, s *suite) {
	th := s.thread(t, "a1", "prose")
	e := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, ExceptionID: "x1", Payload: []byte("p1")})).must(t)
	if e.ID == "" || e.State != store.EventComplete || e.Seq != 1 || e.Revision != 1 || e.CreateTime.IsZero() || !e.CreateTime.Equal(e.UpdateTime) {
		t.Fatalf("created: %+v", e)
	}
	got := of(s.st.GetEvent(s.ctx, th, e.ID)).must(t)
	if got.ID != e.ID || string(got.Payload) != "p1" || got.ExceptionID != "x1" || !got.CreateTime.Equal(e.CreateTime) || got.Thread != th {
		t.Fatalf("get: %+v", got)
	}
	// Complete events never change.
	_, err := s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: e.ID, State: store.EventComplete, Payload: []byte("x")})
	wantErr(t, err, store.ErrFailedPrecondition, "update a complete event")

	// streaming → streaming → complete.
	st := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, ID: "ev2", State: store.EventStreaming, Payload: []byte("a")})).must(t)
	if st.Seq != 2 || st.State != store.EventStreaming {
		t.Fatalf("streaming: %+v", st)
	}
	u := of(s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: "ev2", State: store.EventStreaming, Payload: []byte("ab")})).must(t)
	if u.Revision != 2 || !u.UpdateTime.After(st.UpdateTime) || u.Seq != 2 {
		t.Fatalf("update: %+v", u)
	}
	u = of(s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: "ev2", State: store.EventComplete, Payload: []byte("abc"), ExceptionID: "x2"})).must(t)
	got = of(s.st.GetEvent(s.ctx, th, "ev2")).must(t)
	if got.Revision != 3 || got.State != store.EventComplete || string(got.Payload) != "abc" || got.ExceptionID != "x2" || !got.UpdateTime.Equal(u.UpdateTime) {
		t.Fatalf("after complete: %+v", got)
	}
	_, err = s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: "ev2", State: store.EventStreaming})
	wantErr(t, err, store.ErrFailedPrecondition, "update after complete")

	// Errors.
	_, err = s.st.CreateEvent(s.ctx, store.Event{Thread: th, ID: "ev2"})
	wantErr(t, err, store.ErrAlreadyExists, "duplicate id")
	_, err = s.st.CreateEvent(s.ctx, store.Event{Thread: th, State: "DONE"})
	wantErr(t, err, store.ErrInvalidArgument, "bad state")
	other := th
	other.AutomationID = "nope"
	_, err = s.st.CreateEvent(s.ctx, store.Event{Thread: other})
	wantErr(t, err, store.ErrNotFound, "run of another automation")
	other = th
	other.RunID = "nope"
	_, err = s.st.CreateEvent(s.ctx, store.Event{Thread: other})
	wantErr(t, err, store.ErrNotFound, "unknown run")
	_, err = s.st.GetEvent(s.ctx, th, "nope")
	wantErr(t, err, store.ErrNotFound, "get unknown")
	other = th
	other.AgentID = "another"
	_, err = s.st.GetEvent(s.ctx, other, e.ID)
	wantErr(t, err, store.ErrNotFound, "get from another thread")
	_, err = s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: "nope", State: store.EventComplete})
	wantErr(t, err, store.ErrNotFound, "update unknown")
	// No writer may store an event over the ceiling.
	huge := make([]byte, store.MaxStoredEventBytes+1)
	_, err = s.st.CreateEvent(s.ctx, store.Event{Thread: th, Payload: huge})
	wantErr(t, err, store.ErrInvalidArgument, "create over the ceiling")
	open := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, State: store.EventStreaming})).must(t)
	_, err = s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: open.ID, State: store.EventComplete, Payload: huge})
	wantErr(t, err, store.ErrInvalidArgument, "update over the ceiling")
	if got := of(s.st.GetEvent(s.ctx, th, open.ID)).must(t); len(got.Payload) != 0 || got.State != store.EventStreaming {
		t.Errorf("an update over the ceiling changed the event: %d bytes, %s", len(got.Payload), got.State)
	}
}

func testListEvents(t *testing.T, s *suite) {
	th := s.thread(t, "a1", "prose")
	other := th
	other.AgentID = "other"
	noErr(t, of(s.st.CreateEvent(s.ctx, store.Event{Thread: other})).err)
	var made []string
	for i := range 7 {
		x := []string{"x1", "x2", ""}[i%3]
		e := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, ExceptionID: x, Payload: []byte{byte(i)}})).must(t)
		made = append(made, e.ID)
	}
	list := func(filter string, size int) ([]string, int) {
		t.Helper()
		f, err := sqlfilter.Events.Parse(filter)
		noErr(t, err)
		total := -1
		items, _ := all(t, size, func(token string) (store.Page[store.Event], error) {
			p, n, err := s.st.ListEvents(s.ctx, store.ListEventsRequest{Thread: th, Filter: f, PageSize: size, PageToken: token})
			if total >= 0 && n != total {
				t.Fatalf("total changed between pages: %d, %d", total, n)
			}
			total = n
			return p, err
		})
		return ids(items, func(e store.Event) string { return e.ID }), total
	}
	for _, tc := range []struct {
		filter string
		want   []int
	}{
		{"", []int{0, 1, 2, 3, 4, 5, 6}},
		{`exception = "x1"`, []int{0, 3, 6}},
		{`exception = "organizations/` + th.OrganizationID + `/workspaces/` + th.WorkspaceID + `/exceptions/x2"`, []int{1, 4}},
		// A resource name matches whole: another workspace's x2 is not this one.
		{`exception = "organizations/` + th.OrganizationID + `/workspaces/elsewhere/exceptions/x2"`, nil},
		{`exception = "organizations/other/workspaces/` + th.WorkspaceID + `/exceptions/x2"`, nil},
		{`exception != "organizations/other/workspaces/` + th.WorkspaceID + `/exceptions/x1"`, []int{0, 1, 2, 3, 4, 5, 6}},
		{`exception != "x1"`, []int{1, 2, 4, 5}},
		{`exception = ""`, []int{2, 5}},
		{`exception = "x1" OR exception = "x2"`, []int{0, 1, 3, 4, 6}},
		{`NOT exception = "x1" AND exception != ""`, []int{1, 4}},
		{`(exception = "x1" OR exception = "x2") AND NOT (exception = "x2")`, []int{0, 3, 6}},
	} {
		var want []string
		for _, i := range tc.want {
			want = append(want, made[i])
		}
		for _, size := range []int{1, 2, 50} {
			got, total := list(tc.filter, size)
			if !slices.Equal(got, want) || total != len(want) {
				t.Errorf("filter %q size %d: %v (total %d), want %v", tc.filter, size, got, total, want)
			}
		}
	}
	// A token is bound to its request.
	p, _, err := s.st.ListEvents(s.ctx, store.ListEventsRequest{Thread: th, PageSize: 2})
	noErr(t, err)
	_, _, err = s.st.ListEvents(s.ctx, store.ListEventsRequest{Thread: other, PageSize: 2, PageToken: p.NextPageToken})
	wantErr(t, err, store.ErrInvalidArgument, "token of another thread")
	_, _, err = s.st.ListEvents(s.ctx, store.ListEventsRequest{Thread: th, PageSize: 2, PageToken: "garbage"})
	wantErr(t, err, store.ErrInvalidArgument, "bad token")
	// An unknown thread is empty.
	unknown := th
	unknown.RunID = "nope"
	p, n, err := s.st.ListEvents(s.ctx, store.ListEventsRequest{Thread: unknown})
	if err != nil || len(p.Items) != 0 || n != 0 {
		t.Fatalf("unknown thread: %v %d %v", p.Items, n, err)
	}
}

func testEventsSince(t *testing.T, s *suite) {
	th := s.thread(t, "a1", "prose")
	a := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th})).must(t)
	b := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, State: store.EventStreaming})).must(t)
	c := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th})).must(t)
	got := of(s.st.ListEventsSince(s.ctx, th, b.CreateTime)).must(t)
	if !slices.Equal(ids(got, func(e store.Event) string { return e.ID }), []string{b.ID, c.ID}) {
		t.Fatalf("since b: %v", got)
	}
	// Changing b brings it back after c's time, still in sequence order.
	u := of(s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: b.ID, State: store.EventComplete})).must(t)
	got = of(s.st.ListEventsSince(s.ctx, th, u.UpdateTime)).must(t)
	if len(got) != 1 || got[0].ID != b.ID || got[0].Revision != 2 {
		t.Fatalf("since update: %+v", got)
	}
	all := of(s.st.ListEventsSince(s.ctx, th, a.CreateTime.AddDate(-1, 0, 0))).must(t)
	if len(all) != 3 || all[0].ID != a.ID {
		t.Fatalf("all: %+v", all)
	}
}

func testEventConcurrentCreate(t *testing.T, s *suite) {
	th := s.thread(t, "a1", "prose")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := s.st.CreateEvent(s.ctx, store.Event{Thread: th, Payload: []byte(fmt.Sprint(i))})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, err)
	}
	got := of(s.st.ListEventsSince(s.ctx, th, storeEpoch())).must(t)
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Fatalf("sequence %d at %d", e.Seq, i)
		}
	}
	if len(got) != n {
		t.Fatalf("%d events, want %d", len(got), n)
	}
}

func storeEpoch() time.Time { return Epoch.AddDate(-1, 0, 0) }

// testEventOffsets: every write takes the thread's next offset, and
// ListEventsAfter reads just what changed after an offset, each event once
// as it stands, in offset order, a page at a time.
func testEventOffsets(t *testing.T, s *suite) {
	th := s.thread(t, "a1", "prose")
	other := s.thread(t, "a2", "prose")
	a := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, Payload: []byte("a")})).must(t)
	b := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, State: store.EventStreaming, Payload: []byte("b")})).must(t)
	o := of(s.st.CreateEvent(s.ctx, store.Event{Thread: other})).must(t)
	if a.Offset != 1 || b.Offset != 2 || o.Offset != 1 {
		t.Fatalf("offsets of creates: %d %d, other thread %d", a.Offset, b.Offset, o.Offset)
	}
	u := of(s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: b.ID, State: store.EventStreaming, Payload: []byte("bb")})).must(t)
	c := of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, Payload: []byte("c")})).must(t)
	u2 := of(s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: b.ID, State: store.EventComplete, Payload: []byte("bbb")})).must(t)
	if u.Offset != 3 || c.Offset != 4 || u2.Offset != 5 {
		t.Fatalf("offsets of updates: %d %d %d", u.Offset, c.Offset, u2.Offset)
	}
	if got := of(s.st.GetEvent(s.ctx, th, b.ID)).must(t); got.Offset != 5 {
		t.Fatalf("get: offset %d", got.Offset)
	}
	desc := func(evs []store.Event) []string {
		return ids(evs, func(e store.Event) string { return fmt.Sprintf("%s@%d:%s", e.ID, e.Offset, e.Payload) })
	}
	all := of(s.st.ListEventsAfter(s.ctx, th, 0, 0)).must(t)
	want := []string{a.ID + "@1:a", c.ID + "@4:c", b.ID + "@5:bbb"}
	if got := desc(all); !slices.Equal(got, want) {
		t.Fatalf("after 0: %v, want %v", got, want)
	}
	if got := desc(of(s.st.ListEventsAfter(s.ctx, th, 3, 0)).must(t)); !slices.Equal(got, want[1:]) {
		t.Fatalf("after 3: %v", got)
	}
	if got := desc(of(s.st.ListEventsAfter(s.ctx, th, 1, 1)).must(t)); !slices.Equal(got, want[1:2]) {
		t.Fatalf("after 1, one: %v", got)
	}
	if got := of(s.st.ListEventsAfter(s.ctx, th, 5, 0)).must(t); len(got) != 0 {
		t.Fatalf("after the last: %v", desc(got))
	}
	if got := of(s.st.ListEventsAfter(s.ctx, store.Thread{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "a1", RunID: "nope", AgentID: "prose"}, 0, 0)).must(t); len(got) != 0 {
		t.Fatalf("unknown thread: %v", desc(got))
	}
}

// testEventConcurrentOffsets writes one thread from many goroutines: the
// offsets are 1…n without gaps or repeats.
func testEventConcurrentOffsets(t *testing.T, s *suite) {
	th := s.thread(t, "a1", "prose")
	const n = 10
	streaming := make([]store.Event, n)
	for i := range streaming {
		streaming[i] = of(s.st.CreateEvent(s.ctx, store.Event{Thread: th, State: store.EventStreaming})).must(t)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := s.st.UpdateEvent(s.ctx, store.Event{Thread: th, ID: streaming[i].ID, State: store.EventComplete}); err != nil {
				t.Errorf("update: %v", err)
			}
		})
		wg.Go(func() {
			if _, err := s.st.CreateEvent(s.ctx, store.Event{Thread: th}); err != nil {
				t.Errorf("create: %v", err)
			}
		})
	}
	wg.Wait()
	all := of(s.st.ListEventsAfter(s.ctx, th, 0, 1000)).must(t)
	if len(all) != 2*n {
		t.Fatalf("%d events, want %d", len(all), 2*n)
	}
	for i, e := range all {
		if e.Offset != int64(n+i+1) {
			t.Fatalf("event %d has offset %d, want %d", i, e.Offset, n+i+1)
		}
	}
}
