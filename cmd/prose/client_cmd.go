package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// defaultAddress is the address of a server nobody named: `prose serve`'s
// default.
const defaultAddress = "127.0.0.1:8080"

// clientFlags are the flags of the commands that talk to a server.
type clientFlags struct {
	address, apiKey, workspace, profile, output string
	// caFile, certFile and keyFile configure TLS: the roots that verify
	// the server (else the system's) and a client certificate for a
	// server that asks for one (mutual TLS).
	caFile, certFile, keyFile string
	// raw prints the API's JSON as it travels; jq filters the output.
	raw bool
	jq  string
	// login: the command writes the profile, so it need not exist yet.
	login bool
}

const clientFlagsHelp = `The server and the key come from --address and --api-key, else PROSE_ADDRESS
and PROSE_API_KEY, else the profile 'prose login' wrote; the workspace from
--workspace, else PROSE_WORKSPACE, else the profile, else the only workspace the
key can use. Names and ids are both accepted wherever a resource is named.
--ca-file, --cert-file and --key-file (else PROSE_CA_FILE, PROSE_CERT_FILE,
PROSE_KEY_FILE, else the profile's) speak TLS to a server with a private CA or
one that asks for a client certificate.`

func (f *clientFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.address, "address", "", "the server: host:port, http://host:port or https://host (TLS) (env PROSE_ADDRESS; default: the profile's, else "+defaultAddress+")")
	fs.StringVar(&f.apiKey, "api-key", "", "the API key (env PROSE_API_KEY; default: the profile's)")
	fs.StringVarP(&f.workspace, "workspace", "w", "", "the workspace: organizations/{o}/workspaces/{w} or its id (env PROSE_WORKSPACE; default: the profile's, else the key's only workspace)")
	fs.StringVar(&f.profile, "profile", "", "the profile of 'prose login' to use (env PROSE_PROFILE; default: the one of 'prose profiles switch', else default)")
	fs.StringVarP(&f.output, "output", "o", "table", "table for people, json or yaml for scripts (values as people write them)")
	fs.BoolVar(&f.raw, "raw", false, "with -o json, yaml or --jq: the API's JSON as it travels (values as Value messages)")
	fs.StringVar(&f.jq, "jq", "", "a jq expression applied to the JSON output (text results print bare)")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM file of the CA certificates that verify the server; implies TLS (env PROSE_CA_FILE; default: the profile's, else the system's roots)")
	fs.StringVar(&f.certFile, "cert-file", "", "PEM client certificate for a server that asks for one (mutual TLS), with --key-file; implies TLS (env PROSE_CERT_FILE; default: the profile's)")
	fs.StringVar(&f.keyFile, "key-file", "", "PEM private key of --cert-file (env PROSE_KEY_FILE; default: the profile's)")
}

// tlsFiles are the CA, certificate and key files of the flags, the
// environment or the profile (each on its own), as absolute paths.
type tlsFiles struct{ ca, cert, key string }

func (f *clientFlags) tlsFiles(prof profile) (tlsFiles, error) {
	t := tlsFiles{
		ca:   firstNonEmpty(f.caFile, os.Getenv("PROSE_CA_FILE"), prof.CAFile),
		cert: firstNonEmpty(f.certFile, os.Getenv("PROSE_CERT_FILE"), prof.CertFile),
		key:  firstNonEmpty(f.keyFile, os.Getenv("PROSE_KEY_FILE"), prof.KeyFile),
	}
	if (t.cert == "") != (t.key == "") {
		return t, usageErr("--cert-file and --key-file go together (or PROSE_CERT_FILE and PROSE_KEY_FILE)")
	}
	for _, p := range []*string{&t.ca, &t.cert, &t.key} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return t, usageErr("%s: %v", *p, err)
		}
		*p = abs
	}
	return t, nil
}

// config is the client's TLS configuration of the files, or nil when none
// is given (TLS then only for an https:// address, with the system's roots).
func (t tlsFiles) config() (*tls.Config, error) {
	if t == (tlsFiles{}) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.ca != "" {
		b, err := os.ReadFile(t.ca)
		if err != nil {
			return nil, usageErr("--ca-file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, usageErr("--ca-file %s: no PEM certificate in it", t.ca)
		}
		cfg.RootCAs = pool
	}
	if t.cert != "" {
		pair, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return nil, usageErr("--cert-file and --key-file: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// profile is what `prose login` keeps for a server.
type profile struct {
	Address   string `json:"address"`
	APIKey    string `json:"api_key"`
	Workspace string `json:"workspace,omitempty"`
	CAFile    string `json:"ca_file,omitempty"`
	CertFile  string `json:"cert_file,omitempty"`
	KeyFile   string `json:"key_file,omitempty"`
}

type profileFile struct {
	// Current is the profile of 'prose profiles switch': the one used
	// without --profile or PROSE_PROFILE ("default" when empty).
	Current  string             `json:"current,omitempty"`
	Profiles map[string]profile `json:"profiles"`
}

// profilePath is the file of the profiles: $PROSE_CONFIG, else
// prose/profiles.json in the user's configuration directory
// ($XDG_CONFIG_HOME or ~/.config on Linux, ~/Library/Application Support on
// macOS, %AppData% on Windows).
func profilePath() (string, error) {
	if p := os.Getenv("PROSE_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "prose", "profiles.json"), nil
}

func readProfiles() (profileFile, string, error) {
	path, err := profilePath()
	if err != nil {
		return profileFile{}, "", err
	}
	var pf profileFile
	b, err := os.ReadFile(path) //nolint:gosec // G304: the user's own configuration file
	if errors.Is(err, os.ErrNotExist) {
		return profileFile{Profiles: map[string]profile{}}, path, nil
	}
	if err != nil {
		return pf, path, err
	}
	if err := json.Unmarshal(b, &pf); err != nil {
		return pf, path, fmt.Errorf("%s: %w", path, err)
	}
	if pf.Profiles == nil {
		pf.Profiles = map[string]profile{}
	}
	return pf, path, nil
}

// writeProfiles writes the profiles readable by the user alone (0600): they
// hold API keys.
func writeProfiles(pf profileFile, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (f *clientFlags) profileName() string {
	if p := firstNonEmpty(f.profile, os.Getenv("PROSE_PROFILE")); p != "" {
		return p
	}
	pf, _, err := readProfiles()
	if err != nil {
		return "default"
	}
	return currentProfile(pf)
}

// session is a connection to a server and the workspace the commands work in.
type session struct {
	c       *client.Client
	ctx     context.Context // the command's
	org, ws string
	out     io.Writer
	// json: print a machine-readable document (-o json, -o yaml or --jq)
	// in the form of format; raw and jq as the flags say.
	json   bool
	format string
	raw    bool
	jq     *gojq.Code
	// names caches the display names of automations and people that
	// tables show instead of ids (names.go).
	names *nameCache
}

func (s *session) close() { _ = s.c.Close() }

func (s *session) workspaceName() string { return names.Workspace(s.org, s.ws) }

// connect dials the server of the flags, the environment or the profile.
// needWorkspace: the command works in a workspace (not keys).
func (f *clientFlags) connect(cmd *cobra.Command, needWorkspace bool) (*session, error) {
	jq, err := f.checkOutput()
	if err != nil {
		return nil, err
	}
	pf, path, err := readProfiles()
	if err != nil {
		return nil, &exitError{code: exitFailed, err: fmt.Errorf("read the profiles: %w", err)}
	}
	prof := pf.Profiles[f.profileName()]
	if f.profile != "" && !f.login && prof.Address == "" && prof.APIKey == "" {
		return nil, usageErr("no profile %q in %s (write it with: prose login --profile %s --address ADDRESS --api-key KEY)", f.profile, path, f.profile)
	}
	address := firstNonEmpty(f.address, os.Getenv("PROSE_ADDRESS"), prof.Address, defaultAddress)
	key := firstNonEmpty(f.apiKey, os.Getenv("PROSE_API_KEY"), prof.APIKey)
	if key == "" {
		return nil, &exitError{code: exitAuth, err: fmt.Errorf("no API key: pass --api-key, set PROSE_API_KEY, or sign in once with: prose login --address %s --api-key KEY (prose init and prose serve print a key)", address)}
	}
	files, err := f.tlsFiles(prof)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := files.config()
	if err != nil {
		return nil, err
	}
	var opts []client.Option
	if tlsCfg != nil {
		opts = append(opts, client.WithTLS(tlsCfg))
	}
	c, err := client.Dial(address, key, opts...)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	s := &session{c: c, ctx: cmd.Context(), out: cmd.OutOrStdout(), json: f.output != "table" || jq != nil, format: f.output, raw: f.raw, jq: jq}
	if !needWorkspace {
		if s.org, err = keyOrganization(cmd.Context(), c); err != nil {
			s.close()
			return nil, err
		}
		return s, nil
	}
	ws := firstNonEmpty(f.workspace, os.Getenv("PROSE_WORKSPACE"), prof.Workspace)
	if s.org, s.ws, err = resolveWorkspace(cmd.Context(), c, ws); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// keyOrganization is the organization of the client's key.
func keyOrganization(ctx context.Context, c *client.Client) (string, error) {
	resp, err := c.Organizations.ListCurrentUserOrganizations(ctx, &platformv1.ListCurrentUserOrganizationsRequest{})
	if err != nil {
		return "", apiErr(err)
	}
	if len(resp.GetUserOrganizations()) == 0 {
		return "", &exitError{code: exitAuth, err: errors.New("the key's organization is gone")}
	}
	return names.ID(resp.GetUserOrganizations()[0].GetName()), nil
}

// resolveWorkspace finds the workspace of a name, an id, or nothing (the
// key's only workspace).
func resolveWorkspace(ctx context.Context, c *client.Client, ws string) (string, string, error) {
	if org, id, ok := names.ParseWorkspace(ws); ok && org != "" && id != "" {
		return org, id, nil
	}
	org, err := keyOrganization(ctx, c)
	if err != nil {
		return "", "", err
	}
	if ws != "" {
		return org, names.ID(ws), nil
	}
	resp, err := c.Workspaces.ListCurrentUserWorkspaces(ctx, &platformv1.ListCurrentUserWorkspacesRequest{OrganizationId: org, PageSize: 2})
	if err != nil {
		return "", "", apiErr(err)
	}
	switch len(resp.GetUserWorkspaces()) {
	case 0:
		return "", "", &exitError{code: exitNotFound, err: errors.New("the key can use no workspace")}
	case 1:
		_, id, _ := names.ParseWorkspace(resp.GetUserWorkspaces()[0].GetName())
		return org, id, nil
	}
	return "", "", usageErr("the key can use several workspaces: name one with --workspace (or PROSE_WORKSPACE, or prose login --workspace)")
}

// apiErr maps an error of a call to the exit code it means, with the
// server's message and reason.
func apiErr(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return &exitError{code: exitFailed, err: err}
	}
	name := rpccode.Code(st.Code()).String() //nolint:gosec // a gRPC code fits
	msg := fmt.Sprintf("%s (%s)", st.Message(), name)
	for _, d := range st.Details() {
		if info, ok := d.(interface{ GetReason() string }); ok && info.GetReason() != "" {
			msg = fmt.Sprintf("%s (%s %s)", st.Message(), name, info.GetReason())
			break
		}
	}
	// what stands in the way of a FAILED_PRECONDITION, one per line (a
	// publish's failing tests and changed runs)
	for _, d := range st.Details() {
		if pf, ok := d.(*errdetails.PreconditionFailure); ok {
			for _, v := range pf.GetViolations() {
				msg += "\n  - " + v.GetDescription()
			}
		}
	}
	code := exitFailed
	switch st.Code() {
	case codes.NotFound:
		code = exitNotFound
	case codes.Unauthenticated, codes.PermissionDenied:
		code = exitAuth
	case codes.Unavailable, codes.DeadlineExceeded:
		code = exitUnavailable
		if strings.Contains(msg, "connection") || strings.Contains(msg, "dial") {
			msg = "the server cannot be reached; is it running at the address of --address, PROSE_ADDRESS or the profile? (" + msg + ")"
		}
	case codes.InvalidArgument:
		code = exitUsage
	}
	return &exitError{code: code, err: errors.New(msg)}
}

var jsonOut = protojson.MarshalOptions{UseProtoNames: true}

// printJSON writes m in the machine-readable form of the flags (emit):
// values plain unless --raw.
func (s *session) printJSON(m proto.Message) error {
	doc, err := plainDoc(m, s.raw)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	return s.emit(doc)
}

// table writes rows under a header, aligned.
func (s *session) table(header []string, rows [][]string) {
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// fields writes "key: value" lines, aligned.
func (s *session) fields(kv ...string) {
	tw := tabwriter.NewWriter(s.out, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", kv[i], kv[i+1])
		}
	}
	_ = tw.Flush()
}

func timeText(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.AsTime().Local().Format(time.DateTime)
}

// parseAssignments parses k=v pairs (--input, --value): the value is JSON
// when it parses as JSON (120.50, true, "x", [1,2], {"a":1}), else text. The
// key may hold spaces ('invoice total=120.50'); it is cut at the first '='.
func parseAssignments(flag string, pairs []string) (map[string]any, error) {
	out := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, usageErr("--%s %q: write name=value", flag, p)
		}
		out[k] = plainArg(v)
	}
	return out, nil
}

// plainArg is the plain value of a command-line value: JSON when it is JSON
// (numbers keep their digits), else the text itself.
func plainArg(v string) any {
	t := strings.TrimSpace(v)
	if t != "" && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return v
}

// idIn returns the id of a resource given by name or id, checking that a
// name is in the session's workspace.
func (s *session) idIn(kind, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", usageErr("no %s given", kind)
	}
	if strings.Contains(ref, "/") && !strings.HasPrefix(ref, s.workspaceName()+"/") {
		return "", usageErr("%s %q is not in the workspace %s (name it by id, or pass --workspace)", kind, ref, s.workspaceName())
	}
	return names.ID(ref), nil
}

// runRef splits a run given by name (…/automations/{a}/runs/{r}), id (its
// automation then "-", any) or number in its automation ("Invoices #42",
// "invoices#42", or "#42" when one automation has a run #42).
func (s *session) runRef(ctx context.Context, ref string) (automation, run string, err error) {
	if m := runNumberRE.FindStringSubmatch(strings.TrimSpace(ref)); m != nil {
		return s.runByNumber(ctx, strings.TrimSpace(m[1]), m[2])
	}
	if org, ws, a, r, ok := names.ParseRun(ref); ok {
		if org != s.org || ws != s.ws {
			return "", "", usageErr("run %q is not in the workspace %s (pass --workspace)", ref, s.workspaceName())
		}
		return a, r, nil
	}
	if strings.Contains(ref, "/") {
		return "", "", usageErr("%q is neither a run id nor a run's name (%s)", ref, names.RunPattern)
	}
	if ref == "" {
		return "", "", usageErr("no run given")
	}
	return "-", ref, nil
}

// runNumberRE is a run named by its number: an automation (title, id or
// name; none for any) and #N.
var runNumberRE = regexp.MustCompile(`^(.*?)\s*#([0-9]{1,18})$`)

// runByNumber finds run #number of the automation (any automation of the
// workspace when automation is ""; several is a usage error naming them).
func (s *session) runByNumber(ctx context.Context, automation, number string) (string, string, error) {
	a, what := "-", "#"+number
	if automation != "" {
		var err error
		if a, err = s.automationID(ctx, automation); err != nil {
			return "", "", err
		}
		what = automation + " #" + number
	}
	resp, err := s.c.Runs.ListRuns(ctx, &platformv1.ListRunsRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: a,
		Filter: "run_number = " + number, PageSize: 10})
	if err != nil {
		return "", "", apiErr(err)
	}
	runs := resp.GetRuns()
	switch len(runs) {
	case 0:
		return "", "", &exitError{code: exitNotFound, err: fmt.Errorf("no run %s in the workspace %s", what, s.workspaceName())}
	case 1:
		_, _, aut, id, _ := names.ParseRun(runs[0].GetName())
		return aut, id, nil
	}
	titles := make([]string, 0, len(runs))
	for _, r := range runs {
		_, _, aut, _, _ := names.ParseRun(r.GetName())
		titles = append(titles, fmt.Sprintf("%q", s.automationTitle(ctx, aut)+" #"+number))
	}
	return "", "", usageErr("%d automations have a run %s: name one, e.g. %s", len(runs), what, strings.Join(titles, ", "))
}

// clientGroup makes a command group of client commands sharing the flags.
func clientGroup(use, short, long, example string, f *clientFlags, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long + "\n\n" + clientFlagsHelp,
		Example: example,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_ = cmd.Help()
			return exit(exitUsage)
		},
	}
	f.register(cmd.PersistentFlags())
	cmd.AddCommand(subs...)
	return cmd
}

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// completeIDs completes the argument of a client command with the ids of
// the workspace's automations, runs (newest first) or pending exceptions,
// asked of the server the flags, the environment or the profile name
// (within 3 s; nothing when it cannot be reached).
func completeIDs(f *clientFlags, kind string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
		defer cancel()
		cmd.SetContext(ctx)
		s, err := f.connect(cmd, true)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer s.close()
		var out []cobra.Completion
		switch kind {
		case "automation":
			resp, err := s.c.Automations.ListAutomations(ctx, &platformv1.ListAutomationsRequest{OrganizationId: s.org, WorkspaceId: s.ws, PageSize: 100})
			if err == nil {
				for _, a := range resp.GetAutomations() {
					out = append(out, cobra.CompletionWithDesc(names.ID(a.GetName()), a.GetDisplayName()))
				}
			}
		case "run":
			resp, err := s.c.Runs.ListRuns(ctx, &platformv1.ListRunsRequest{OrganizationId: s.org, WorkspaceId: s.ws, AutomationId: "-", PageSize: 50})
			if err == nil {
				for _, r := range resp.GetRuns() {
					_, _, a, id, _ := names.ParseRun(r.GetName())
					out = append(out, cobra.CompletionWithDesc(id, a+" "+client.StateName(r)))
				}
			}
		case "exception":
			resp, err := s.c.Exceptions.ListExceptions(ctx, &platformv1.ListExceptionsRequest{OrganizationId: s.org, WorkspaceId: s.ws, PageSize: 100, Filter: "state = PENDING"})
			if err == nil {
				for _, e := range resp.GetExceptions() {
					out = append(out, cobra.CompletionWithDesc(names.ID(e.GetName()), oneLine(e.GetMessage(), 60)))
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// clientRun is the RunE of a client command: check (nil: none) looks at
// the flags and files before any connection, then it connects to the
// workspace (the flags, the environment, the profile), resolves the
// resource its first argument names when kind is set ("automation",
// "exception": an id or a name in the workspace), calls call and closes
// the session.
func (f *clientFlags) clientRun(kind string, check func(cmd *cobra.Command, args []string) error, call func(cmd *cobra.Command, s *session, id string, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if check != nil {
			if err := check(cmd, args); err != nil {
				return err
			}
		}
		s, err := f.connect(cmd, true)
		if err != nil {
			return err
		}
		defer s.close()
		id := ""
		switch kind {
		case "":
		case "automation":
			// A title is as good as an id (names.go).
			if id, err = s.automationID(cmd.Context(), args[0]); err != nil {
				return err
			}
		default:
			if id, err = s.idIn(kind, args[0]); err != nil {
				return err
			}
		}
		return call(cmd, s, id, args)
	}
}

// listAll gathers up to limit items, a page at a time: page asks for size
// items after token and returns them and the next token ("" at the end).
func listAll[T any](limit int, page func(size int32, token string) ([]T, string, error)) ([]T, error) {
	var all []T
	token := ""
	for {
		items, next, err := page(pageSize(limit, len(all)), token)
		if err != nil {
			return nil, apiErr(err)
		}
		all = append(all, items...)
		if token = next; token == "" || len(all) >= limit {
			return all, nil
		}
	}
}

// printList prints a list: resp (the API's list response) with -o json,
// else a table of rows under header.
func (s *session) printList(resp proto.Message, header []string, rows [][]string) error {
	if s.json {
		return s.printJSON(resp)
	}
	s.table(header, rows)
	return nil
}
