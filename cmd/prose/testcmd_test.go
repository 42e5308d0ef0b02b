package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProseTestExamples runs the shipped examples' tests, as CI does.
func TestProseTestExamples(t *testing.T) {
	var out, errb bytes.Buffer
	code := runArgs(context.Background(), "test", []string{"../../examples/"}, nil, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), " passed, 0 failed") || strings.Contains(out.String(), "FAIL") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}

const testedProgram = `get the amount
the output fee is the amount * 0.02
if the amount is greater than 1000 then
  send an email to "finance@example.com"
  the output fee is the output fee + 5
say "Fee: " + the output fee
`

func writeTests(t *testing.T, program, tests string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fee.prose"), []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fee.tests.yaml"), []byte(tests), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestProseTestReportsFailures checks the exit code, the readable diff,
// the unstubbed book call, coverage, --json and --junit of failing tests.
func TestProseTestReportsFailures(t *testing.T) {
	dir := writeTests(t, testedProgram, `tests:
  - name: a small fee
    inputs: {amount: 100}
    expect: {outputs: {fee: 2.50}, log: ["Fee: 2.00"]}
  - name: a large amount tells finance
    inputs: {amount: 2000}
    expect: {outputs: {fee: 45}}
`)
	var out, errb bytes.Buffer
	junit := filepath.Join(t.TempDir(), "report.xml")
	code := runArgs(context.Background(), "test", []string{filepath.Join(dir, "fee.prose"), "--junit", junit}, nil, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"FAIL " + filepath.Join(dir, "fee.tests.yaml") + ": a small fee\n       output fee: expected 2.50, got 2.00",
		"this test calls `send an email` and gives no result for it",
		"0 passed, 2 failed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(data, &j); err != nil || j.Tests != 2 || j.Failures != 2 {
		t.Fatalf("junit %+v %v\n%s", j, err, data)
	}

	out.Reset()
	code = runArgs(context.Background(), "test", []string{dir, "--json"}, nil, &out, &errb)
	var rep testJSON
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d %v\n%s", code, err, out.String())
	}
	f := rep.Files[0]
	if rep.Failed != 2 || len(f.Tests) != 2 || f.Tests[0].Diffs[0].Output != "output fee" ||
		string(f.Tests[0].Diffs[0].Expected) != "2.50" || string(f.Tests[0].Diffs[0].Got) != "2.00" {
		t.Fatalf("json %+v", rep)
	}
	if f.Coverage == nil || len(f.Coverage.Uncovered) != 1 || f.Coverage.Uncovered[0] != 5 {
		t.Errorf("coverage %+v: line 5 is never reached (the call before it fails)", f.Coverage)
	}
}

func TestProseTestPassesWithStubs(t *testing.T) {
	dir := writeTests(t, testedProgram, `tests:
  - name: a large amount tells finance
    inputs: {amount: 2000}
    books: [{call: send an email, inputs: {recipient: finance@example.com}, result: m-1}]
    expect: {outputs: {fee: 45}, log: ["Fee: 45.00"]}
  - name: the amount is asked for
    answers: [10]
    expect: {outputs: {fee: 0.20}}
`)
	var out, errb bytes.Buffer
	if code := runArgs(context.Background(), "test", []string{filepath.Join(dir, "fee.tests.yaml")}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "2 passed, 0 failed; lines covered 6 of 6 (100%)") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestProseTestFileErrors(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "a.prose")
	if err := os.WriteFile(prog, []byte("say 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := writeTests(t, "say 1\n", "tests:\n  - name: x\n    inputz: {}\n")
	broken := writeTests(t, "if then\n", "tests:\n  - name: x\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{prog}, 1, "no tests for " + prog + ": write them in " + filepath.Join(dir, "a.tests.yaml")},
		{[]string{dir}, 1, "no tests in " + dir},
		{[]string{filepath.Join(dir, "nope")}, 1, "no such file or folder"},
		{[]string{bad}, 1, `line 3: a test has no "inputz"`},
		{[]string{broken}, 1, "does not parse"},
		{nil, 2, "no program, tests file or folder given"},
	} {
		var out, errb bytes.Buffer
		code := runArgs(context.Background(), "test", tc.args, nil, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", tc.args, code, tc.code, tc.want, out.String(), errb.String())
		}
	}
}
