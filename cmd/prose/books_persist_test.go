package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

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
func startApp(t *testing.T, cfg serveConfig, init initResult, email string) (e *testEnv, stop func()) {
	t.Helper()
	a, err := newApp(context.Background(), cfg, slogDiscard(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e = &testEnv{app: a, st: a.store, init: init, email: email}
	e.srv = httptest.NewServer(a.http)
	stop = sync.OnceFunc(func() { e.srv.Close(); a.Close() })
	t.Cleanup(stop)
	return e, stop
}

func (e *testEnv) booksPath() string {
	return "/api/v1/organizations/" + e.init.orgID + "/workspaces/" + e.init.workspaceID + "/books"
}

// registerStampBook registers the stamp book (at endpoint, version v) over HTTP.
func (e *testEnv) registerStampBook(t *testing.T, endpoint, version string) {
	t.Helper()
	b := stampBook(endpoint)
	b.Version = version
	raw, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	e.api(t, "POST", e.booksPath(), string(raw), 200)
}

// hasBook reports whether the workspace's book list has name and version.
func (e *testEnv) hasBook(t *testing.T, name, version string) bool {
	t.Helper()
	m := e.api(t, "GET", e.booksPath()+"?page_size=1000", "", 200)
	list, _ := m["books"].([]any)
	for _, b := range list {
		if field(b, "name") == name && field(b, "version") == version {
			return true
		}
	}
	return false
}

// runStamp runs automation and checks the book answered.
func (e *testEnv) runStamp(t *testing.T, automation, key string) {
	t.Helper()
	m := e.api(t, "POST", e.automationsPath()+"/"+automation+":invoke",
		`{"stage":"AUTOMATION_STAGE_PUBLISHED","inputs":{"key":{"text":`+jsonStr(key)+`}}}`, 200)
	r := e.waitRun(t, automation, fmt.Sprint(m["run_id"]), "completed")
	if got := field(r, "state.completed.outputs.output a.text"); got != "S:"+key+"/1" {
		t.Errorf("output a = %v, want %q", got, "S:"+key+"/1")
	}
}

// TestWorkspaceBooksSurviveRestart registers a book over HTTP, closes the
// app and opens a new one on the same data directory (or database): the
// book is still listed and runs call it.
func TestWorkspaceBooksSurviveRestart(t *testing.T) {
	book := stampServer(t)
	cfg := testServeConfig(t)
	first, closeFirst := startApp(t, cfg, initResult{}, "")
	first.email = "owner-" + store.NewID() + "@example.test"
	var err error
	first.init, err = bootstrap(context.Background(), first.st, initOptions{organization: "Books org", email: first.email, workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	first.registerStampBook(t, book.URL, "1.0.0")
	a := first.mkAutomation(t, "Stamper", stampCode, true)
	first.runStamp(t, a.id, "before")
	closeFirst()

	second, _ := startApp(t, cfg, first.init, first.email)
	if !second.hasBook(t, "test.stamps", "1.0.0") {
		t.Fatal("the registered book is not listed after the restart")
	}
	second.api(t, "GET", second.booksPath()+"/test.stamps/1.0.0/procedures", "", 200)
	second.runStamp(t, a.id, "after")
	// Deleting it is kept too.
	second.api(t, "DELETE", second.booksPath()+"/test.stamps/1.0.0", "", 200)
	if second.hasBook(t, "test.stamps", "1.0.0") {
		t.Error("the deleted book is still listed")
	}
}

// TestWorkspaceBooksAcrossReplicas runs two apps on one PostgreSQL database
// (each with its own connections): a book registered on either is listed
// and called by runs on the other.
func TestWorkspaceBooksAcrossReplicas(t *testing.T) {
	replica := pgReplica(t)
	book := stampServer(t)
	a, _ := startApp(t, replica(), initResult{}, "")
	a.email = "owner-" + store.NewID() + "@example.test"
	var err error
	a.init, err = bootstrap(context.Background(), a.st, initOptions{organization: "Replicas org", email: a.email, workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, replica(), a.init, a.email)

	a.registerStampBook(t, book.URL, "1.0.0")
	if !b.hasBook(t, "test.stamps", "1.0.0") {
		t.Fatal("replica B does not list the book registered on A")
	}
	auto := b.mkAutomation(t, "Stamper", stampCode, true)
	b.runStamp(t, auto.id, "on-b")

	b.registerStampBook(t, book.URL, "2.0.0")
	if !a.hasBook(t, "test.stamps", "2.0.0") {
		t.Fatal("replica A does not list the book registered on B")
	}
	a.runStamp(t, auto.id, "on-a")

	a.api(t, "DELETE", a.booksPath()+"/test.stamps/2.0.0", "", 200)
	if b.hasBook(t, "test.stamps", "2.0.0") {
		t.Error("replica B still lists the book deleted on A")
	}
}
