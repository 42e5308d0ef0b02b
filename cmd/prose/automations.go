package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

func newAutomationsCmd() *cobra.Command {
	f := &clientFlags{}
	return clientGroup("automations", "List, create, update, publish, invoke and delete automations",
		`Work with the automations of a workspace on a running server: list and read
them, create one from a program file, update its draft, publish the draft, and
invoke it (start a run) with inputs typed on the command line.`,
		`  prose automations list
  prose automations create --file examples/invoice.prose --title Invoices --publish
  prose automations invoke AUTOMATION --input invoice_total=120.50 --wait`,
		f,
		automationsList(f), automationsGet(f), automationsCreate(f), automationsUpdate(f), automationsPublish(f), automationsInvoke(f), automationsDelete(f),
		automationsTest(f), automationsReplay(f))
}

func automationsList(f *clientFlags) *cobra.Command {
	var filter, orderBy string
	var limit int
	var deleted bool
	var w watchFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the automations of the workspace",
		Long: `List the automations of the workspace, newest first unless --order-by says
otherwise. --filter takes the API's AIP-160 filter (fields: display_name,
create_time, update_time, …), e.g. display_name:"invoice".`,
		Example: "  prose automations list\n  prose automations list --filter 'display_name:\"invoice\"' -o json",
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: f.clientRun("", nil, func(cmd *cobra.Command, s *session, _ string, _ []string) error {
			return w.loop(cmd, s, func() (string, error) {
				all, err := listAll(limit, func(size int32, token string) ([]*platformv1.Automation, string, error) {
					resp, err := s.c.Automations.ListAutomations(cmd.Context(), &platformv1.ListAutomationsRequest{
						OrganizationId: s.org, WorkspaceId: s.ws, Filter: filter, OrderBy: orderBy, PageSize: size, PageToken: token, ShowDeleted: deleted})
					return resp.GetAutomations(), resp.GetNextPageToken(), err
				})
				if err != nil {
					return "", err
				}
				rows := make([][]string, 0, len(all))
				for _, a := range all {
					rows = append(rows, []string{names.ID(a.GetName()), a.GetDisplayName(), a.GetVersion(), orDash(a.GetLatestPublishedVersion()), timeText(a.GetUpdateTime())})
				}
				return s.render(&platformv1.ListAutomationsResponse{Automations: all}, []string{"ID", "TITLE", "VERSION", "PUBLISHED", "UPDATED"}, rows)
			})
		}),
	}
	cmd.Flags().StringVar(&filter, "filter", "", "an AIP-160 filter, as the API takes it")
	cmd.Flags().StringVar(&orderBy, "order-by", "", "an AIP-132 order, as the API takes it (update_time desc)")
	cmd.Flags().IntVar(&limit, "limit", 50, "the most automations to list")
	cmd.Flags().BoolVar(&deleted, "deleted", false, "list the deleted automations too")
	w.register(cmd)
	return cmd
}

// pageSize is the page size to ask for the rest of limit.
func pageSize(limit, have int) int32 {
	n := limit - have
	if n > 1000 {
		n = 1000
	}
	if n < 1 {
		n = 1
	}
	return int32(n) //nolint:gosec // bounded above
}

func orDash(s string) string {
	if s == "" || s == "0" {
		return "-"
	}
	return s
}

func automationsGet(f *clientFlags) *cobra.Command {
	var code bool
	cmd := &cobra.Command{
		Use:               "get AUTOMATION",
		ValidArgsFunction: completeIDs(f, "automation"),
		Short:             "Show an automation",
		Long:              "Show an automation (by id or name): its title, versions, share ids, and with --code its program.",
		Example:           "  prose automations get invoices --code\n  prose automations get organizations/o/workspaces/w/automations/invoices -o json",
		Args:              exactArgs(1, "AUTOMATION"),
		RunE: f.clientRun("automation", nil, func(cmd *cobra.Command, s *session, id string, args []string) error {
			a, err := s.c.Automations.GetAutomation(cmd.Context(), &platformv1.GetAutomationRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: id})
			if err != nil {
				return apiErr(err)
			}
			return s.showAutomation(a, code)
		}),
	}
	cmd.Flags().BoolVar(&code, "code", false, "print the program too")
	return cmd
}

func (s *session) showAutomation(a *platformv1.Automation, code bool) error {
	if s.json {
		return s.printJSON(a)
	}
	s.fields("name", a.GetName(), "title", a.GetDisplayName(), "description", a.GetDescription(),
		"version", a.GetVersion(), "published", orDash(a.GetLatestPublishedVersion()),
		"draft share id", a.GetDraftShareId(), "published share id", a.GetPublishedShareId(),
		"updated", timeText(a.GetUpdateTime()), "deleted", timeText(a.GetDeleteTime()))
	if code {
		fmt.Fprintf(s.out, "\n%s", a.GetEnglishCode())
		if !strings.HasSuffix(a.GetEnglishCode(), "\n") {
			fmt.Fprintln(s.out)
		}
	}
	return nil
}

// exactArgs wants n arguments, named what in the error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			if len(args) < n {
				return usageErr("missing %s", what)
			}
			return usageErr("unexpected argument %q (want %s)", args[n], what)
		}
		return nil
	}
}

func readCode(file string) (string, error) {
	if file == "" {
		return "", usageErr("--file is required")
	}
	b, err := os.ReadFile(file) //nolint:gosec // G304: the user names the file
	if err != nil {
		return "", usageErr("%v", err)
	}
	return string(b), nil
}

func automationsCreate(f *clientFlags) *cobra.Command {
	var code string // the program of --file, read before connecting
	var file, title, id, description string
	var publish bool
	cmd := &cobra.Command{
		Use:   "create --file FILE",
		Short: "Create an automation from a program file",
		Long: `Create an automation whose draft is the program of --file (parsed by the server:
a syntax error is refused with its place). The title defaults to the file's
name; the id defaults to a slug of the title (Monthly invoices: monthly-invoices,
then monthly-invoices-2, …); --publish publishes the draft at once, so that it
can be invoked.`,
		Example: "  prose automations create --file examples/invoice.prose --title Invoices --publish\n  prose automations create --file examples/invoice.prose --title Invoices --id invoices",
		Args:    noArgs,
		RunE: f.clientRun("", func(cmd *cobra.Command, _ []string) error {
			var err error
			if code, err = readCode(file); err != nil {
				return err
			}
			return nil
		}, func(cmd *cobra.Command, s *session, _ string, _ []string) error {
			if title == "" {
				title = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
			}
			a, err := s.c.Automations.CreateAutomation(cmd.Context(), &platformv1.CreateAutomationRequest{
				OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: id,
				Automation: &platformv1.Automation{DisplayName: title, EnglishCode: code, Description: description},
			})
			if err != nil {
				return apiErr(err)
			}
			if publish {
				if a, err = s.c.Automations.PublishAutomation(cmd.Context(), &platformv1.PublishAutomationRequest{
					OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: names.ID(a.GetName()),
				}); err != nil {
					return apiErr(err)
				}
			}
			return s.showAutomation(a, false)
		}),
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "", "the program file (required)")
	fl.StringVar(&title, "title", "", "the title (default: the file's name)")
	fl.StringVar(&id, "id", "", "the automation's id (default: a slug of the title: invoices, invoices-2, …)")
	fl.StringVar(&description, "description", "", "a description")
	fl.BoolVar(&publish, "publish", false, "publish the draft at once")
	return cmd
}

func automationsUpdate(f *clientFlags) *cobra.Command {
	var a *platformv1.Automation // the new values, and the paths they update
	var paths []string
	var file, title, description, testsFile string
	var tests []*platformv1.AutomationTest // the tests of --tests, read before connecting
	var publish bool
	cmd := &cobra.Command{
		Use:               "update AUTOMATION [--file FILE] [--title T]",
		ValidArgsFunction: completeIDs(f, "automation"),
		Short:             "Update an automation's draft: its program, title or description",
		Long: `Update the draft of an automation: its program (--file), its title or its
description; only what is given changes. --tests makes the draft's tests those
of a tests file (NAME.tests.yaml, matched by name: new ones created, changed ones
updated, others deleted). --publish publishes the new draft.`,
		Example: `  prose automations update invoices --file examples/invoice.prose --publish
  prose automations update invoices --tests examples/invoice.tests.yaml`,
		Args: exactArgs(1, "AUTOMATION"),
		RunE: f.clientRun("automation", func(cmd *cobra.Command, args []string) error {
			a = &platformv1.Automation{DisplayName: title, Description: description}
			paths = nil
			if file != "" {
				code, err := readCode(file)
				if err != nil {
					return err
				}
				a.EnglishCode = code
				paths = append(paths, "english_code")
			}
			if cmd.Flags().Changed("title") {
				paths = append(paths, "display_name")
			}
			if cmd.Flags().Changed("description") {
				paths = append(paths, "description")
			}
			if testsFile != "" {
				var err error
				if tests, err = readTestsFile(testsFile); err != nil {
					return err
				}
			}
			if len(paths) == 0 && !publish && testsFile == "" {
				return usageErr("nothing to update: give --file, --title, --description, --tests or --publish")
			}
			return nil
		}, func(cmd *cobra.Command, s *session, id string, args []string) error {
			var err error
			if len(paths) > 0 {
				if a, err = s.c.Automations.UpdateAutomation(cmd.Context(), &platformv1.UpdateAutomationRequest{
					OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: id, Automation: a,
					UpdateMask: &fieldmaskpb.FieldMask{Paths: paths},
				}); err != nil {
					return apiErr(err)
				}
			}
			if testsFile != "" {
				if err := s.syncTests(cmd.Context(), id, tests); err != nil {
					return err
				}
				if a, err = s.c.Automations.GetAutomation(cmd.Context(), &platformv1.GetAutomationRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: id}); err != nil {
					return apiErr(err)
				}
			}
			if publish {
				if a, err = s.c.Automations.PublishAutomation(cmd.Context(), &platformv1.PublishAutomationRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: id}); err != nil {
					return apiErr(err)
				}
			}
			return s.showAutomation(a, false)
		}),
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "", "the new program file")
	fl.StringVar(&title, "title", "", "the new title")
	fl.StringVar(&description, "description", "", "the new description")
	fl.StringVar(&testsFile, "tests", "", "a tests file whose tests become the draft's")
	fl.BoolVar(&publish, "publish", false, "publish the draft afterwards")
	return cmd
}

func automationsPublish(f *clientFlags) *cobra.Command {
	var force bool
	var reason string
	var runs int32
	cmd := &cobra.Command{
		Use:               "publish AUTOMATION",
		ValidArgsFunction: completeIDs(f, "automation"),
		Short:             "Publish an automation's draft",
		Long: `Copy the draft of an automation to its published stage, the one invoke runs by
default. The server first runs the draft's tests and replays the last finished
runs of the published version against it (--replay-runs, default 100): a test
that fails or a run the draft changes refuses the publish, each listed on a
line. --force with --reason publishes anyway; the revision keeps the reason
(docs/safe-change.md).`,
		Example: `  prose automations publish invoices
  prose automations publish invoices --force --reason "the tax rate is 8% from July"`,
		Args: exactArgs(1, "AUTOMATION"),
		RunE: f.clientRun("automation", func(cmd *cobra.Command, args []string) error {
			if force != (reason != "") {
				return usageErr("--force and --reason go together: a forced publish says why")
			}
			return nil
		}, func(cmd *cobra.Command, s *session, id string, args []string) error {
			a, err := s.c.Automations.PublishAutomation(cmd.Context(), &platformv1.PublishAutomationRequest{OrganizationId: s.org, WorkspaceId: s.ws,
				AutomationId: id, Force: force, ForceReason: reason, ReplayRunCount: runs})
			if err != nil {
				return apiErr(err)
			}
			return s.showAutomation(a, false)
		}),
	}
	fl := cmd.Flags()
	fl.BoolVar(&force, "force", false, "publish even though a test fails or the replay changes runs (with --reason)")
	fl.StringVar(&reason, "reason", "", "why a forced publish goes on, kept in the revision")
	fl.Int32Var(&runs, "replay-runs", 0, "how many finished runs of the published version to replay first (default 100, at most 1000)")
	return cmd
}

func automationsInvoke(f *clientFlags) *cobra.Command {
	var in map[string]any // the inputs, parsed before connecting
	var inputs []string
	var inputsJSON, requestID string
	var draft, wait bool
	cmd := &cobra.Command{
		Use:               "invoke AUTOMATION [--input name=value]...",
		ValidArgsFunction: completeIDs(f, "automation"),
		Short:             "Start a run of an automation with inputs",
		Long: `Start a run of an automation's published stage (--draft: its draft) and print
the run's id. Inputs are name=value pairs: the value is read as JSON when it is
JSON (120.50 stays 120.50, true, "text", [1,2], {"a":1}), else as text; or a
JSON object with --inputs. --wait waits until the run completes, fails, stops
or needs guidance, prints it, and exits 0, 1, 1 or 3.`,
		Example: `  prose automations invoke invoices --input invoice_total=120.50
  prose automations invoke invoices --inputs '{"invoice_total": 120.50}' --wait -o json`,
		Args: exactArgs(1, "AUTOMATION"),
		RunE: f.clientRun("automation", func(cmd *cobra.Command, args []string) error {
			var err error
			if in, err = parseAssignments("input", inputs); err != nil {
				return err
			}
			if inputsJSON != "" {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(inputsJSON), &m); err != nil {
					return usageErr("--inputs: want a JSON object: %v", err)
				}
				for k, v := range m {
					in[k] = v
				}
			}
			return nil
		}, func(cmd *cobra.Command, s *session, id string, args []string) error {
			var opts []client.InvokeOption
			if draft {
				opts = append(opts, client.Draft())
			}
			if requestID != "" {
				opts = append(opts, client.RequestID(requestID))
			}
			run, err := s.c.Invoke(cmd.Context(), names.Automation(s.org, s.ws, id), in, opts...)
			if err != nil {
				return apiErr(err)
			}
			if !wait {
				if s.json {
					return s.emit(map[string]any{"run": run, "run_id": names.ID(run)})
				}
				fmt.Fprintln(s.out, names.ID(run))
				return nil
			}
			r, err := s.c.WaitForRun(cmd.Context(), run)
			if err != nil {
				return apiErr(err)
			}
			return s.showRun(r)
		}),
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&inputs, "input", "i", nil, "an input as name=value (repeat)")
	fl.StringVar(&inputsJSON, "inputs", "", "the inputs as one JSON object")
	fl.BoolVar(&draft, "draft", false, "run the draft instead of the published stage")
	fl.BoolVar(&wait, "wait", false, "wait for the run to settle and print it")
	fl.StringVar(&requestID, "request-id", "", "an idempotency key: invoking again with it returns the first run")
	return cmd
}
