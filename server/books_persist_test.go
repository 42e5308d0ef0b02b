package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// The program of the book tests: one call of the stamp book.
const stampCode = "the alpha is the key + \"/1\"\nstamp the alpha\nthe output a is the above\n"

// stampServer is an external book answering the stamp procedure with
// "S:" + the ticket.
func stampServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Inputs struct {
				Ticket string `json:"ticket"`
			} `json:"inputs"`
		}
		if r.URL.Path != "/procedures/stamp:call" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad call", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]string{"stamp": "S:" + req.Inputs.Ticket}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startApp starts an app on cfg for the organization of init (made by an
// earlier app on the same store). stop stops it; it is also called at
// cleanup.
func startApp(t *testing.T, cfg app.Config, init app.InitResult, email string) (*testEnv, func()) {
	t.Helper()
	e, stop := testenv.StartApp(t, cfg, init, email)
	return &testEnv{e}, stop
}

func (e *testEnv) booksPath() string {
	return "/api/v1/organizations/" + e.Init.OrganizationID + "/workspaces/" + e.Init.WorkspaceID + "/books"
}

// registerStampBook registers the stamp book (at endpoint, version v) over HTTP.
func (e *testEnv) registerStampBook(t *testing.T, endpoint, version string) {
	t.Helper()
	b := testenv.StampBook(endpoint)
	b.Version = version
	raw, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	e.API(t, "POST", e.booksPath(), string(raw), 200)
}

// hasBook reports whether the workspace's book list has name and version.
func (e *testEnv) hasBook(t *testing.T, name, version string) bool {
	t.Helper()
	m := e.API(t, "GET", e.booksPath()+"?page_size=1000", "", 200)
	list, _ := m["books"].([]any)
	for _, b := range list {
		if testenv.Field(b, "name") == name && testenv.Field(b, "version") == version {
			return true
		}
	}
	return false
}

// runStamp runs automation and checks the book answered.
func (e *testEnv) runStamp(t *testing.T, automation, key string) {
	t.Helper()
	m := e.API(t, "POST", e.AutomationsPath()+"/"+automation+":invoke",
		`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"key":{"text":`+testenv.JSONStr(key)+`}}}`, 200)
	r := e.WaitRun(t, automation, fmt.Sprint(m["run_id"]), "completed")
	if got := testenv.Field(r, "state.completed.outputs.output a.text"); got != "S:"+key+"/1" {
		t.Errorf("output a = %v, want %q", got, "S:"+key+"/1")
	}
}

// TestWorkspaceBooksSurviveRestart registers a book over HTTP, closes the
// app and opens a new one on the same data directory (or database): the
// book is still listed and runs call it.
func TestWorkspaceBooksSurviveRestart(t *testing.T) {
	book := stampServer(t)
	cfg := testenv.Config(t)
	first, closeFirst := startApp(t, cfg, app.InitResult{}, "")
	first.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	first.Init, err = app.Bootstrap(context.Background(), first.Store, app.InitOptions{Organization: "Books org", Email: first.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	first.registerStampBook(t, book.URL, "1.0.0")
	a := first.MkAutomation(t, "Stamper", stampCode, true)
	first.runStamp(t, a.ID, "before")
	closeFirst()

	second, _ := startApp(t, cfg, first.Init, first.Email)
	if !second.hasBook(t, "test.stamps", "1.0.0") {
		t.Fatal("the registered book is not listed after the restart")
	}
	second.API(t, "GET", second.booksPath()+"/test.stamps/1.0.0/procedures", "", 200)
	second.runStamp(t, a.ID, "after")
	// Deleting it is kept too.
	second.API(t, "DELETE", second.booksPath()+"/test.stamps/1.0.0", "", 200)
	if second.hasBook(t, "test.stamps", "1.0.0") {
		t.Error("the deleted book is still listed")
	}
}

// TestWorkspaceBooksAcrossReplicas runs two apps on one PostgreSQL database
// (each with its own connections): a book registered on either is listed
// and called by runs on the other.
func TestWorkspaceBooksAcrossReplicas(t *testing.T) {
	replica := testenv.PGReplica(t)
	book := stampServer(t)
	a, _ := startApp(t, replica(), app.InitResult{}, "")
	a.Email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.Init, err = app.Bootstrap(context.Background(), a.Store, app.InitOptions{Organization: "Replicas org", Email: a.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, replica(), a.Init, a.Email)

	a.registerStampBook(t, book.URL, "1.0.0")
	if !b.hasBook(t, "test.stamps", "1.0.0") {
		t.Fatal("replica B does not list the book registered on A")
	}
	auto := b.MkAutomation(t, "Stamper", stampCode, true)
	b.runStamp(t, auto.ID, "on-b")

	b.registerStampBook(t, book.URL, "2.0.0")
	if !a.hasBook(t, "test.stamps", "2.0.0") {
		t.Fatal("replica A does not list the book registered on B")
	}
	a.runStamp(t, auto.ID, "on-a")

	a.API(t, "DELETE", a.booksPath()+"/test.stamps/2.0.0", "", 200)
	if b.hasBook(t, "test.stamps", "2.0.0") {
		t.Error("replica B still lists the book deleted on A")
	}
}
