package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

func newExceptionsCmd() *cobra.Command {
	f := &clientFlags{}
	return clientGroup("exceptions", "List, read, assign, resolve and archive the exceptions runs wait on",
		`Work with the exceptions of a workspace on a running server: a run that cannot
go on (a value nobody gave it, a question, a failed check) raises one and waits
until a person resolves it.`,
		`  prose exceptions list --state pending --automation Invoices
  prose exceptions resolve EXCEPTION --value 'invoice total=120.50'
  prose exceptions resolve EXCEPTION --skip`,
		f,
		exceptionsList(f), exceptionsGet(f), exceptionsAssign(f), exceptionsResolve(f), exceptionsArchive(f), exceptionsUnarchive(f))
}

func excState(e *platformv1.Exception) string {
	return stateWords(e.GetState().String())
}

func exceptionsList(f *clientFlags) *cobra.Command {
	var filter, state, automation, assignee string
	var limit int
	var w watchFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List exceptions, newest first",
		Long: `List the exceptions of the workspace, newest first. --state (pending, resolved,
archived, any case), --automation (a title or an id) and --assignee (a name,
an email or an id; "none" for the unassigned) narrow it; --filter takes the
API's AIP-160 filter (state, automation, run, group, assignee, create_time),
and all of them are ANDed.`,
		Example: "  prose exceptions list --state pending --automation Invoices\n  prose exceptions list --filter 'state = pending' -o json\n  prose exceptions list --state pending --watch",
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: f.clientRun("", nil, func(cmd *cobra.Command, s *session, _ string, _ []string) error {
			clauses := []string{filter}
			if state != "" {
				clauses = append(clauses, "state = \""+state+"\"")
			}
			if automation != "" {
				a, err := s.automationID(cmd.Context(), automation)
				if err != nil {
					return err
				}
				clauses = append(clauses, fmt.Sprintf("automation = %q", a))
			}
			switch assignee {
			case "":
			case "none":
				clauses = append(clauses, `assignee = ""`)
			default:
				clauses = append(clauses, fmt.Sprintf("assignee = %q", s.userRef(cmd.Context(), assignee)))
			}
			flt := normalizeStateFilter(joinFilters(clauses...), true)
			return w.loop(cmd, s, func() (string, error) {
				all, err := listAll(limit, func(size int32, token string) ([]*platformv1.Exception, string, error) {
					resp, err := s.c.Exceptions.ListExceptions(cmd.Context(), &platformv1.ListExceptionsRequest{
						OrganizationId: s.org, WorkspaceId: s.ws, Filter: flt, PageSize: size, PageToken: token})
					return resp.GetExceptions(), resp.GetNextPageToken(), err
				})
				if err != nil {
					return "", err
				}
				rows := make([][]string, 0, len(all))
				for _, e := range all {
					_, _, _, run, _ := names.ParseRun(e.GetRun())
					rows = append(rows, []string{names.ID(e.GetName()), excState(e), s.automationTitle(cmd.Context(), e.GetAutomation()), run, excRunNumber(e),
						orDash(s.person(cmd.Context(), e.GetAssignee())), oneLine(e.GetMessage(), 60), timeText(e.GetCreateTime())})
				}
				return s.render(&platformv1.ListExceptionsResponse{Exceptions: all}, []string{"ID", "STATE", "AUTOMATION", "RUN", "#", "ASSIGNEE", "MESSAGE", "CREATED"}, rows)
			})
		}),
	}
	cmd.Flags().StringVar(&state, "state", "", "only the exceptions in this state (any case)")
	cmd.Flags().StringVar(&automation, "automation", "", "only the exceptions of this automation (title, id or name)")
	cmd.Flags().StringVar(&assignee, "assignee", "", "only the exceptions assigned to this person (name, email or id; none: unassigned)")
	cmd.Flags().StringVar(&filter, "filter", "", "an AIP-160 filter, as the API takes it")
	cmd.Flags().IntVar(&limit, "limit", 50, "the most exceptions to list")
	w.register(cmd)
	return cmd
}

func (s *session) showException(e *platformv1.Exception) error {
	if s.json {
		return s.printJSON(e)
	}
	g := e.GetGuidanceRequest()
	var choices []string
	for _, c := range g.GetChoices() {
		if b, err := client.PlainJSON(c); err == nil {
			choices = append(choices, string(b))
		}
	}
	s.fields("name", e.GetName(), "state", excState(e), "automation", s.automationTitle(s.ctx, e.GetAutomation()), "run", e.GetRun(), "message", e.GetMessage(),
		"description", e.GetDescription(), "group", e.GetGroup(), "assignee", s.person(s.ctx, e.GetAssignee()), "resolver", s.person(s.ctx, e.GetResolver()),
		"facts asked", strings.Join(g.GetFacts(), ", "), "question", g.GetQuestion(), "choices", strings.Join(choices, " / "),
		"failed checks", strings.Join(g.GetFailedChecks(), "; "), "created", timeText(e.GetCreateTime()))
	return nil
}

func exceptionsGet(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:               "get EXCEPTION",
		ValidArgsFunction: completeIDs(f, "exception"),
		Short:             "Show an exception and the guidance it asks for",
		Long: `Show an exception (by id or name): its run, its message, and what guidance it
asks for (the facts to provide, the question and its choices, the failed checks).`,
		Example: "  prose exceptions get EXCEPTION\n  prose exceptions get EXCEPTION -o json",
		Args:    exactArgs(1, "EXCEPTION"),
		RunE: f.clientRun("exception", nil, func(cmd *cobra.Command, s *session, id string, args []string) error {
			e, err := s.c.Exceptions.GetException(cmd.Context(), &platformv1.GetExceptionRequest{OrganizationId: s.org, WorkspaceId: s.ws, ExceptionId: id})
			if err != nil {
				return apiErr(err)
			}
			return s.showException(e)
		}),
	}
}

func exceptionsAssign(f *clientFlags) *cobra.Command {
	var to string
	var unassign bool
	cmd := &cobra.Command{
		Use:               "assign EXCEPTION --to USER",
		ValidArgsFunction: completeIDs(f, "exception"),
		Short:             "Assign an exception to a member of the workspace",
		Long:              "Assign an exception to a member of the workspace (a name, an email, users/{u} or the id); --unassign clears the assignee.",
		Example:           "  prose exceptions assign EXCEPTION --to ann@example.com\n  prose exceptions assign EXCEPTION --unassign",
		Args:              exactArgs(1, "EXCEPTION"),
		RunE: f.clientRun("exception", func(cmd *cobra.Command, args []string) error {
			if (to == "") == !unassign {
				return usageErr("give --to USER or --unassign")
			}
			return nil
		}, func(cmd *cobra.Command, s *session, id string, args []string) error {
			assignee := ""
			if to != "" {
				assignee = s.userRef(cmd.Context(), to)
			}
			e, err := s.c.Exceptions.AssignException(cmd.Context(), &platformv1.AssignExceptionRequest{OrganizationId: s.org, WorkspaceId: s.ws, ExceptionId: id, Assignee: assignee})
			if err != nil {
				return apiErr(err)
			}
			return s.showException(e)
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "the person: a name, an email, users/{u} or the id")
	cmd.Flags().BoolVar(&unassign, "unassign", false, "clear the assignee")
	return cmd
}

func exceptionsResolve(f *clientFlags) *cobra.Command {
	var g []client.Guidance // the guidance of the flags, read before connecting
	var values []string
	var answer, replaceFile, replace string
	var skip, retry, wait bool
	cmd := &cobra.Command{
		Use:               "resolve EXCEPTION (--value 'fact=value'... | --answer VALUE | --skip | --retry | --replace-file FILE)",
		ValidArgsFunction: completeIDs(f, "exception"),
		Short:             "Resolve an exception with guidance; the run goes on",
		Long: `Resolve an exception with one kind of guidance, and the run goes on:
  --value 'invoice total=120.50'  the value of a fact the run misses (repeat for several);
                                  the value is JSON when it is JSON, else text
  --answer VALUE                  the answer to the run's question
  --skip                          go on past the step
  --retry                         execute the step again
  --replace-file FILE             replace the step with the code of FILE (--replace CODE: inline)
--wait then waits for the run to settle and prints it (exit 0, 1 or 3 as 'runs get').`,
		Example: `  prose exceptions resolve EXCEPTION --value 'invoice total=120.50'
  prose exceptions resolve EXCEPTION --answer manager --wait
  prose exceptions resolve EXCEPTION --replace-file fix.prose`,
		Args: exactArgs(1, "EXCEPTION"),
		RunE: f.clientRun("exception", func(cmd *cobra.Command, args []string) error {
			g = nil
			if len(values) > 0 {
				m, err := parseAssignments("value", values)
				if err != nil {
					return err
				}
				g = append(g, client.ProvideValues(m))
			}
			if cmd.Flags().Changed("answer") {
				g = append(g, client.Answer(plainArg(answer)))
			}
			if skip {
				g = append(g, client.Skip())
			}
			if retry {
				g = append(g, client.Retry())
			}
			if replaceFile != "" {
				b, err := os.ReadFile(replaceFile) //nolint:gosec // G304: the user names the file
				if err != nil {
					return usageErr("%v", err)
				}
				replace = string(b)
			}
			if replace != "" {
				g = append(g, client.ReplaceStep(replace))
			}
			if len(g) != 1 {
				return usageErr("give exactly one kind of guidance: --value, --answer, --skip, --retry or --replace-file")
			}
			return nil
		}, func(cmd *cobra.Command, s *session, id string, args []string) error {
			e, err := s.c.ResolveException(cmd.Context(), names.Exception(s.org, s.ws, id), g[0])
			if err != nil {
				return apiErr(err)
			}
			if !wait {
				return s.showException(e)
			}
			r, err := s.c.WaitForRun(cmd.Context(), e.GetRun())
			if err != nil {
				return apiErr(err)
			}
			return s.showRun(r)
		}),
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&values, "value", nil, "a fact's value as 'fact=value' (repeat)")
	fl.StringVar(&answer, "answer", "", "the answer to the question")
	fl.BoolVar(&skip, "skip", false, "go on past the step")
	fl.BoolVar(&retry, "retry", false, "execute the step again")
	fl.StringVar(&replaceFile, "replace-file", "", "replace the step with the code of this file")
	fl.StringVar(&replace, "replace", "", "replace the step with this code")
	fl.BoolVar(&wait, "wait", false, "wait for the run to settle and print it")
	return cmd
}
