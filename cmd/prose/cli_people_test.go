package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"google.golang.org/genproto/googleapis/type/date"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// The CLI as a person uses it (issue 28): values as people write them,
// one vocabulary for states, titles and people instead of ids, and the
// commands a person reaches for (cancel, delete, auth status, logout,
// profiles, --watch, --jq, "did you mean").

// TestCLIPlainValues: -o json and -o yaml print values as people write
// them (120.50 keeps its digits), --raw prints the API's Value messages,
// --jq filters the output.
func TestCLIPlainValues(t *testing.T) {
	e := newTestEnv(t)
	addr := serveTCP(t, e)
	c := newCLI(t, "PROSE_ADDRESS="+addr, "PROSE_API_KEY="+e.Init.APIKey)
	c.must(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Invoices", "--id", "invoices", "--publish")

	out := c.must(0, "automations", "invoke", "Invoices", "--input", "invoice_total=120.50", "--wait", "-o", "json")
	if !strings.Contains(out, `"output due":128.9350`) || !strings.Contains(out, `"invoice_total":120.50`) || strings.Contains(out, `"number"`) {
		t.Fatalf("-o json is not plain:\n%s", out)
	}
	var run map[string]any
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("-o json: %v", err)
	}
	name := run["name"].(string)

	if out := c.must(0, "runs", "get", name, "-o", "yaml"); !strings.Contains(out, "output due: 128.9350\n") || !strings.Contains(out, "output approval: manager\n") {
		t.Fatalf("-o yaml:\n%s", out)
	}
	if out := c.must(0, "runs", "get", name, "--raw", "--jq", `.state.completed.outputs["output due"]`); !strings.Contains(out, `"number"`) || !strings.Contains(out, `"lo":1289350`) {
		t.Fatalf("--raw keeps the API's Value:\n%s", out)
	}
	if out := c.must(0, "runs", "get", name, "--jq", `.state.completed.outputs["output approval"]`); out != "manager\n" {
		t.Fatalf("--jq prints a text bare: %q", out)
	}
	if out := c.must(0, "runs", "list", "--jq", ".runs | length"); out != "1\n" {
		t.Fatalf("--jq .runs | length: %q", out)
	}
	if code, _, errb := c.run("runs", "list", "--jq", ".runs["); code != exitUsage || !strings.Contains(errb, "--jq") {
		t.Fatalf("a bad --jq: exit %d %s", code, errb)
	}
}

// TestCLIStatesAndNames: states in words, filters in any case, shortcut
// flags, automations by title and people by name.
func TestCLIStatesAndNames(t *testing.T) {
	e := newTestEnv(t)
	addr := serveTCP(t, e)
	c := newCLI(t, "PROSE_ADDRESS="+addr, "PROSE_API_KEY="+e.Init.APIKey)
	c.must(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Monthly invoices", "--id", "invoices", "--publish")
	c.must(0, "automations", "invoke", "monthly INVOICES", "--input", "invoice_total=120.50", "--wait")
	c.must(exitAwaiting, "automations", "invoke", "Monthly invoices", "--wait")

	for _, f := range []string{"state = pending", "state = PENDING", `state = "Pending"`} {
		m := c.json(0, "exceptions", "list", "--filter", f)
		if n := listLen(m, "exceptions"); n != 1 {
			t.Errorf("exceptions --filter %q: %d exceptions, want 1", f, n)
		}
	}
	for _, args := range [][]string{
		{"--state", "pending", "--automation", "Monthly invoices"},
		{"--state", "PENDING", "--automation", "invoices"},
		{"--assignee", "none"},
	} {
		if n := listLen(c.json(0, append([]string{"exceptions", "list"}, args...)...), "exceptions"); n != 1 {
			t.Errorf("exceptions list %v: %d, want 1", args, n)
		}
	}
	if n := listLen(c.json(0, "exceptions", "list", "--state", "resolved"), "exceptions"); n != 0 {
		t.Errorf("resolved exceptions: %d, want 0", n)
	}
	for _, args := range [][]string{
		{"--state", "completed"}, {"--state", "COMPLETED"}, {"--filter", "state = Completed"},
		{"--state", "Awaiting guidance"}, {"--state", "awaiting_guidance", "--automation", "monthly invoices"},
	} {
		if n := listLen(c.json(0, append([]string{"runs", "list"}, args...)...), "runs"); n != 1 {
			t.Errorf("runs list %v: %d runs, want 1", args, n)
		}
	}

	// Tables name the automation by its title and the state in words.
	out := c.must(0, "runs", "list", "--state", "awaiting guidance")
	if !strings.Contains(out, "Monthly invoices") || !strings.Contains(out, "Awaiting guidance") || strings.Contains(out, "awaiting_guidance") {
		t.Fatalf("runs list:\n%s", out)
	}
	// Runs by number beside their id.
	if !regexp.MustCompile(`(?m)^[a-z2-7]{20} +#[0-9]+ +Monthly invoices `).MatchString(out) {
		t.Errorf("runs list shows no run number:\n%s", out)
	}
	if out := c.must(0, "exceptions", "list", "--state", "pending"); !regexp.MustCompile(`(?m) [a-z2-7]{20} +#[0-9]+ `).MatchString(out) {
		t.Errorf("exceptions list shows no run number:\n%s", out)
	}
	exc := c.json(0, "exceptions", "list", "--state", "pending")["exceptions"].([]any)[0].(map[string]any)["name"].(string)
	who := c.json(0, "auth", "status")["person"].(string)
	if who == "" || strings.HasPrefix(who, "users/") {
		t.Fatalf("auth status names nobody: %q", who)
	}
	pendingRun := c.json(0, "exceptions", "list", "--state", "pending")["exceptions"].([]any)[0].(map[string]any)["run"].(string)
	if out := c.must(exitAwaiting, "runs", "get", pendingRun); !strings.Contains(out, "invoked by: "+who) || !strings.Contains(out, "automation: Monthly invoices") || !regexp.MustCompile(`number: +#[0-9]+\n`).MatchString(out) {
		t.Fatalf("runs get names no people:\n%s", out)
	}
	// A run by its number in its automation, as the tables show it.
	number := c.json(exitAwaiting, "runs", "get", pendingRun)["run_number"].(string)
	for _, ref := range []string{"Monthly invoices #" + number, "invoices#" + number, "#" + number} {
		if got := c.json(exitAwaiting, "runs", "get", ref)["name"]; got != pendingRun {
			t.Errorf("runs get %q: %v, want %s", ref, got, pendingRun)
		}
	}
	if code, _, errb := c.run("runs", "get", "Monthly invoices #999"); code != exitNotFound || !strings.Contains(errb, "no run Monthly invoices #999") {
		t.Errorf("runs get of a number no run has: exit %d %s", code, errb)
	}
	// Assign by the person's name; tables show the name, not users/….
	c.must(0, "exceptions", "assign", exc, "--to", who)
	out = c.must(0, "exceptions", "list", "--assignee", who)
	if !strings.Contains(out, who) || !strings.Contains(out, "Pending") || !strings.Contains(out, "Monthly invoices") || strings.Contains(out, "users/") {
		t.Fatalf("exceptions list --assignee:\n%s", out)
	}
	if out := c.must(0, "exceptions", "get", exc); !strings.Contains(out, "assignee:") || !strings.Contains(out, who) || strings.Contains(out, "users/") {
		t.Fatalf("exceptions get:\n%s", out)
	}
	// Two automations with one title: the title is ambiguous, the ids are not.
	c.must(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Monthly invoices", "--id", "invoices2", "--publish")
	if code, _, errb := c.run("automations", "get", "Monthly invoices"); code != exitUsage || !strings.Contains(errb, "invoices2") {
		t.Fatalf("an ambiguous title: exit %d %s", code, errb)
	}
	c.must(0, "automations", "get", "invoices2")
	// #N alone is ambiguous once two automations have a run N.
	c.must(exitAwaiting, "automations", "invoke", "invoices2", "--wait")
	if code, _, errb := c.run("runs", "get", "#1"); code != exitUsage || !strings.Contains(errb, `"Monthly invoices #1"`) || !strings.Contains(errb, "name one") {
		t.Errorf("runs get #1 of two automations: exit %d %s", code, errb)
	}
	if code, _, errb := c.run("automations", "get", "No such title"); code != exitNotFound {
		t.Fatalf("an unknown title: exit %d %s", code, errb)
	}
}

// TestCLIPersonCommands: runs cancel, automations delete, --watch, and
// the "did you mean" of a mistyped command.
func TestCLIPersonCommands(t *testing.T) {
	e := newTestEnv(t)
	addr := serveTCP(t, e)
	c := newCLI(t, "PROSE_ADDRESS="+addr, "PROSE_API_KEY="+e.Init.APIKey)
	c.must(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Invoices", "--id", "invoices", "--publish")
	c.must(exitAwaiting, "automations", "invoke", "Invoices", "--wait")
	run := c.json(0, "runs", "list")["runs"].([]any)[0].(map[string]any)["name"].(string)

	// runs get --watch follows to a settled state and exits as runs get.
	if code, out, _ := c.run("runs", "get", run, "--watch"); code != exitAwaiting || !strings.Contains(out, "Awaiting guidance") {
		t.Fatalf("runs get --watch: exit %d\n%s", code, out)
	}
	// archive abandons the run (stopped); unarchive makes it wait again.
	if out := c.must(0, "exceptions", "list", "--state", "pending"); !regexp.MustCompile(`(?m) [a-z2-7]{20} +#[0-9]+ `).MatchString(out) {
		t.Errorf("exceptions list shows no run number:\n%s", out)
	}
	exc := c.json(0, "exceptions", "list", "--state", "pending")["exceptions"].([]any)[0].(map[string]any)["name"].(string)
	if out := c.must(0, "exceptions", "archive", exc); !strings.Contains(out, "Archived") {
		t.Fatalf("exceptions archive:\n%s", out)
	}
	if out, _ := c.json(exitFailed, "runs", "get", run)["state"].(map[string]any); out["stopped"] == nil {
		t.Fatalf("the run of an archived exception: %v", out)
	}
	if out := c.must(0, "exceptions", "unarchive", exc); !strings.Contains(out, "Pending") {
		t.Fatalf("exceptions unarchive:\n%s", out)
	}
	c.must(exitAwaiting, "runs", "get", run)
	if out := c.must(0, "runs", "cancel", run); !strings.Contains(out, "Stopped") {
		t.Fatalf("runs cancel: %s", out)
	}
	r := c.json(exitFailed, "runs", "get", run)
	if reason := r["state"].(map[string]any)["stopped"].(map[string]any)["reason"]; reason != cancelReason {
		t.Fatalf("cancelled run: %v", r)
	}

	// delete asks first: no answer, nothing deleted.
	if code, _, errb := c.run("automations", "delete", "Invoices"); code != exitFailed || !strings.Contains(errb, "not deleted") {
		t.Fatalf("delete without --yes: exit %d %s", code, errb)
	}
	c.must(0, "automations", "get", "invoices")
	if out := c.must(0, "automations", "delete", "Invoices", "--yes"); !strings.Contains(out, "deleted Invoices") {
		t.Fatalf("delete: %s", out)
	}
	// The API's delete is soft: unlisted, not invocable, still readable.
	if n := listLen(c.json(0, "automations", "list"), "automations"); n != 0 {
		t.Fatalf("deleted automation still listed: %d", n)
	}
	if n := listLen(c.json(0, "automations", "list", "--deleted"), "automations"); n != 1 {
		t.Fatalf("automations list --deleted: %d", n)
	}
	if code, _, _ := c.run("automations", "invoke", "invoices"); code == 0 {
		t.Fatal("a deleted automation was invoked")
	}
	if out := c.must(0, "automations", "get", "invoices"); !strings.Contains(out, "deleted:") {
		t.Fatalf("automations get of a deleted one:\n%s", out)
	}

	// archive is delete's other name (the API's delete is an archive);
	// stop is cancel's.
	c.must(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Old invoices", "--id", "old-invoices")
	if out := c.must(0, "automations", "archive", "Old invoices", "--yes"); !strings.Contains(out, "deleted Old invoices") {
		t.Fatalf("automations archive: %s", out)
	}
	if code, _, errb := c.run("runs", "stop", "nope"); code != exitNotFound {
		t.Fatalf("runs stop of no run: exit %d %s", code, errb)
	}

	for _, tc := range []struct{ args []string }{{[]string{"runz"}}, {[]string{"runs", "lsit"}}, {[]string{"automations", "delet"}}, {[]string{"exceptions", "resolv"}}, {[]string{"logn"}}} {
		code, _, errb := c.run(tc.args...)
		if code != exitUsage || !strings.Contains(errb, "Did you mean this?") {
			t.Errorf("prose %v: exit %d\n%s", tc.args, code, errb)
		}
	}
}

// TestCLIListWatch: `exceptions list --watch` prints the list, prints it
// again when an exception appears, and ends with exit 0 on Ctrl-C.
func TestCLIListWatch(t *testing.T) {
	e := newTestEnv(t)
	addr := serveTCP(t, e)
	c := newCLI(t, "PROSE_ADDRESS="+addr, "PROSE_API_KEY="+e.Init.APIKey)
	c.must(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Invoices", "--id", "invoices", "--publish")

	cmd := exec.Command(c.bin, "exceptions", "list", "--watch", "--interval", "20ms") //nolint:gosec // the test's binary
	cmd.Env = c.env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	waitFor := func(want string) {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return
			}
		}
		_ = cmd.Process.Kill()
		t.Fatalf("--watch ended before printing %q", want)
	}
	waitFor("ID ")
	c.must(exitAwaiting, "automations", "invoke", "invoices", "--wait")
	waitFor("Please provide the invoice total")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() { // drain until the process closes its output
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("--watch after Ctrl-C: %v", err)
	}
}

// TestCLIProfilesAndAuth: auth status says who the key is, profiles list
// and switch, logout forgets a profile, and login-link points at the
// address the client commands use.
func TestCLIProfilesAndAuth(t *testing.T) {
	e := newTestEnv(t)
	addr := serveTCP(t, e)
	cfg := filepath.Join(t.TempDir(), "profiles.json")
	c := newCLI(t, "PROSE_CONFIG="+cfg)

	if code, _, errb := c.run("auth", "status"); code != exitAuth || !strings.Contains(errb, "prose login --address 127.0.0.1:8080 --api-key KEY") {
		t.Fatalf("auth status without a key: exit %d %s", code, errb)
	}
	c.must(0, "login", "--profile", "staging", "--address", addr, "--api-key", e.Init.APIKey)
	if out := c.must(0, "profiles", "list"); !strings.Contains(out, "staging") || !strings.Contains(out, addr) || strings.Contains(out, "*") {
		t.Fatalf("profiles list:\n%s", out)
	}
	// Not current yet: the commands use "default", which does not exist.
	if code, _, _ := c.run("automations", "list"); code != exitAuth {
		t.Fatalf("before switch: exit %d", code)
	}
	c.must(0, "profiles", "switch", "staging")
	if out := c.must(0, "profiles", "list"); !strings.Contains(out, "*  staging") {
		t.Fatalf("profiles list after switch:\n%s", out)
	}
	st := c.json(0, "auth", "status")
	if st["profile"] != "staging" || st["address"] != addr || st["user"] != "users/"+e.Init.UserID || strings.Contains(st["key"].(string), e.Init.APIKey) {
		t.Fatalf("auth status: %v", st)
	}
	if code, _, _ := c.run("profiles", "switch", "nope"); code != exitNotFound {
		t.Fatalf("switch to an unknown profile: exit %d", code)
	}
	if code, _, errb := c.run("auth", "status", "--api-key", "prose_nope"); code != exitAuth {
		t.Fatalf("auth status with a bad key: exit %d %s", code, errb)
	}

	// login-link: its link points at the profile's address, or PROSE_ADDRESS.
	data := t.TempDir()
	c.must(0, "init", "--data", data)
	if out := c.must(0, "login-link", "--data", data); !strings.HasPrefix(out, "http://"+addr+"/") {
		t.Fatalf("login-link with a profile: %s", out)
	}
	env := newCLI(t, "PROSE_CONFIG="+cfg, "PROSE_ADDRESS=https://prose.example.com")
	if out := env.must(0, "login-link", "--data", data); !strings.HasPrefix(out, "https://prose.example.com/") {
		t.Fatalf("login-link with PROSE_ADDRESS: %s", out)
	}
	if out := env.must(0, "login-link", "--data", data, "--url", "https://other.example"); !strings.HasPrefix(out, "https://other.example/") {
		t.Fatalf("login-link --url: %s", out)
	}

	if out := c.must(0, "logout"); !strings.Contains(out, `"staging"`) {
		t.Fatalf("logout: %s", out)
	}
	if out := c.must(0, "profiles", "list"); !strings.Contains(out, "No profiles") || !strings.Contains(out, "prose login --address") {
		t.Fatalf("profiles after logout:\n%s", out)
	}
	if code, _, _ := c.run("auth", "logout", "--profile", "staging"); code != exitNotFound {
		t.Fatalf("logout twice: exit %d", code)
	}
}

// TestPlainDoc: the conversions behind the outputs, on shapes no example
// program makes (dates, files, tables).
func TestPlainDoc(t *testing.T) {
	num, err := client.ValueFromJSON([]byte("120.50"))
	if err != nil {
		t.Fatal(err)
	}
	run := &platformv1.Run{Name: "r", State: &platformv1.RunState{State: &platformv1.RunState_Completed{Completed: &platformv1.CompletedRunState{
		Outputs: map[string]*platformv1.Value{
			"total": num,
			"due":   {Kind: &platformv1.Value_Date{Date: &date.Date{Year: 2026, Month: 1, Day: 31}}},
		},
	}}}}
	s := &session{format: "json"}
	var b strings.Builder
	s.out = &b
	if err := s.printJSON(run); err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"r","state":{"completed":{"outputs":{"due":"2026-01-31","total":120.50}}}}` + "\n"; b.String() != want {
		t.Errorf("plain JSON:\n got %s\nwant %s", b.String(), want)
	}
	b.Reset()
	s.format = "yaml"
	if err := s.printJSON(run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "total: 120.50\n") || !strings.Contains(b.String(), `due: "2026-01-31"`) {
		t.Errorf("plain YAML:\n%s", b.String())
	}

	for _, tc := range []struct{ in, want string }{
		{`{"file_name":"a.pdf","url":"https://files.example/a.pdf"}`, "https://files.example/a.pdf"},
		{`[{"item":"pen","qty":2},{"item":"ink","qty":10}]`, "\n    item  qty\n    pen   2\n    ink   10"},
		{`[1,2]`, `[1,2]`},
		{`128.9350`, `128.9350`},
	} {
		if got := plainText(json.RawMessage(tc.in), "  "); got != tc.want {
			t.Errorf("plainText(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		exc  bool
		want string
	}{
		{"state = pending", true, "state = PENDING"},
		{`state = "Pending" AND automation = "a"`, true, `state = PENDING AND automation = "a"`},
		{"state != Awaiting_Guidance", false, `state != "awaiting_guidance"`},
		{`state = "awaiting guidance"`, false, `state = "awaiting_guidance"`},
		{`exception_state = x`, false, `exception_state = x`},
	} {
		if got := normalizeStateFilter(tc.in, tc.exc); got != tc.want {
			t.Errorf("normalizeStateFilter(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := joinFilters("", "a = 1", "b = 2 OR c = 3"); got != "(a = 1) AND (b = 2 OR c = 3)" {
		t.Errorf("joinFilters: %q", got)
	}
}

// listLen is the length of a list in a -o json answer (absent when empty).
func listLen(m map[string]any, key string) int {
	l, _ := m[key].([]any)
	return len(l)
}

// TestHelpNoRepeatedParagraph: a paragraph of a command's description is
// said once, on that command: no subcommand's help repeats one of its
// parent's (the client flags' paragraph lives on the group alone).
func TestHelpNoRepeatedParagraph(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			if c.HasParent() {
				for _, para := range strings.Split(c.Long, "\n\n") {
					if para = strings.TrimSpace(para); len(para) > 40 && strings.Contains(sub.Long, para) {
						t.Errorf("%s repeats a paragraph of %s: %.60q", sub.CommandPath(), c.CommandPath(), para)
					}
				}
			}
			if sub.Example == "" {
				t.Errorf("%s has no example", sub.CommandPath())
			}
			walk(sub)
		}
	}
	root := newRootCmd()
	walk(root)
	var out, errb strings.Builder
	if code := execute(context.Background(), []string{"runs", "list", "--help"}, strings.NewReader(""), &out, &errb); code != 0 || strings.Contains(out.String(), strings.Split(clientFlagsHelp, "\n")[0]) {
		t.Errorf("runs list --help: exit %d, repeats the client flags' paragraph:\n%s", code, out.String())
	}
}
