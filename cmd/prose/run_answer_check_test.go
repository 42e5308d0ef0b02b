package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRunAnswerCheck: `prose run` checks an answer to a question as the
// server's guidance does (lang.CheckQuestionAnswer): "maybe" does not
// answer a yes/no question, from --answers or at the terminal, and a typed
// "yes" is the boolean the question wants.
func TestRunAnswerCheck(t *testing.T) {
	src := "ask \"Approve?\" the choices are yes, no\nthe output is the answer\n"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{name: "maybe refused", args: []string{"--json", "--answers", `{"Approve?":"maybe"}`}, code: exitFailed,
			stdout: `"description":"--answers: the answer must be a boolean, not a text"`},
		{name: "a choice accepted", args: []string{"--json", "--answers", `{"Approve?":true}`}, code: exitCompleted,
			stdout: `"outputs":{"output":true}`},
		{name: "not a choice refused", args: []string{"--json", "--answers", `{"Approve?":"later"}`}, code: exitFailed,
			stdout: `"state":"failed"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runCommand(context.Background(), append([]string{writeProgram(t, src)}, tc.args...), strings.NewReader(""), &out, &errb)
			if code != tc.code || !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("exit %d, stdout %q; want exit %d and %q", code, out.String(), tc.code, tc.stdout)
			}
		})
	}
	src = "ask \"Ship?\" the choices are \"now\", \"later\"\nthe output is the answer\n"
	var out, errb bytes.Buffer
	code := runCommand(context.Background(), []string{writeProgram(t, src), "--json", "--answers", `{"Ship?":"maybe"}`}, strings.NewReader(""), &out, &errb)
	if code != exitFailed || !strings.Contains(out.String(), `the answer must be one of \"now\", \"later\"`) {
		t.Errorf("exit %d, stdout %q", code, out.String())
	}
}

// TestRunWarnsOutputInBlock: `prose run` says, at its line, that an output
// set only inside a block is no output of the run.
func TestRunWarnsOutputInBlock(t *testing.T) {
	var out, errb bytes.Buffer
	code := runCommand(context.Background(), []string{writeProgram(t, "if true then\n  the output flag is 1\n")}, strings.NewReader(""), &out, &errb)
	if code != exitCompleted || !strings.Contains(errb.String(), "warning: line 2, column 3: 'the output flag' is set only inside a block") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
