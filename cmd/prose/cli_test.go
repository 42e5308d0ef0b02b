package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proserun/prose/gateway"
	"github.com/proserun/prose/server/testenv"
)

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

// proseBinary builds this command once per test process and returns the
// binary's path (TestMain removes it at the end). Tests that start the
// binary take their deadlines after this call: a build on a loaded machine
// can take minutes.
func proseBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "prose-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtPath = filepath.Join(dir, "prose")
		out, err := exec.Command("go", "build", "-o", builtPath, ".").CombinedOutput() //nolint:gosec // the test's own package
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build prose: %v", buildErr)
	}
	return builtPath
}

// serveTCP serves the test app on a loopback TCP port (gRPC and HTTP, as
// `prose serve` does) and returns its address.
func serveTCP(t *testing.T, e *testEnv) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gateway.Serve(ctx, lis, e.App.GRPC, e.App.HTTP, testenv.Discard(), e.App.ServeOptions()...)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String()
}

// cli runs the built binary with a clean environment of its own.
type cli struct {
	t   *testing.T
	bin string
	env []string
}

func newCLI(t *testing.T, env ...string) *cli {
	t.Helper()
	home := t.TempDir()
	base := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH")}
	return &cli{t: t, bin: proseBinary(t), env: append(base, env...)}
}

// run runs prose with args; it returns the exit code, stdout and stderr.
func (c *cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...) //nolint:gosec // the test's binary
	cmd.Env = c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("prose %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// must runs prose and wants exit code want.
func (c *cli) must(want int, args ...string) string {
	c.t.Helper()
	code, out, errb := c.run(args...)
	if code != want {
		c.t.Fatalf("prose %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errb)
	}
	return out
}

func (c *cli) json(want int, args ...string) map[string]any {
	c.t.Helper()
	out := c.must(want, append(args, "-o", "json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		c.t.Fatalf("prose %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return m
}

// TestCLIDailyWork drives the built binary against a server started in
// the test: create and publish an automation, invoke it, find the exception
// it raises, resolve it with a typed value, and read the run; tables for
// people, -o json for scripts, and the exit codes of mistakes.
func TestCLIDailyWork(t *testing.T) {
	e := newTestEnv(t)
	addr := serveTCP(t, e)
	c := newCLI(t, "PROSE_ADDRESS="+addr, "PROSE_API_KEY="+e.Init.APIKey)

	a := c.json(0, "automations", "create", "--file", "../../examples/invoice.prose", "--title", "Invoices", "--id", "invoices", "--publish")
	if a["name"] != "organizations/"+e.Init.OrganizationID+"/workspaces/"+e.Init.WorkspaceID+"/automations/invoices" || a["latest_published_version"] == nil {
		t.Fatalf("created %v", a)
	}
	if out := c.must(0, "automations", "list"); !strings.Contains(out, "invoices") || !strings.Contains(out, "Invoices") || !strings.HasPrefix(out, "ID ") {
		t.Fatalf("automations list:\n%s", out)
	}
	if out := c.must(0, "automations", "get", a["name"].(string), "--code"); !strings.Contains(out, "get the invoice total") {
		t.Fatalf("automations get --code:\n%s", out)
	}

	// Flags after the argument, inputs typed as name=value: completed.
	out := c.must(0, "automations", "invoke", "invoices", "--input", "invoice_total=120.50", "--wait")
	if !strings.Contains(out, "Completed") || !strings.Contains(out, "output due: 128.9350") {
		t.Fatalf("invoke --wait:\n%s", out)
	}

	// Without the input the run waits for guidance: exit 3.
	out = c.must(exitAwaiting, "automations", "invoke", "invoices", "--wait")
	if !strings.Contains(out, "Awaiting guidance") || !strings.Contains(out, "Please provide the invoice total") {
		t.Fatalf("invoke without input:\n%s", out)
	}
	list := c.json(0, "exceptions", "list", "--filter", "state = PENDING")
	excs, _ := list["exceptions"].([]any)
	if len(excs) != 1 {
		t.Fatalf("pending exceptions: %v", list)
	}
	exc := excs[0].(map[string]any)
	excID := exc["name"].(string)[strings.LastIndexByte(exc["name"].(string), '/')+1:]
	if out := c.must(0, "exceptions", "get", excID); !strings.Contains(out, "invoice total") || !strings.Contains(out, "Pending") {
		t.Fatalf("exceptions get:\n%s", out)
	}
	// Shell completion asks the server for the ids.
	if out := c.must(0, "__complete", "exceptions", "resolve", ""); !strings.Contains(out, excID+"\tPlease provide the invoice total") {
		t.Fatalf("completion of an exception id:\n%s", out)
	}
	if out := c.must(0, "__complete", "automations", "invoke", ""); !strings.Contains(out, "invoices\tInvoices") {
		t.Fatalf("completion of an automation id:\n%s", out)
	}
	if out := c.must(0, "exceptions", "list"); !strings.Contains(out, excID) || !strings.Contains(out, "Please provide the invoice total") {
		t.Fatalf("exceptions list:\n%s", out)
	}

	// Assign it to the owner, then clear it.
	if m := c.json(0, "exceptions", "assign", excID, "--to", e.Init.UserID); m["assignee"] != "users/"+e.Init.UserID {
		t.Fatalf("assign: %v", m)
	}
	if m := c.json(0, "exceptions", "assign", exc["name"].(string), "--unassign"); m["assignee"] != nil {
		t.Fatalf("unassign: %v", m)
	}
	c.must(exitUsage, "exceptions", "assign", excID)

	// Pause and continue the waiting run.
	run := exc["run"].(string)
	runID := run[strings.LastIndexByte(run, '/')+1:]
	if out := c.must(0, "runs", "pause", runID, "--reason", "supplier late"); !strings.Contains(out, "Stopped") {
		t.Fatalf("pause: %s", out)
	}
	if out := c.must(0, "runs", "continue", runID); !strings.Contains(out, "Awaiting guidance") {
		t.Fatalf("continue: %s", out)
	}

	// Resolve with a typed value (the key has a space; the number keeps its digits).
	r := c.json(0, "exceptions", "resolve", excID, "--value", "invoice total=120.50", "--wait")
	st, _ := r["state"].(map[string]any)
	if st["completed"] == nil {
		t.Fatalf("resolved run: %v", r)
	}
	if out := c.must(0, "runs", "get", run); !strings.Contains(out, "output due: 128.9350") || !strings.Contains(out, "Completed") {
		t.Fatalf("runs get:\n%s", out)
	}
	if out := c.must(0, "runs", "list"); !strings.Contains(out, runID) || !strings.Contains(out, "Completed") {
		t.Fatalf("runs list:\n%s", out)
	}
	if m := c.json(0, "runs", "list", "--filter", `state = "completed"`); len(m["runs"].([]any)) != 2 {
		t.Fatalf("completed runs: %v", m)
	}
	if out := c.must(0, "runs", "events", runID); !strings.Contains(out, "exception "+excID) || !strings.Contains(out, "resolved by ") || strings.Contains(out, "by users/") ||
		!strings.Contains(out, "Say") || !strings.Contains(out, "Awaiting guidance") {
		t.Fatalf("runs events:\n%s", out)
	}
	if out := c.must(0, "runs", "watch", runID); !strings.Contains(out, "Completed") {
		t.Fatalf("runs watch:\n%s", out)
	}

	// A question answered with --answer; a step replaced from a file.
	prog := filepath.Join(t.TempDir(), "approve.prose")
	if err := os.WriteFile(prog, []byte("ask \"Approve this invoice?\" the choices are \"yes\", \"no\"\nthe output is the above\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.must(0, "automations", "create", "--file", prog, "--id", "approve")
	if out := c.must(0, "automations", "update", "approve", "--title", "Approvals", "--publish"); !strings.Contains(out, "Approvals") {
		t.Fatalf("update --title:\n%s", out)
	}
	c.must(exitAwaiting, "automations", "invoke", "approve", "--wait")
	q := c.json(0, "exceptions", "list", "--filter", `state = PENDING AND automation = "approve"`)["exceptions"].([]any)[0].(map[string]any)
	if out := c.must(0, "exceptions", "get", q["name"].(string)); !strings.Contains(out, "Approve this invoice?") || !strings.Contains(out, `"yes" / "no"`) {
		t.Fatalf("the question:\n%s", out)
	}
	if out := c.must(0, "exceptions", "resolve", q["name"].(string), "--answer", "yes", "--wait"); !strings.Contains(out, `output: "yes"`) {
		t.Fatalf("--answer:\n%s", out)
	}
	bad := filepath.Join(t.TempDir(), "bad.prose")
	if err := os.WriteFile(bad, []byte("the output is 10 / 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fix := filepath.Join(t.TempDir(), "fix.prose")
	if err := os.WriteFile(fix, []byte("the output is 10 / 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.must(0, "automations", "create", "--file", bad, "--id", "divide", "--publish")
	c.must(exitAwaiting, "automations", "invoke", "divide", "--wait")
	d := c.json(0, "exceptions", "list", "--filter", `state = PENDING AND automation = "divide"`)["exceptions"].([]any)[0].(map[string]any)
	if out := c.must(0, "exceptions", "resolve", d["name"].(string), "--replace-file", fix, "--wait"); !strings.Contains(out, "output: 5") {
		t.Fatalf("--replace-file:\n%s", out)
	}

	// Mistakes and their exit codes.
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"runs", "get", "nope"}, exitNotFound, "NOT_FOUND"},
		{[]string{"automations", "get", "invoices", "--api-key", "prose_nope"}, exitAuth, "UNAUTHENTICATED"},
		{[]string{"automations", "list", "--address", "127.0.0.1:1"}, exitUnavailable, "the server cannot be reached"},
		{[]string{"automations", "invoke"}, exitUsage, "missing AUTOMATION"},
		{[]string{"exceptions", "resolve", excID}, exitUsage, "exactly one kind of guidance"},
		{[]string{"exceptions", "resolve", excID, "--skip"}, exitFailed, "EXCEPTION_STATE_CONFLICT"},
		{[]string{"runs", "list", "--filter", "bogus = 1"}, exitUsage, "INVALID_FILTER"},
		{[]string{"runs", "list", "-o", "xml"}, exitUsage, "-o must be table, json or yaml"},
		{[]string{"runs", "list", "--nope"}, exitUsage, "unknown flag: --nope"},
		{[]string{"nope"}, exitUsage, `unknown command "nope"`},
	} {
		code, _, errb := c.run(tc.args...)
		if code != tc.code || !strings.Contains(errb, tc.stderr) {
			t.Errorf("prose %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, errb, tc.code, tc.stderr)
		}
	}
}

// TestCLILoginProfile: `prose login` keeps the server, key and workspace in
// a profile readable by its owner alone, and the commands use it without
// flags or environment; keys work over the API with it.
func TestCLILoginProfile(t *testing.T) {
	e := newTestEnv(t)
	addr := serveTCP(t, e)
	cfg := filepath.Join(t.TempDir(), "conf", "profiles.json")
	c := newCLI(t, "PROSE_CONFIG="+cfg)

	if code, _, errb := c.run("automations", "list"); code != exitAuth || !strings.Contains(errb, "no API key") {
		t.Fatalf("without a key: exit %d %s", code, errb)
	}
	out := c.must(0, "login", "--address", addr, "--api-key", e.Init.APIKey)
	if !strings.Contains(out, "Ops") {
		t.Fatalf("login: %s", out)
	}
	fi, err := os.Stat(cfg)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("profile file: %v %v", fi, err)
	}
	c.must(0, "automations", "list")

	// keys over the API (the profile's key acts).
	k := c.json(0, "keys", "create", "--name", "ci", "--permission", "read-only", "--expires", "7d")
	if !strings.HasPrefix(k["api_key"].(string), "prose_") {
		t.Fatalf("keys create: %v", k)
	}
	if out := c.must(0, "keys", "list"); !strings.Contains(out, "ci") || !strings.Contains(out, "read_only") {
		t.Fatalf("keys list:\n%s", out)
	}
	// The read-only key reads and may not write.
	ro := newCLI(t, "PROSE_ADDRESS="+addr, "PROSE_API_KEY="+k["api_key"].(string))
	ro.must(0, "automations", "list")
	if code, _, errb := ro.run("automations", "create", "--file", "../../examples/invoice.prose"); code != exitAuth {
		t.Fatalf("read-only create: exit %d %s", code, errb)
	}
	name := k["name"].(string)
	if out := c.must(0, "keys", "delete", name); !strings.Contains(out, "deleted "+name) {
		t.Fatalf("keys delete: %s", out)
	}
	if code, _, _ := ro.run("automations", "list"); code != exitAuth {
		t.Fatalf("deleted key: exit %d", code)
	}
	if code, _, errb := c.run("automations", "list", "--profile", "staging"); code != exitUsage || !strings.Contains(errb, `no profile "staging"`) {
		t.Fatalf("unknown profile: exit %d %s", code, errb)
	}
}
