package names_test

import (
	"testing"

	"github.com/proserun/prose/internal/names"
)

func TestBuild(t *testing.T) {
	for got, want := range map[string]string{
		names.Organization("o"):                   "organizations/o",
		names.Workspace("o", "w"):                 "organizations/o/workspaces/w",
		names.WorkspaceUser("o", "w", "u"):        "organizations/o/workspaces/w/users/u",
		names.Automation("o", "w", "a"):           "organizations/o/workspaces/w/automations/a",
		names.Run("o", "w", "a", "-"):             "organizations/o/workspaces/w/automations/a/runs/-",
		names.Agent("o", "w", "a", "r", "g"):      "organizations/o/workspaces/w/automations/a/runs/r/agents/g",
		names.Event("o", "w", "a", "r", "g", "e"): "organizations/o/workspaces/w/automations/a/runs/r/agents/g/events/e",
		names.Exception("o", "w", "x"):            "organizations/o/workspaces/w/exceptions/x",
		names.APIKey("o", "k"):                    "organizations/o/apiKeys/k",
		names.File("o", "f"):                      "organizations/o/files/f",
		names.User("u"):                           "users/u",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestParse(t *testing.T) {
	if u, ok := names.ParseUser("users/ann"); !ok || u != "ann" {
		t.Errorf("ParseUser = %q %v", u, ok)
	}
	for _, bad := range []string{"", "users/", "users/a/b", "people/a", "ann"} {
		if _, ok := names.ParseUser(bad); ok {
			t.Errorf("ParseUser(%q) accepted", bad)
		}
	}
	if o, w, ok := names.ParseWorkspace("organizations/o/workspaces/w"); !ok || o != "o" || w != "w" {
		t.Errorf("ParseWorkspace = %q %q %v", o, w, ok)
	}
	for _, bad := range []string{"organizations/o", "organizations/o/workspaces/w/x", "orgs/o/workspaces/w", "organizations/o/workspaces"} {
		if _, _, ok := names.ParseWorkspace(bad); ok {
			t.Errorf("ParseWorkspace(%q) accepted", bad)
		}
	}
	if o, w, a, r, ok := names.ParseRun("organizations/o/workspaces/w/automations/a/runs/r"); !ok || o+w+a+r != "owar" {
		t.Errorf("ParseRun = %q %q %q %q %v", o, w, a, r, ok)
	}
	if _, _, _, _, ok := names.ParseRun("organizations/o/workspaces/w/exceptions/x"); ok {
		t.Error("ParseRun accepted an exception name")
	}
	if o, w, ok := names.ParseWorkspace("organizations//workspaces/w"); !ok || o != "" || w != "w" {
		t.Errorf("ParseWorkspace with an empty id = %q %q %v, want the shape accepted", o, w, ok)
	}
	if o, f, ok := names.ParseFile("organizations/o/files/f"); !ok || o != "o" || f != "f" {
		t.Errorf("ParseFile = %q %q %v", o, f, ok)
	}
	if _, _, ok := names.ParseFile("organizations/o/apiKeys/f"); ok {
		t.Error("ParseFile accepted an API key name")
	}
	for in, want := range map[string]string{"a": "a", "users/a": "a", "organizations/o/files/f": "f", "x/": ""} {
		if got := names.ID(in); got != want {
			t.Errorf("ID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string]string{"awaiting_guidance": "Awaiting guidance", "AWAITING_GUIDANCE": "Awaiting guidance",
		"Resolved": "Resolved", "missing_values": "Missing values", "": ""} {
		if got := names.Words(in); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}
