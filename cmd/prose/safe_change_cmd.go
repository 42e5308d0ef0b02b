package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/internal/safechange"
)

// The server's side of safe change (docs/safe-change.md): an automation's
// tests run on the server, and a replay of its published version's runs.

func automationsTest(f *clientFlags) *cobra.Command {
	var revision string
	cmd := &cobra.Command{
		Use:               "test AUTOMATION",
		ValidArgsFunction: completeIDs(f, "automation"),
		Short:             "Run an automation's tests on the server, calling no book",
		Long: `Run the tests of an automation's draft (--revision: of a revision) against its
code on the server, with the workspace's books looked up and never called. It
prints each test, what a failed one expected and got, and the lines no test
reaches, and exits 0 when every test passes, 1 when one fails.`,
		Example: `  prose automations test invoices
  prose automations test invoices --revision 4 -o json`,
		Args: exactArgs(1, "AUTOMATION"),
		RunE: f.clientRun("automation", nil, func(cmd *cobra.Command, s *session, id string, _ []string) error {
			res, err := s.c.Tests.RunAutomationTests(cmd.Context(), &platformv1.RunAutomationTestsRequest{OrganizationId: s.org,
				WorkspaceId: s.ws, AutomationId: id, RevisionId: revision})
			if err != nil {
				return apiErr(err)
			}
			if s.json {
				if err := s.printJSON(res); err != nil {
					return err
				}
			} else {
				for _, r := range res.GetResults() {
					mark := "ok  "
					if !r.GetPassed() {
						mark = "FAIL"
					}
					fmt.Fprintf(s.out, "%s %s\n", mark, r.GetDisplayName())
					for _, x := range r.GetFailures() {
						fmt.Fprintf(s.out, "       %s\n", x)
					}
				}
				c := res.GetCoverage()
				fmt.Fprintf(s.out, "version %s: %d passed, %d failed; lines covered %d of %d (%d%%)%s\n", res.GetAutomationVersion(),
					res.GetPassedCount(), res.GetFailedCount(), len(c.GetCoveredLines()), len(c.GetLines()), c.GetPercent(), uncovered(c))
			}
			if res.GetFailedCount() > 0 {
				return exit(exitFailed)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&revision, "revision", "", "the revision whose code and tests run (a version, or latest; default: the draft)")
	return cmd
}

func uncovered(c *platformv1.AutomationTestCoverage) string {
	if len(c.GetUncoveredLines()) == 0 {
		return ""
	}
	ls := make([]string, len(c.GetUncoveredLines()))
	for i, l := range c.GetUncoveredLines() {
		ls[i] = fmt.Sprint(l)
	}
	return "; no test reaches line " + strings.Join(ls, ", ")
}

func automationsReplay(f *clientFlags) *cobra.Command {
	var runs int32
	var filter string
	cmd := &cobra.Command{
		Use:               "replay AUTOMATION",
		ValidArgsFunction: completeIDs(f, "automation"),
		Short:             "Replay the published version's runs against the draft",
		Long: `Replay the last finished runs of an automation's published version (--runs,
default 100; --filter narrows them: create_time, state) against its draft, with
their recorded inputs, answers and book results: no book is called and nothing
is written to the runs. It waits for the replay (a large one runs in the
background on the server), prints each run the draft changes — its outputs
(recorded → draft), a new exception, or a book call the record cannot answer —
and exits 0 when no run changes, 1 when one does.`,
		Example: `  prose automations replay invoices
  prose automations replay invoices --runs 5000 --filter 'create_time > "2025-06-01T00:00:00Z"'`,
		Args: exactArgs(1, "AUTOMATION"),
		RunE: f.clientRun("automation", nil, func(cmd *cobra.Command, s *session, id string, _ []string) error {
			ctx := cmd.Context()
			rep, err := s.c.Tests.ReplayAutomation(ctx, &platformv1.ReplayAutomationRequest{OrganizationId: s.org, WorkspaceId: s.ws,
				AutomationId: id, RunCount: runs, Filter: filter})
			for err == nil && rep.GetState() == platformv1.AutomationReplay_STATE_RUNNING {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(500 * time.Millisecond):
				}
				rep, err = s.c.Tests.GetAutomationReplay(ctx, &platformv1.GetAutomationReplayRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: id})
			}
			if err != nil {
				return apiErr(err)
			}
			if rep.GetState() == platformv1.AutomationReplay_STATE_FAILED {
				return &exitError{code: exitFailed, err: fmt.Errorf("the replay failed: %s", rep.GetErrorMessage())}
			}
			changed := rep.GetReplayedCount() - rep.GetUnchangedCount()
			if s.json {
				if err := s.printJSON(rep); err != nil {
					return err
				}
			} else if err := s.showReplay(cmd, id, rep); err != nil {
				return err
			}
			if changed > 0 {
				return exit(exitFailed)
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.Int32Var(&runs, "runs", 0, "how many of the last finished runs to replay (default 100, at most 10000)")
	fl.StringVar(&filter, "filter", "", "AIP-160 filter narrowing the runs: create_time, state")
	return cmd
}

// showReplay prints a replay's counts and the runs it changes.
func (s *session) showReplay(cmd *cobra.Command, id string, rep *platformv1.AutomationReplay) error {
	token := ""
	for {
		page, err := s.c.Tests.ListAutomationReplayResults(cmd.Context(), &platformv1.ListAutomationReplayResultsRequest{OrganizationId: s.org,
			WorkspaceId: s.ws, AutomationId: id, Filter: "outcome != OUTCOME_UNCHANGED", PageSize: 1000, PageToken: token})
		if err != nil {
			return apiErr(err)
		}
		for _, r := range page.GetResults() {
			what := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(r.GetOutcome().String(), "OUTCOME_"), "_", " "))
			fmt.Fprintf(s.out, "run %s: %s: %s\n", names.ID(r.GetRun()), what, r.GetMessage())
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	fmt.Fprintf(s.out, "replayed %d runs of version %s against version %s: %d unchanged, %d outputs differ, %d new exceptions, %d unanswered book calls, %d failed\n",
		rep.GetReplayedCount(), rep.GetPublishedVersion(), rep.GetAutomationVersion(), rep.GetUnchangedCount(), rep.GetOutputsDifferCount(),
		rep.GetNewExceptionCount(), rep.GetUnansweredCallCount(), rep.GetFailedCount())
	return nil
}

// readTestsFile reads a tests file as the API's tests.
func readTestsFile(path string) ([]*platformv1.AutomationTest, error) {
	data, err := os.ReadFile(path) //nolint:gosec // the tests file the command line names
	if err != nil {
		return nil, usageErr("--tests: %v", err)
	}
	suite, err := safechange.DecodeSuite(data)
	if err != nil {
		return nil, usageErr("--tests %s: %v", path, err)
	}
	out := make([]*platformv1.AutomationTest, 0, len(suite.Tests))
	for _, c := range suite.Tests {
		p, err := codec.TestProto(c)
		if err != nil {
			return nil, usageErr("--tests %s: test %q: %v", path, c.Name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// sameTest reports whether the server's test old is the test t of a file.
func sameTest(old, t *platformv1.AutomationTest) bool {
	o := proto.CloneOf(old)
	o.Name, o.CreateTime, o.UpdateTime, o.SourceGuideEntry, o.FileText = "", nil, nil, "", ""
	return proto.Equal(o, t)
}

// syncTests makes the draft's tests those given, matched by display name
// (any case): new ones created, the others replaced, those not given
// deleted.
func (s *session) syncTests(ctx context.Context, id string, tests []*platformv1.AutomationTest) error {
	have := map[string]*platformv1.AutomationTest{}
	token := ""
	for {
		page, err := s.c.Tests.ListAutomationTests(ctx, &platformv1.ListAutomationTestsRequest{OrganizationId: s.org, WorkspaceId: s.ws,
			AutomationId: id, PageSize: 1000, PageToken: token})
		if err != nil {
			return apiErr(err)
		}
		for _, t := range page.GetTests() {
			have[strings.ToLower(strings.TrimSpace(t.GetDisplayName()))] = t
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	for _, t := range tests {
		key := strings.ToLower(strings.TrimSpace(t.GetDisplayName()))
		old, ok := have[key]
		delete(have, key)
		var err error
		switch {
		case ok && sameTest(old, t):
			// unchanged: no new draft version
		case ok:
			_, err = s.c.Tests.UpdateAutomationTest(ctx, &platformv1.UpdateAutomationTestRequest{OrganizationId: s.org, WorkspaceId: s.ws,
				AutomationId: id, TestId: names.ID(old.GetName()), Test: t})
		default:
			_, err = s.c.Tests.CreateAutomationTest(ctx, &platformv1.CreateAutomationTestRequest{OrganizationId: s.org, WorkspaceId: s.ws,
				AutomationId: id, Test: t})
		}
		if err != nil {
			return apiErr(err)
		}
	}
	for _, old := range have {
		if _, err := s.c.Tests.DeleteAutomationTest(ctx, &platformv1.DeleteAutomationTestRequest{OrganizationId: s.org, WorkspaceId: s.ws,
			AutomationId: id, TestId: names.ID(old.GetName())}); err != nil {
			return apiErr(err)
		}
	}
	return nil
}
