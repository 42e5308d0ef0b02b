package safechange

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText writes a suite's results for a person: one line per test,
// the failures of each failed one indented under it, and the coverage.
func WriteText(w io.Writer, title string, s SuiteResult) error {
	var b strings.Builder
	for _, r := range s.Results {
		mark := "ok  "
		if !r.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", mark, title, r.Name)
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "       %s\n", f)
		}
	}
	fmt.Fprintf(&b, "%s: %d passed, %d failed; %s\n", title, s.Passed, s.Failed, CoverageLine(s.Coverage))
	_, err := io.WriteString(w, b.String())
	return err
}

// CoverageLine says what the tests covered: "lines covered 9 of 10 (90%);
// not reached: 12".
func CoverageLine(c Coverage) string {
	s := fmt.Sprintf("lines covered %d of %d (%d%%)", len(c.Covered), len(c.Lines), c.Percent())
	if len(c.Uncovered) > 0 {
		ls := make([]string, len(c.Uncovered))
		for i, l := range c.Uncovered {
			ls[i] = fmt.Sprint(l)
		}
		s += "; no test reaches line " + strings.Join(ls, ", ")
	}
	return s
}

// JUnit XML, as CI systems read it: one <testsuite> per tests file, one
// <testcase> per test, a <failure> with the readable report when it failed.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
	Out      string      `xml:"system-out,omitempty"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// NamedSuite is a suite's results with the name of its tests file.
type NamedSuite struct {
	Name   string
	Result SuiteResult
}

// WriteJUnit writes the results of several tests files as JUnit XML.
func WriteJUnit(w io.Writer, suites []NamedSuite) error {
	out := junitSuites{}
	var total time.Duration
	for _, ns := range suites {
		js := junitSuite{Name: ns.Name, Tests: len(ns.Result.Results), Failures: ns.Result.Failed, Out: CoverageLine(ns.Result.Coverage)}
		var st time.Duration
		for _, r := range ns.Result.Results {
			st += r.Duration
			jc := junitCase{Name: r.Name, Classname: ns.Name, Time: seconds(r.Duration)}
			if !r.Passed {
				jc.Failure = &junitFailure{Message: first(r.Failures), Type: "prose.test", Text: strings.Join(r.Failures, "\n")}
			}
			js.Cases = append(js.Cases, jc)
		}
		js.Time = seconds(st)
		total += st
		out.Tests += js.Tests
		out.Failures += js.Failures
		out.Suites = append(out.Suites, js)
	}
	out.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func first(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}
