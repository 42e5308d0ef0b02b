package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// corpusFile is what this test reads of a case of lang/testdata/cases (the
// format of the shared conformance cases).
type corpusFile struct {
	Code     string          `json:"code"`
	Inputs   json.RawMessage `json:"inputs"`
	Answers  json.RawMessage `json:"answers"`
	Guidance json.RawMessage `json:"guidance"`
	Books    json.RawMessage `json:"books"`
	Now      string          `json:"now"`
	Expect   struct {
		State     string          `json:"state"`
		Outputs   json.RawMessage `json:"outputs"`
		Log       []string        `json:"log"`
		Exception *corpusExc      `json:"exception"`
		Error     *corpusExc      `json:"error"`
	} `json:"expect"`
}

type corpusExc struct {
	Group         string `json:"group"`
	Message       string `json:"message"`
	MessagePrefix string `json:"message_prefix"`
	Location      *struct {
		Start int `json:"start_byte"`
		End   int `json:"end_byte"`
	} `json:"location"`
}

var readsClock = regexp.MustCompile(`(?i)\b(current|today|now)\b`)

// TestRunCommandCorpus runs the language's corpus through `prose run FILE
// --json [--inputs] [--answers]`, as the shared conformance runner does, and
// checks the report against each case's expectation. Cases that need what
// the command line cannot give (guidance other than answers, books, a fixed
// clock) are left to the language's own corpus test.
func TestRunCommandCorpus(t *testing.T) {
	files, err := filepath.Glob("../../internal/lang/testdata/cases/*.json")
	if err != nil || len(files) < 150 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	ran := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c corpusFile
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(c.Guidance) > 0 || len(c.Books) > 0 || c.Now != "" || readsClock.MatchString(c.Code) {
			continue
		}
		ran++
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			args := []string{writeProgram(t, c.Code), "--json"}
			if len(c.Inputs) > 0 {
				args = append(args, "--inputs", string(c.Inputs))
			}
			if len(c.Answers) > 0 {
				args = append(args, "--answers", string(c.Answers))
			}
			var out, errb bytes.Buffer
			runCommand(context.Background(), args, strings.NewReader(""), &out, &errb)
			var got struct {
				State     string          `json:"state"`
				Outputs   json.RawMessage `json:"outputs"`
				Log       []string        `json:"log"`
				Exception *reportExc      `json:"exception"`
				Error     *reportErr      `json:"error"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("stdout %q: %v (stderr %q)", out.String(), err, errb.String())
			}
			exp := c.Expect
			if got.State != exp.State {
				t.Errorf("state %s, want %s: %s", got.State, exp.State, out.String())
			}
			if len(exp.Outputs) > 0 && !sameJSON(t, got.Outputs, exp.Outputs) {
				t.Errorf("outputs %s, want %s", got.Outputs, exp.Outputs)
			}
			if exp.Log != nil && !reflect.DeepEqual(got.Log, exp.Log) && (len(got.Log) > 0 || len(exp.Log) > 0) {
				t.Errorf("log %q, want %q", got.Log, exp.Log)
			}
			if w := exp.Exception; w != nil {
				if got.Exception == nil {
					t.Fatalf("no exception, want %+v", w)
				}
				checkReported(t, got.Exception.Group, got.Exception.Message, got.Exception.Location.Start, got.Exception.Location.End, w)
			}
			if w := exp.Error; w != nil {
				if got.Error == nil {
					t.Fatalf("no error, want %+v", w)
				}
				checkReported(t, "", got.Error.Description, got.Error.Location.Start, got.Error.Location.End, w)
			}
		})
	}
	if ran < 150 {
		t.Errorf("only %d cases ran through prose run", ran)
	}
}

func checkReported(t *testing.T, group, msg string, start, end int, w *corpusExc) {
	t.Helper()
	if w.Group != "" && group != w.Group {
		t.Errorf("group %s, want %s", group, w.Group)
	}
	if w.Message != "" && msg != w.Message {
		t.Errorf("message %q, want %q", msg, w.Message)
	}
	if w.MessagePrefix != "" && !strings.HasPrefix(msg, w.MessagePrefix) {
		t.Errorf("message %q, want prefix %q", msg, w.MessagePrefix)
	}
	if w.Location != nil && (start != w.Location.Start || end != w.Location.End) {
		t.Errorf("location %d-%d, want %d-%d", start, end, w.Location.Start, w.Location.End)
	}
}

// sameJSON compares JSON exactly, numbers by their written form.
func sameJSON(t *testing.T, a, b []byte) bool {
	norm := func(raw []byte) any {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("bad JSON %s: %v", raw, err)
		}
		return v
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
