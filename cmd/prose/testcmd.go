package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/safechange"
)

const testLong = `Run the tests of Prose programs here, without a server and without calling any
book: a program's tests are in NAME.tests.yaml beside NAME.prose (the format is
in docs/safe-change.md). Each test runs the program with its inputs, answers its
exceptions in order, answers its book calls from its stubs (a call no stub
answers fails the test: "this test calls ` + "`send an email`" + ` and gives no
result for it") and checks its outputs, log lines or exception.

FILE is a program (its tests beside it) or a tests file; DIR is searched for
tests files (*.tests.yaml), below it too. The built-in books, and those of
--books, are looked up as 'prose run' does, so that a sentence means what it
means on a server; they are never called.

The report says, for each test that fails, what was expected and what came,
then which lines no test reaches. --json prints one object; --junit FILE
writes JUnit XML for CI systems too.

Exit codes: 0 every test passed, 1 a test failed (or a file could not be read),
2 usage.`

type testFlags struct {
	json  bool
	junit string
	books string
}

func newTestCmd() *cobra.Command {
	var f testFlags
	cmd := &cobra.Command{
		Use:   "test FILE|DIR...",
		Short: "Run the tests of Prose programs here, calling no book",
		Long:  testLong,
		Example: `  prose test examples/
  prose test examples/invoice.prose --json
  prose test examples/ --junit report.xml`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("no program, tests file or folder given")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := runTestFiles(cmd.Context(), f, args, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return exit(code)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print one JSON object: every test's result and each program's coverage")
	fl.StringVar(&f.junit, "junit", "", "also write the results as JUnit XML to this file")
	fl.StringVar(&f.books, "books", "", `JSON file of books to look sentences up in besides the built-in ones (the file of 'prose run --books')`)
	return cmd
}

// testFile is one tests file and how it went.
type testFile struct {
	path, program string
	err           error
	res           safechange.SuiteResult
}

// runTests runs the tests of the paths and returns the exit code.
func runTestFiles(ctx context.Context, f testFlags, paths []string, stdout, stderr io.Writer) int {
	files, err := findTests(paths)
	if err != nil {
		fmt.Fprintf(stderr, "prose test: %v\n", err)
		return exitFailed
	}
	reg, err := runRegistry(ctx, f.books)
	if err != nil {
		fmt.Fprintf(stderr, "prose test: --books: %v\n", err)
		return exitUsage
	}
	opts := safechange.Options{Books: reg.ForWorkspace(runWorkspace)}
	results := make([]testFile, 0, len(files))
	passed, failed := 0, 0
	for _, path := range files {
		tf := runTestFile(ctx, path, opts)
		if tf.err != nil {
			failed++
		}
		passed += tf.res.Passed
		failed += tf.res.Failed
		results = append(results, tf)
	}
	if f.junit != "" {
		if err := writeJUnit(f.junit, results); err != nil {
			fmt.Fprintf(stderr, "prose test: --junit: %v\n", err)
			return exitFailed
		}
	}
	if f.json {
		b, _ := json.Marshal(testReport(results, passed, failed))
		fmt.Fprintln(stdout, string(b))
	} else {
		for _, tf := range results {
			if tf.err != nil {
				fmt.Fprintf(stdout, "FAIL %s: %v\n", tf.path, tf.err)
				continue
			}
			_ = safechange.WriteText(stdout, tf.path, tf.res)
		}
		fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	}
	if failed > 0 {
		return exitFailed
	}
	return exitOK
}

// runTestFile reads a tests file and its program, and runs its tests.
func runTestFile(ctx context.Context, path string, opts safechange.Options) testFile {
	tf := testFile{path: path}
	data, err := os.ReadFile(path) //nolint:gosec // a tests file the command line names
	if err != nil {
		tf.err = err
		return tf
	}
	suite, err := safechange.DecodeSuite(data)
	if err != nil {
		tf.err = err
		return tf
	}
	tf.program = programOf(path, suite.Program)
	src, err := os.ReadFile(tf.program)
	if err != nil {
		tf.err = fmt.Errorf("its program: %w", err)
		return tf
	}
	prog, err := lang.Parse(string(src))
	if err != nil {
		tf.err = fmt.Errorf("its program %s does not parse: %w", tf.program, err)
		return tf
	}
	tf.res = safechange.RunSuite(ctx, prog, suite.Tests, opts)
	return tf
}

// testsSuffixes end the names of tests files.
var testsSuffixes = []string{".tests.yaml", ".tests.yml"}

// programOf is the program a tests file is for: the file it names
// (relative to it), else NAME.prose beside NAME.tests.yaml.
func programOf(testsPath, named string) string {
	if named != "" {
		if filepath.IsAbs(named) {
			return named
		}
		return filepath.Join(filepath.Dir(testsPath), named)
	}
	for _, s := range testsSuffixes {
		if strings.HasSuffix(testsPath, s) {
			return strings.TrimSuffix(testsPath, s) + ".prose"
		}
	}
	return testsPath + ".prose"
}

func isTestsFile(name string) bool {
	for _, s := range testsSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// findTests lists the tests files the paths name, in order, each once.
func findTests(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file or folder", p)
		}
		if err != nil {
			return nil, err
		}
		switch {
		case st.IsDir():
			var found []string
			err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.IsDir() && isTestsFile(d.Name()) {
					found = append(found, path)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			if len(found) == 0 {
				return nil, fmt.Errorf("no tests in %s: a program's tests are in NAME.tests.yaml beside NAME.prose", p)
			}
			sort.Strings(found)
			for _, f := range found {
				add(f)
			}
		case isTestsFile(p):
			add(p)
		default:
			t := strings.TrimSuffix(p, filepath.Ext(p)) + testsSuffixes[0]
			if _, err := os.Stat(t); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("no tests for %s: write them in %s", p, t)
				}
				return nil, err
			}
			add(t)
		}
	}
	return out, nil
}

func writeJUnit(path string, results []testFile) error {
	var suites []safechange.NamedSuite
	for _, tf := range results {
		res := tf.res
		if tf.err != nil {
			res = safechange.SuiteResult{Failed: 1, Results: []safechange.Result{{Name: "read the tests", Failures: []string{tf.err.Error()}}}}
		}
		suites = append(suites, safechange.NamedSuite{Name: tf.path, Result: res})
	}
	out, err := os.Create(path) //nolint:gosec // the report file of --junit
	if err != nil {
		return err
	}
	if err := safechange.WriteJUnit(out, suites); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// The --json report.
type (
	testJSON struct {
		Passed int            `json:"passed"`
		Failed int            `json:"failed"`
		Files  []testFileJSON `json:"files"`
	}
	testFileJSON struct {
		File     string          `json:"file"`
		Program  string          `json:"program,omitempty"`
		Error    string          `json:"error,omitempty"`
		Passed   int             `json:"passed"`
		Failed   int             `json:"failed"`
		Tests    []testCaseJSON  `json:"tests"`
		Coverage *coverageReport `json:"coverage,omitempty"`
	}
	testCaseJSON struct {
		Name      string          `json:"name"`
		Passed    bool            `json:"passed"`
		Failures  []string        `json:"failures"`
		Diffs     []diffJSON      `json:"diffs,omitempty"`
		Outputs   json.RawMessage `json:"outputs"`
		Log       []string        `json:"log"`
		Exception *testExcJSON    `json:"exception,omitempty"`
	}
	diffJSON struct {
		Output   string          `json:"output"`
		Path     string          `json:"path,omitempty"`
		Expected json.RawMessage `json:"expected,omitempty"`
		Got      json.RawMessage `json:"got,omitempty"`
	}
	testExcJSON struct {
		Group   string `json:"group"`
		Message string `json:"message"`
		Line    int    `json:"line"`
	}
	coverageReport struct {
		Lines     []int `json:"lines"`
		Covered   []int `json:"covered"`
		Uncovered []int `json:"uncovered"`
		Percent   int   `json:"percent"`
	}
)

func plainJSON(v lang.Value) json.RawMessage {
	if !v.IsValid() {
		return nil
	}
	b, err := lang.AppendPlain(nil, v)
	if err != nil {
		return nil
	}
	return b
}

func testReport(results []testFile, passed, failed int) testJSON {
	out := testJSON{Passed: passed, Failed: failed, Files: []testFileJSON{}}
	for _, tf := range results {
		fj := testFileJSON{File: tf.path, Program: tf.program, Passed: tf.res.Passed, Failed: tf.res.Failed, Tests: []testCaseJSON{}}
		if tf.err != nil {
			fj.Error = tf.err.Error()
			fj.Failed = 1
			out.Files = append(out.Files, fj)
			continue
		}
		c := tf.res.Coverage
		fj.Coverage = &coverageReport{Lines: nonNil(c.Lines), Covered: nonNil(c.Covered), Uncovered: nonNil(c.Uncovered), Percent: c.Percent()}
		for _, r := range tf.res.Results {
			outs, err := lang.EncodePlainMap(r.Outputs)
			if err != nil || r.Outputs == nil {
				outs = []byte("{}")
			}
			cj := testCaseJSON{Name: r.Name, Passed: r.Passed, Failures: r.Failures, Outputs: outs, Log: r.Log}
			if cj.Failures == nil {
				cj.Failures = []string{}
			}
			if cj.Log == nil {
				cj.Log = []string{}
			}
			for _, d := range r.Diffs {
				cj.Diffs = append(cj.Diffs, diffJSON{Output: d.Output, Path: d.Path, Expected: plainJSON(d.Want), Got: plainJSON(d.Got)})
			}
			if x := r.Exception; x != nil {
				cj.Exception = &testExcJSON{Group: string(x.Group), Message: x.Message, Line: r.Line}
			}
			fj.Tests = append(fj.Tests, cj)
		}
		out.Files = append(out.Files, fj)
	}
	return out
}

func nonNil(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}
