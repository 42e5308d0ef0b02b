package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

func newRunsCmd() *cobra.Command {
	f := &clientFlags{}
	return clientGroup("runs", "List, read, watch, pause, continue and cancel runs",
		`Work with the runs of a workspace on a running server. A run is named by its
id (any automation), its full name, or its number in its automation as the
tables show it: "Invoices #42" (title or id, then #N), or "#42" when only
one automation has a run 42.`,
		`  prose runs list --state "awaiting guidance" --automation Invoices
  prose runs watch RUN
  prose runs pause RUN --reason "waiting for the supplier"`,
		f,
		runsList(f), runsGet(f), runsWatch(f), runsEvents(f), runsPause(f), runsContinue(f), runsCancel(f))
}

func runsList(f *clientFlags) *cobra.Command {
	var automation, filter, orderBy, state string
	var limit int
	var w watchFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: `List the runs of the workspace (or of one automation with --automation: its
title or id), newest first. --state keeps the runs in one state (any case:
pending, executing, "awaiting guidance", completed, failed, stopped).
--filter takes the API's AIP-160 filter, e.g. state = failed or
create_time > "2026-01-01T00:00:00Z"; both are ANDed. The # column is the
run's number in its automation (Invoices #42), beside its id.`,
		Example: "  prose runs list --automation Invoices --state \"awaiting guidance\"\n  prose runs list --filter 'state = failed' -o json\n  prose runs list --watch",
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: f.clientRun("", nil, func(cmd *cobra.Command, s *session, _ string, _ []string) error {
			a := "-"
			if automation != "" {
				var err error
				if a, err = s.automationID(cmd.Context(), automation); err != nil {
					return err
				}
			}
			st := ""
			if state != "" {
				st = "state = \"" + state + "\""
			}
			flt := normalizeStateFilter(joinFilters(st, filter), false)
			return w.loop(cmd, s, func() (string, error) {
				all, err := listAll(limit, func(size int32, token string) ([]*platformv1.Run, string, error) {
					resp, err := s.c.Runs.ListRuns(cmd.Context(), &platformv1.ListRunsRequest{
						OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: a, Filter: flt, OrderBy: orderBy, PageSize: size, PageToken: token})
					return resp.GetRuns(), resp.GetNextPageToken(), err
				})
				if err != nil {
					return "", err
				}
				rows := make([][]string, 0, len(all))
				for _, r := range all {
					_, _, aut, id, _ := names.ParseRun(r.GetName())
					rows = append(rows, []string{id, runNumber(r), s.automationTitle(cmd.Context(), aut), stateWords(client.StateName(r)), timeText(r.GetCreateTime()), timeText(r.GetUpdateTime())})
				}
				return s.render(&platformv1.ListRunsResponse{Runs: all}, []string{"ID", "#", "AUTOMATION", "STATE", "CREATED", "UPDATED"}, rows)
			})
		}),
	}
	cmd.Flags().StringVar(&automation, "automation", "", "only the runs of this automation (title, id or name)")
	cmd.Flags().StringVar(&state, "state", "", "only the runs in this state (any case)")
	cmd.Flags().StringVar(&filter, "filter", "", "an AIP-160 filter, as the API takes it")
	cmd.Flags().StringVar(&orderBy, "order-by", "", "an AIP-132 order, as the API takes it")
	cmd.Flags().IntVar(&limit, "limit", 50, "the most runs to list")
	w.register(cmd)
	return cmd
}

// getRun reads the run of ref.
func (s *session) getRun(cmd *cobra.Command, ref string) (*platformv1.Run, error) {
	a, id, err := s.runRef(cmd.Context(), ref)
	if err != nil {
		return nil, err
	}
	r, err := s.c.GetRun(cmd.Context(), names.Run(s.org, s.ws, a, id))
	return r, apiErr(err)
}

// showRun prints a run and returns the exit code its state means: 0
// completed (or still going), 1 failed or stopped, 3 awaiting guidance.
func (s *session) showRun(r *platformv1.Run) error {
	if s.json {
		if err := s.printJSON(r); err != nil {
			return err
		}
	} else {
		st := r.GetState()
		_, _, aut, _, _ := names.ParseRun(r.GetName())
		invoker := ""
		if u := r.GetInvocationDetails().GetUserId(); u != "" {
			invoker = s.person(s.ctx, u)
		}
		s.fields("name", r.GetName(), "number", runNumber(r), "automation", s.automationTitle(s.ctx, aut), "invoked by", invoker, "state", stateWords(client.StateName(r)), "stage", strings.TrimPrefix(r.GetStage().String(), "AUTOMATION_STAGE_"),
			"created", timeText(r.GetCreateTime()), "updated", timeText(r.GetUpdateTime()),
			"exception", client.ExceptionOf(r), "waits for", st.GetAwaitingGuidance().GetDescription(),
			"failure", st.GetFailed().GetDescription(), "stopped", st.GetStopped().GetReason()+st.GetStopping().GetReason())
		if outs, err := client.PlainMap(st.GetCompleted().GetOutputs()); err == nil && len(outs) > 0 {
			keys := make([]string, 0, len(outs))
			for k := range outs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			fmt.Fprintln(s.out, "outputs:")
			for _, k := range keys {
				fmt.Fprintf(s.out, "  %s: %s\n", k, plainText(outs[k], "  "))
			}
		}
	}
	switch client.StateName(r) {
	case "failed", "stopped":
		return exit(exitFailed)
	case "awaiting_guidance":
		return exit(exitAwaiting)
	}
	return nil
}

func runsGet(f *clientFlags) *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:               "get RUN",
		ValidArgsFunction: completeIDs(f, "run"),
		Short:             "Show a run: its state, outputs, or what it waits for",
		Long: `Show a run (by id, name or number: "Invoices #42"): its state, its outputs when it completed, the
exception it waits on, or why it failed. The exit code follows the state: 0
completed or still going, 1 failed or stopped, 3 awaiting guidance. --watch
follows it until it settles first (as 'runs watch').`,
		Example: "  prose runs get RUN\n  prose runs get 'Invoices #42'\n  prose runs get RUN --watch\n  prose runs get RUN --jq .state",
		Args:    exactArgs(1, "RUN"),
		RunE: f.clientRun("", nil, func(cmd *cobra.Command, s *session, _ string, args []string) error {
			r, err := s.getRun(cmd, args[0])
			if err != nil {
				return err
			}
			if watch {
				return s.follow(cmd, r, 0)
			}
			return s.showRun(r)
		}),
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "follow the run until it settles, printing its states")
	return cmd
}

func runsWatch(f *clientFlags) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:               "watch RUN",
		ValidArgsFunction: completeIDs(f, "run"),
		Short:             "Wait for a run to settle, printing its state as it changes",
		Long: `Follow a run until it completes, fails, stops or needs guidance, printing each
state it goes through (with -o json: the run as JSON at the end), then exit as
'runs get' does: 0 completed, 1 failed or stopped, 3 awaiting guidance.`,
		Example: "  prose runs watch RUN\n  prose runs watch RUN --timeout 5m",
		Args:    exactArgs(1, "RUN"),
		RunE: f.clientRun("", nil, func(cmd *cobra.Command, s *session, _ string, args []string) error {
			r, err := s.getRun(cmd, args[0])
			if err != nil {
				return err
			}
			return s.follow(cmd, r, timeout)
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (exit 1); 0: never")
	return cmd
}

// follow polls a run until it settles (or timeout, when positive),
// printing each state it enters, then shows it as 'runs get' does.
func (s *session) follow(cmd *cobra.Command, r *platformv1.Run, timeout time.Duration) error {
	ctx := cmd.Context()
	if timeout > 0 {
		var cancel func()
		ctx, cancel = contextWithTimeout(ctx, timeout)
		defer cancel()
	}
	last := ""
	wait := 20 * time.Millisecond
	for {
		if st := client.StateName(r); st != last && !s.json {
			fmt.Fprintf(s.out, "%s  %s\n", time.Now().Format(time.TimeOnly), stateWords(st))
			last = st
		}
		if client.Settled(r) {
			break
		}
		select {
		case <-ctx.Done():
			return &exitError{code: exitFailed, err: fmt.Errorf("the run is still %s: %w", stateWords(client.StateName(r)), ctx.Err())}
		case <-time.After(wait):
		}
		if wait = wait * 3 / 2; wait > time.Second {
			wait = time.Second
		}
		var err error
		if r, err = s.c.GetRun(ctx, r.GetName()); err != nil {
			return apiErr(err)
		}
	}
	return s.showRun(r)
}

func runsEvents(f *clientFlags) *cobra.Command {
	var agent string
	var filter string
	cmd := &cobra.Command{
		Use:               "events RUN",
		ValidArgsFunction: completeIDs(f, "run"),
		Short:             "Show a run's history: its states, what it said, its book calls, its exceptions",
		Long: `Show a run's history, oldest first (ListRunEvents): the states it entered,
what it said, the books it called with their inputs and outputs, the runs it
started, the exceptions it raised and who resolved them. --filter narrows it
by node_kind (for example 'node_kind = "Say"'). With --agent, the events of
its conversation with that agent follow.`,
		Example: "  prose runs events RUN\n  prose runs events RUN --filter 'node_kind = \"FunctionCall\"' -o json\n  prose runs events RUN --agent prose",
		Args:    exactArgs(1, "RUN"),
		RunE: f.clientRun("", nil, func(cmd *cobra.Command, s *session, _ string, args []string) error {
			r, err := s.getRun(cmd, args[0])
			if err != nil {
				return err
			}
			_, _, a, id, _ := names.ParseRun(r.GetName())
			history := &platformv1.ListRunEventsResponse{}
			req := &platformv1.ListRunEventsRequest{
				OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: a, RunId: id, PageSize: 1000, Filter: filter,
			}
			for {
				page, err := s.c.History.ListRunEvents(cmd.Context(), req)
				if err != nil {
					return apiErr(err)
				}
				history.RunEvents = append(history.RunEvents, page.GetRunEvents()...)
				if page.GetNextPageToken() == "" {
					break
				}
				req.PageToken = page.GetNextPageToken()
			}
			var evs *platformv1.ListEventsResponse
			if agent != "" {
				evs, err = s.c.Events.ListEvents(cmd.Context(), &platformv1.ListEventsRequest{
					OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: a, RunId: id, AgentId: agent, PageSize: 1000,
				})
				if err != nil {
					return apiErr(err)
				}
			}
			if s.json {
				if err := s.printJSON(history); err != nil {
					return err
				}
				if evs != nil {
					return s.printJSON(evs)
				}
				return nil
			}
			fmt.Fprintf(s.out, "run %s is %s\n", r.GetName(), stateWords(client.StateName(r)))
			rows := [][]string{}
			for _, e := range history.GetRunEvents() {
				rows = append(rows, s.historyRow(e))
			}
			s.table([]string{"TIME", "WHAT", "KIND", "TEXT"}, rows)
			if evs != nil {
				rows = rows[:0]
				for _, e := range evs.GetEvents() {
					rows = append(rows, []string{timeText(e.GetCreateTime()), "event " + names.ID(e.GetName()), eventKind(e), eventText(e)})
				}
				fmt.Fprintf(s.out, "\nconversation with %s\n", agent)
				s.table([]string{"TIME", "WHAT", "KIND", "TEXT"}, rows)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&filter, "filter", "", "AIP-160 filter on node_kind")
	cmd.Flags().StringVar(&agent, "agent", "", "also show the run's conversation with this agent (prose: the built-in one)")
	return cmd
}

// historyRow is a table row of one entry of a run's history.
func (s *session) historyRow(e *platformv1.RunEvent) []string {
	if u := e.GetRunUpdate(); u != nil {
		return []string{timeText(u.GetRun().GetUpdateTime()), "state", stateWords(client.StateName(u.GetRun())), ""}
	}
	j := e.GetExecutionJournal()
	when := timeText(j.GetEventTime())
	switch {
	case j.GetNodeExecuted() != nil:
		n := j.GetNodeExecuted()
		var text string
		switch n.GetNodeKind() {
		case "Say":
			text = n.GetOutputs()["text"].GetText()
		case "FunctionCall":
			c := n.GetBookFunctionCall()
			text = c.GetBookFunction().GetFunctionName() + " of " + c.GetBookFunction().GetBookName()
			if out, err := client.PlainJSON(c.GetOutput()); err == nil && c.GetOutput() != nil {
				text += " → " + string(out)
			}
		case "StartRun":
			text = "started run " + names.ID(n.GetOutputs()["run"].GetText())
		case "Exception":
			text = "exception " + names.ID(j.GetExtraMetadata()["exception"].GetText()) + " " + strings.ToLower(j.GetExtraMetadata()["exception_state"].GetText())
		}
		return []string{when, "node", n.GetNodeKind(), oneLine(text, 80)}
	case j.GetNodePatched() != nil:
		text := "resolved"
		if r := j.GetExtraMetadata()["resolver"]; r != nil {
			text += " by " + s.person(s.ctx, r.GetText())
		}
		return []string{when, "guidance", j.GetNodePatched().GetNodeKind(), oneLine(text, 80)}
	case j.GetStopped() != nil:
		return []string{when, "execution", "stopped", ""}
	case j.GetCompleted() != nil:
		return []string{when, "execution", "completed", ""}
	case j.GetFailed() != nil:
		return []string{when, "execution", "failed", ""}
	case j.GetStarted() != nil:
		return []string{when, "execution", "started", ""}
	}
	return []string{when, "journal", "", ""}
}

func eventKind(e *platformv1.Event) string {
	switch e.GetPayload().(type) {
	case *platformv1.Event_UserMessage:
		return "user"
	case *platformv1.Event_AgentMessage:
		return "agent"
	case *platformv1.Event_ToolCallRequest:
		return "tool call"
	case *platformv1.Event_ToolCallResult:
		return "tool result"
	case *platformv1.Event_Thinking:
		return "thinking"
	case *platformv1.Event_SystemMessage:
		return "system"
	case *platformv1.Event_CompletionResponse:
		return "completion"
	}
	return ""
}

func eventText(e *platformv1.Event) string {
	t := e.GetUserMessage().GetContent() + e.GetAgentMessage().GetContent() + e.GetSystemMessage().GetContent() +
		e.GetToolCallRequest().GetDisplayName() + e.GetToolCallResult().GetResult() + e.GetCompletionResponse().GetContent()
	return oneLine(t, 80)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func runsPause(f *clientFlags) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:               "pause RUN --reason TEXT",
		ValidArgsFunction: completeIDs(f, "run"),
		Short:             "Pause a run, with a reason",
		Long: `Pause a run: an executing run stops at its next step (stopping, then
stopped), a pending or waiting one at once. The reason stays on the stopped
state; 'prose runs continue' resumes it.`,
		Example: "  prose runs pause RUN --reason \"the supplier's data is late\"",
		Args:    exactArgs(1, "RUN"),
		RunE: f.clientRun("", func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageErr("--reason is required")
			}
			return nil
		}, func(cmd *cobra.Command, s *session, _ string, args []string) error {
			return s.pauseRun(cmd.Context(), args[0], reason)
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the run is paused (required)")
	return cmd
}

func runsContinue(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:               "continue RUN",
		ValidArgsFunction: completeIDs(f, "run"),
		Short:             "Continue a paused run",
		Long:              "Put a stopped run back to pending (or awaiting guidance, when its exception is still pending).",
		Example:           "  prose runs continue RUN",
		Args:              exactArgs(1, "RUN"),
		RunE: f.clientRun("", nil, func(cmd *cobra.Command, s *session, _ string, args []string) error {
			a, id, err := s.runRef(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			r, err := s.c.Runs.ContinueRun(cmd.Context(), &platformv1.ContinueRunRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: a, RunId: id})
			return s.showRunState(r, err)
		}),
	}
}

// pauseRun pauses the run of ref with reason (runs pause and runs cancel).
func (s *session) pauseRun(ctx context.Context, ref, reason string) error {
	a, id, err := s.runRef(ctx, ref)
	if err != nil {
		return err
	}
	r, err := s.c.Runs.PauseRun(ctx, &platformv1.PauseRunRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: a, RunId: id, Reason: reason})
	return s.showRunState(r, err)
}

// showRunState prints the run an action answered (or its error): its
// name and state, or the run itself with -o json.
func (s *session) showRunState(r *platformv1.Run, err error) error {
	if err != nil {
		return apiErr(err)
	}
	if s.json {
		return s.printJSON(r)
	}
	fmt.Fprintf(s.out, "%s is %s\n", r.GetName(), stateWords(client.StateName(r)))
	return nil
}
