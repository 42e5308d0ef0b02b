package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/lang"
)

func writeProgram(t *testing.T, src string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "p.prose")
	if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRunCommand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src      string
		args     []string
		stdin    string
		code     int
		stdout   string // substring of stdout
		stderr   string // substring of stderr
		jsonWant map[string]any
	}{
		{
			name: "completed json", src: "the output total is 1.50 + 1\nsay \"hi\"\n",
			args: []string{"--json"}, code: 0,
			stdout: `{"state":"completed","outputs":{"output total":2.50},"log":["hi"]}`,
		},
		{
			name: "inputs", src: "the output is \"Hello, \" + the customer name\n",
			args: []string{"--json", "--inputs", `{"customer_name":"Ana"}`}, code: 0,
			stdout: `"outputs":{"output":"Hello, Ana"}`,
		},
		{
			name: "inputs with equals", src: "the output is the n * 2\n",
			args: []string{"--inputs={\"n\": 0.50}", "--json"}, code: 0,
			stdout: `"outputs":{"output":1.00}`,
		},
		{
			name: "awaiting guidance", src: "the a is 1\nget the invoice date\n",
			args: []string{"--json"}, code: 3,
			stdout: `"exception":{"group":"missing_values","message":"Please provide the invoice date","location":{"start_byte":11,"end_byte":31}}`,
		},
		{
			name: "answers", src: "get the invoice date\nthe output is convert the above to a date + 1 day\n",
			args: []string{"--json", "--answers", `{"the invoice date":"2024-01-15"}`}, code: 0,
			stdout: `"outputs":{"output":"2024-01-16"}`,
		},
		{
			name: "answers for a question", src: "ask \"Go on?\"\nthe output is the answer\n",
			args: []string{"--json", "--answers", `{"Go on?":"yes"}`}, code: 0,
			stdout: `"outputs":{"output":"yes"}`,
		},
		{
			name: "syntax error", src: "if true then\n  the a is 1\n\tthe output is 1\n",
			args: []string{"--json"}, code: 1,
			stdout: `"state":"failed"`,
		},
		{
			name: "syntax error location", src: "the a is \"open\n",
			args: []string{"--json"}, code: 1,
			stdout: `"location":{"start_byte":9,"end_byte":14}`,
		},
		{
			name: "human output", src: "say \"Hello!\"\nthe output is 2\n",
			code: 0, stdout: "Hello!\noutputs: {\"output\":2}\n",
		},
		{
			name: "human, not a terminal", src: "get the x\n",
			code: 3, stderr: "awaiting guidance (missing_values): Please provide the x\n  at line 1, column 1: get the x",
		},
		{
			name: "the standard book: get the new id calls it", src: "get the new id\nthe output is the length of the above\ncount the words of \"a b c\"\nthe output words is the above\n",
			args: []string{"--json"}, code: 0,
			stdout: `"outputs":{"output":36,"output words":3}`,
		},
		{
			name: "a fact before the book", src: "the new id is \"mine\"\nget the new id\nthe output is the above\n",
			args: []string{"--json"}, code: 0,
			stdout: `"outputs":{"output":"mine"}`,
		},
		{name: "bad inputs", src: "stop\n", args: []string{"--inputs", "[1]"}, code: 2, stderr: "--inputs"},
		{name: "bad answers", src: "stop\n", args: []string{"--answers", "{"}, code: 2, stderr: "--answers"},
		{name: "unknown flag", src: "stop\n", args: []string{"--nope"}, code: 2, stderr: "unknown flag"},
		{name: "missing flag value", src: "stop\n", args: []string{"--inputs"}, code: 2, stderr: "needs an argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeProgram(t, tc.src)
			var out, errb bytes.Buffer
			code := runCommand(context.Background(), append([]string{f}, tc.args...), strings.NewReader(tc.stdin), &out, &errb)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, tc.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout %q, want it to contain %q", out.String(), tc.stdout)
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errb.String(), tc.stderr)
			}
			if contains(tc.args, "--json") {
				var v map[string]any
				if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &v); err != nil {
					t.Errorf("stdout is not one JSON object: %v", err)
				}
			}
		})
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestRunCommandUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runCommand(context.Background(), nil, strings.NewReader(""), &out, &errb); code != 2 {
		t.Fatalf("exit %d", code)
	}
	if code := runCommand(context.Background(), []string{"/nonexistent/x.prose"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Fatalf("exit %d", code)
	}
}

func TestAskAtPrompt(t *testing.T) {
	// the prompt loop, driven through a reader as a terminal would be
	in := bufioReader("2024-01-15\nyes\n")
	exc := askFact("the invoice date")
	res, ok := ask(in, &bytes.Buffer{}, exc)
	if !ok || res.Values["the invoice date"].AsText() != "2024-01-15" {
		t.Fatalf("%v %+v", ok, res)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

func askFact(f string) *lang.Exception {
	return &lang.Exception{Group: lang.GroupMissingValues, Message: "Please provide " + f, Fact: f}
}

func TestAskAtPromptJSONValue(t *testing.T) {
	res, ok := ask(bufioReader("12.50\n"), &bytes.Buffer{}, askFact("the total"))
	if v := res.Values["the total"]; !ok || v.Kind() != lang.KindNumber || v.AsNumber().String() != "12.50" {
		t.Fatalf("%v %+v", ok, res)
	}
	res, ok = ask(bufioReader("yes\n"), &bytes.Buffer{}, &lang.Exception{Message: "Please review", Failed: []string{"x"}})
	if !ok || res.Kind != lang.Skip {
		t.Fatalf("%v %+v", ok, res)
	}
	if _, ok := ask(bufioReader(""), &bytes.Buffer{}, askFact("the total")); ok {
		t.Fatal("end of input answered")
	}
}
