package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"google.golang.org/grpc/metadata"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// waitingRunIn makes automation id (code testenv.ExcMissingCode) in org/ws and runs
// it until it waits for guidance; it returns the run and exception ids.
func (e *testEnv) waitingRunIn(t *testing.T, org, ws, user, id string) (string, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Store.CreateAutomation(ctx, store.Automation{
		OrganizationID: org, WorkspaceID: ws, ID: id, DisplayName: id, Code: testenv.ExcMissingCode, AuthorID: user,
	}); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.App.Engine.Invoke(ctx, engine.InvokeRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: id, Stage: store.StageDraft})
	if err != nil {
		t.Fatal(err)
	}
	var got store.Run
	e.Poll(t, func() (bool, bool, string) {
		got, err = e.Store.GetRun(ctx, org, ws, id, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.State == store.RunAwaitingGuidance && got.ExceptionID != "", got.State.Terminal(),
			fmt.Sprintf("run %s is %s (%s), want awaiting_guidance", r.ID, got.State, got.Description)
	})
	return r.ID, got.ExceptionID
}

// TestFilterResourceNamesMatchWhole: a resource name in a filter matches
// whole — organization, workspace and id — in every field that takes one
// (exceptions: automation, run, group; events: exception), on the lists,
// the counts and the batches, over HTTP and gRPC. Another organization has
// an automation with the same id "x"; its names select nothing here.
func TestFilterResourceNamesMatchWhole(t *testing.T) {
	e := newTestEnv(t)
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	other, err := app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Other", Email: "other-" + store.NewID() + "@example.test", Workspace: "Theirs"})
	if err != nil {
		t.Fatal(err)
	}
	run, exc := e.waitingRunIn(t, org, ws, e.Init.UserID, "x")
	theirRun, theirExc := e.waitingRunIn(t, other.OrganizationID, other.WorkspaceID, other.UserID, "x")
	mine := "organizations/" + org + "/workspaces/" + ws
	theirs := "organizations/" + other.OrganizationID + "/workspaces/" + other.WorkspaceID
	otherWS := "organizations/" + org + "/workspaces/" + e.NewWorkspace(t, "Second")

	base := "/api/v1/" + mine
	auth := map[string]string{"Authorization": "Bearer " + e.Init.APIKey}
	md := metadata.Pairs("authorization", "Bearer "+e.Init.APIKey)
	for _, c := range []struct {
		filter string
		want   int
	}{
		{`automation = "x"`, 1},
		{`automation = "` + mine + `/automations/x"`, 1},
		{`automation = "` + theirs + `/automations/x"`, 0},
		{`automation = "` + otherWS + `/automations/x"`, 0},
		{`automation != "` + theirs + `/automations/x"`, 1},
		{`automation != "` + mine + `/automations/x"`, 0},
		{`run = "` + mine + `/automations/x/runs/` + run + `"`, 1},
		{`run = "` + mine + `/automations/-/runs/` + run + `"`, 1},
		{`run = "` + mine + `/automations/y/runs/` + run + `"`, 0},
		{`run = "` + theirs + `/automations/x/runs/` + run + `"`, 0},
		{`run = "` + theirs + `/automations/x/runs/` + theirRun + `"`, 0},
		{`group = "` + mine + `/exceptionGroups/missing_values"`, 1},
		{`group = "` + theirs + `/exceptionGroups/missing_values"`, 0},
		{`group != "` + theirs + `/exceptionGroups/missing_values"`, 1},
	} {
		t.Run(c.filter+"/http", func(t *testing.T) {
			st, m, raw := e.DoHTTP(t, http.MethodGet, base+"/exceptions?filter="+url.QueryEscape(c.filter), "", auth)
			if st != http.StatusOK || count(m, "exceptions") != c.want {
				t.Errorf("ListExceptions: HTTP %d %s, want %d exceptions", st, raw, c.want)
			}
			st, m, raw = e.DoHTTP(t, http.MethodGet, base+"/exceptions:countByGroup?filter="+url.QueryEscape(c.filter), "", auth)
			got := fmt.Sprint(m["total_exception_count"])
			if got == "<nil>" {
				got = "0" // proto JSON leaves zero out
			}
			if st != http.StatusOK || got != fmt.Sprint(c.want) {
				t.Errorf("CountExceptionsByGroup: HTTP %d %s, want %d", st, raw, c.want)
			}
		})
		t.Run(c.filter+"/grpc", func(t *testing.T) {
			m, err := e.DoGRPC(t, "/prose.platform.v1.ExceptionService/ListExceptions",
				&platformv1.ListExceptionsRequest{OrganizationId: org, WorkspaceId: ws, Filter: c.filter}, md)
			if err != nil || count(m, "exceptions") != c.want {
				t.Errorf("ListExceptions: %v %v, want %d exceptions", m, err, c.want)
			}
		})
	}
	// A batch by another organization's name changes nothing here.
	st, m, raw := e.DoHTTP(t, http.MethodPost, base+"/exceptions:batchArchive", `{"filter":"automation = \"`+theirs+`/automations/x\""}`, auth)
	if st != http.StatusOK || count(m, "exceptions") != 0 {
		t.Errorf("batchArchive by a foreign name: HTTP %d %s", st, raw)
	}
	if x, err := e.Store.GetException(context.Background(), org, ws, exc); err != nil || x.State != store.ExceptionPending {
		t.Errorf("the exception after a foreign batch: %+v %v", x, err)
	}
	if x, err := e.Store.GetException(context.Background(), other.OrganizationID, other.WorkspaceID, theirExc); err != nil || x.State != store.ExceptionPending {
		t.Errorf("the other organization's exception: %+v %v", x, err)
	}

	// Events: the exception field.
	thread := base + "/automations/x/runs/" + run + "/agents/prose/events"
	if st, _, raw := e.DoHTTP(t, http.MethodPost, thread, `{"user_message":{"content":"hello"}}`, auth); st != http.StatusOK {
		t.Fatalf("CreateEvent: HTTP %d %s", st, raw)
	}
	// An event's exception, given by name, must be the run's whole name.
	for _, name := range []string{theirs + "/exceptions/" + exc, otherWS + "/exceptions/" + exc} {
		if st, _, raw := e.DoHTTP(t, http.MethodPost, thread, `{"user_message":{"content":"hi"},"exception":"`+name+`"}`, auth); st != http.StatusBadRequest {
			t.Errorf("CreateEvent with exception %s: HTTP %d %s, want 400", name, st, raw)
		}
	}
	if st, _, raw := e.DoHTTP(t, http.MethodPost, thread, `{"user_message":{"content":"hi"},"exception":"`+mine+`/exceptions/`+exc+`"}`, auth); st != http.StatusOK {
		t.Errorf("CreateEvent with its own exception's name: HTTP %d %s", st, raw)
	}
	for _, c := range []struct {
		filter string
		some   bool
	}{
		{`exception = "` + exc + `"`, true},
		{`exception = "` + mine + `/exceptions/` + exc + `"`, true},
		{`exception = "` + theirs + `/exceptions/` + exc + `"`, false},
		{`exception = "` + otherWS + `/exceptions/` + exc + `"`, false},
	} {
		t.Run(c.filter+"/http", func(t *testing.T) {
			st, m, raw := e.DoHTTP(t, http.MethodGet, thread+"?filter="+url.QueryEscape(c.filter), "", auth)
			if st != http.StatusOK || (count(m, "events") > 0) != c.some {
				t.Errorf("ListEvents: HTTP %d %s, want events: %v", st, raw, c.some)
			}
		})
		t.Run(c.filter+"/grpc", func(t *testing.T) {
			m, err := e.DoGRPC(t, "/prose.platform.v1.EventService/ListEvents", &platformv1.ListEventsRequest{
				OrganizationId: org, WorkspaceId: ws, AutomationId: "x", RunId: run, AgentId: "prose", Filter: c.filter}, md)
			if err != nil || (count(m, "events") > 0) != c.some {
				t.Errorf("ListEvents: %v %v, want events: %v", m, err, c.some)
			}
		})
	}
}
