package storetest

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// testTriggers runs the trigger cases.
func testTriggers(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"TriggerInstances", testTriggerInstances},
		{"AutomationTriggers", testAutomationTriggers},
		{"TriggerInstanceLimit", testTriggerInstanceLimit},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

// testTriggerInstanceLimit: a workspace has at most
// MaxTriggerInstancesPerWorkspace trigger instances; another workspace is
// not counted; deleting one frees a place.
func testTriggerInstanceLimit(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	mk := func(ws, id string) (store.TriggerInstance, error) {
		return s.st.CreateTriggerInstance(s.ctx, store.TriggerInstance{OrganizationID: "acme", WorkspaceID: ws, ID: id,
			BookName: "webhook", BookVersion: "1", ConnectionID: "c", TriggerID: "webhook", Secret: "s"})
	}
	for i := range store.MaxTriggerInstancesPerWorkspace {
		of(mk("w1", "t"+strconv.Itoa(i))).must(t)
	}
	_, err := mk("w1", "over")
	wantErr(t, err, store.ErrResourceExhausted, "one trigger instance over the limit")
	of(mk("w2", "t0")).must(t)
	noErr(t, s.st.DeleteTriggerInstance(s.ctx, "acme", "w1", "c", "t0"))
	of(mk("w1", "again")).must(t)
}

func testTriggerInstances(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	mk := func(id, book, conn, trig string) store.TriggerInstance {
		return of(s.st.CreateTriggerInstance(s.ctx, store.TriggerInstance{OrganizationID: "acme", WorkspaceID: "ops", ID: id, Name: "n " + id,
			BookName: book, BookVersion: "1", ConnectionID: conn, TriggerID: trig, Configuration: []byte{1, 0, 2}, Secret: "s-" + id})).must(t)
	}
	w1 := mk("w1", "webhook", "c1", "webhook")
	mk("w2", "webhook", "c2", "webhook")
	mk("n1", "nats", "c1", "message")
	g := of(s.st.GetTriggerInstance(s.ctx, "acme", "ops", "w1")).must(t)
	if g.Secret != "s-w1" || g.BookName != "webhook" || string(g.Configuration) != "\x01\x00\x02" || len(g.AutomationIDs) != 0 ||
		!g.CreateTime.Equal(w1.CreateTime) {
		t.Errorf("get: %+v", g)
	}
	_, err := s.st.CreateTriggerInstance(s.ctx, store.TriggerInstance{OrganizationID: "acme", WorkspaceID: "ops", ID: "w1", BookName: "webhook", ConnectionID: "c"})
	wantErr(t, err, store.ErrAlreadyExists, "duplicate id")
	_, err = s.st.CreateTriggerInstance(s.ctx, store.TriggerInstance{OrganizationID: "acme", WorkspaceID: "nope", BookName: "webhook", ConnectionID: "c"})
	wantErr(t, err, store.ErrNotFound, "unknown workspace")
	gen := of(s.st.CreateTriggerInstance(s.ctx, store.TriggerInstance{OrganizationID: "acme", WorkspaceID: "ops", BookName: "webhook", ConnectionID: "c3"})).must(t)
	if gen.ID == "" {
		t.Error("no id generated")
	}

	u := of(s.st.SetTriggerInstanceAutomations(s.ctx, "acme", "ops", "w1", []string{a.ID, "other"})).must(t)
	if !slices.Equal(u.AutomationIDs, []string{a.ID, "other"}) || u.Secret != "s-w1" {
		t.Errorf("set automations: %+v", u)
	}
	_, err = s.st.SetTriggerInstanceAutomations(s.ctx, "acme", "ops", "nope", nil)
	wantErr(t, err, store.ErrNotFound, "set automations of an unknown instance")

	ids := func(f store.Filter) []string {
		var out []string
		for _, x := range of(s.st.ListTriggerInstances(s.ctx, "acme", "ops", f)).must(t) {
			out = append(out, x.ID)
		}
		return out
	}
	if got := ids(nil); len(got) != 4 || !slices.IsSorted(got) {
		t.Errorf("list all = %v", got)
	}
	for _, tc := range []struct {
		filter string
		want   []string
	}{
		{`book_name = "webhook" AND connection_id = "c1"`, []string{"w1"}},
		{`trigger_id = "message"`, []string{"n1"}},
		{`book_name != "webhook"`, []string{"n1"}},
	} {
		f, err := sqlfilter.TriggerInstances.Parse(tc.filter)
		noErr(t, err)
		if got := ids(f); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.filter, got, tc.want)
		}
	}
	_, err = s.st.ListTriggerInstances(s.ctx, "acme", "ops", store.Cond{Field: "secret", Op: store.OpEq, Value: "x"})
	wantErr(t, err, store.ErrInvalidArgument, "a field the list does not have")

	var nats []string
	for _, x := range of(s.st.ListTriggerInstancesOfBooks(s.ctx, []string{"nats", "mqtt"})).must(t) {
		nats = append(nats, x.ID)
	}
	if !slices.Equal(nats, []string{"n1"}) {
		t.Errorf("instances of nats and mqtt = %v", nats)
	}
	wantErr(t, s.st.DeleteTriggerInstance(s.ctx, "acme", "ops", "c2", "w1"), store.ErrNotFound, "delete from another connection")
	noErr(t, s.st.DeleteTriggerInstance(s.ctx, "acme", "ops", "c1", "w1"))
	_, err = s.st.GetTriggerInstance(s.ctx, "acme", "ops", "w1")
	wantErr(t, err, store.ErrNotFound, "get deleted")
}

func testAutomationTriggers(t *testing.T, s *suite) {
	a := s.automation(t, "a1")
	put := func(trig string, active bool, m map[string]string) store.AutomationTrigger {
		return of(s.st.PutAutomationTrigger(s.ctx, store.AutomationTrigger{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID,
			TriggerID: trig, InputMapping: m, PhaseType: 2, PhaseSubType: 3, IsActive: active})).must(t)
	}
	first := put("t1", true, map[string]string{"amount": "/order/total"})
	if first.PhaseType != 2 || first.PhaseSubType != 3 || !first.IsActive || first.InputMapping["amount"] != "/order/total" {
		t.Errorf("put: %+v", first)
	}
	// Put again replaces.
	again := put("t1", false, map[string]string{"x": ""})
	if again.IsActive || !maps.Equal(again.InputMapping, map[string]string{"x": ""}) {
		t.Errorf("replaced: %+v", again)
	}
	for i := 2; i <= 5; i++ {
		put("t"+string(rune('0'+i)), i%2 == 0, nil)
	}
	g := of(s.st.GetAutomationTrigger(s.ctx, "acme", "ops", a.ID, "t2")).must(t)
	if !g.IsActive || g.InputMapping == nil {
		t.Errorf("get: %+v", g)
	}
	_, err := s.st.GetAutomationTrigger(s.ctx, "acme", "ops", a.ID, "nope")
	wantErr(t, err, store.ErrNotFound, "get unknown")
	_, err = s.st.PutAutomationTrigger(s.ctx, store.AutomationTrigger{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: "nope", TriggerID: "t"})
	wantErr(t, err, store.ErrNotFound, "trigger of an unknown automation")

	// Pages of 2, by trigger id.
	var got []string
	tok := ""
	for range 10 {
		p := of(s.st.ListAutomationTriggers(s.ctx, store.ListAutomationTriggersRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID,
			PageSize: 2, PageToken: tok})).must(t)
		if len(p.Items) > 2 {
			t.Fatalf("page of %d", len(p.Items))
		}
		for _, x := range p.Items {
			got = append(got, x.TriggerID)
		}
		if tok = p.NextPageToken; tok == "" {
			break
		}
	}
	if !slices.Equal(got, []string{"t1", "t2", "t3", "t4", "t5"}) {
		t.Errorf("pages = %v", got)
	}
	f, err := sqlfilter.AutomationTriggers.Parse(`is_active = true`)
	noErr(t, err)
	p := of(s.st.ListAutomationTriggers(s.ctx, store.ListAutomationTriggersRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, Filter: f})).must(t)
	var active []string
	for _, x := range p.Items {
		active = append(active, x.TriggerID)
	}
	if !slices.Equal(active, []string{"t2", "t4"}) {
		t.Errorf("active = %v", active)
	}
	f, err = sqlfilter.AutomationTriggers.Parse(`is_active != true AND trigger_id != "t1"`)
	noErr(t, err)
	p = of(s.st.ListAutomationTriggers(s.ctx, store.ListAutomationTriggersRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, Filter: f})).must(t)
	if len(p.Items) != 2 || p.Items[0].TriggerID != "t3" {
		t.Errorf("inactive but t1 = %+v", p.Items)
	}
	// A token reused with another filter.
	p1 := of(s.st.ListAutomationTriggers(s.ctx, store.ListAutomationTriggersRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, PageSize: 1})).must(t)
	_, err = s.st.ListAutomationTriggers(s.ctx, store.ListAutomationTriggersRequest{OrganizationID: "acme", WorkspaceID: "ops", AutomationID: a.ID, PageSize: 1,
		PageToken: p1.NextPageToken, Filter: f})
	wantErr(t, err, store.ErrInvalidArgument, "token of another filter")
}
