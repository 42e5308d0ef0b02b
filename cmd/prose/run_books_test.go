package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/testenv"
)

// TestRunBooksLikeServer: a program that calls built-in books gives the
// same outputs in `prose run` as on the server, and `prose run --books`
// reads serve's --books file (an external book answers the call).
func TestRunBooksLikeServer(t *testing.T) {
	code := "count the words of \"the quick brown fox\"\nthe output words is the above\n"
	var out, errb bytes.Buffer
	if rc := runCommand(context.Background(), []string{writeProgram(t, code), "--json"}, strings.NewReader(""), &out, &errb); rc != 0 {
		t.Fatalf("prose run: exit %d %s %s", rc, out.String(), errb.String())
	}
	var local struct{ Outputs map[string]json.RawMessage }
	if err := json.Unmarshal(out.Bytes(), &local); err != nil {
		t.Fatal(err)
	}

	e := newTestEnv(t)
	c := client.New(e.Conn)
	ctx := testenv.WithKey(context.Background(), e.Init.APIKey)
	a, err := c.Automations.CreateAutomation(ctx, &platformv1.CreateAutomationRequest{OrganizationId: e.Init.OrganizationID, WorkspaceId: e.Init.WorkspaceID,
		Automation: &platformv1.Automation{DisplayName: "words", EnglishCode: code}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.Invoke(ctx, a.GetName(), nil, client.Draft())
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.WaitForRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	server, err := client.PlainMap(r.GetState().GetCompleted().GetOutputs())
	if err != nil || len(server) == 0 {
		t.Fatalf("server run %s: %v %v", client.StateName(r), r.GetState(), err)
	}
	for k, v := range server {
		if string(local.Outputs[k]) != string(v) {
			t.Errorf("output %q: prose run %s, server %s", k, local.Outputs[k], v)
		}
	}

	// --books: the file of serve's --books.
	book := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Inputs struct{ Ticket string } `json:"inputs"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]string{"stamp": "S:" + req.Inputs.Ticket}})
	}))
	t.Cleanup(book.Close)
	file := writeBookFile(t, names.Workspace("o", "w"), testenv.StampBook(book.URL))
	prog := writeProgram(t, "stamp \"t1\"\nthe output is the above\n")
	out.Reset()
	errb.Reset()
	if rc := runCommand(context.Background(), []string{prog, "--books", file, "--json"}, strings.NewReader(""), &out, &errb); rc != 0 || !strings.Contains(out.String(), `"output":"S:t1"`) {
		t.Fatalf("prose run --books: exit %d %s %s", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := runCommand(context.Background(), []string{prog, "--json"}, strings.NewReader(""), &out, &errb); rc == 0 {
		t.Fatalf("without --books the book call succeeded: %s", out.String())
	}
	if rc := runCommand(context.Background(), []string{prog, "--books", "/nonexistent.json"}, strings.NewReader(""), &out, &errb); rc != exitUsage {
		t.Fatalf("missing --books file: exit %d", rc)
	}
}
