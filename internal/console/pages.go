package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
)

var funcs = template.FuncMap{
	"last": names.ID,
	"ts": func(t *timestamppb.Timestamp) string {
		if t == nil {
			return ""
		}
		return t.AsTime().UTC().Format("2006-01-02 15:04:05Z")
	},
	"value": valueText,
	"stateName": func(s platformv1.ExceptionState) string {
		return strings.TrimPrefix(s.String(), "EXCEPTION_STATE_")
	},
	"runState":        func(s *platformv1.RunState) string { n, _ := runState(s); return n },
	"nameOr":          nameOr,
	"runNumber":       runNumber,
	"highlight":       highlight,
	"pastDescription": pastDescription,
	"label":           names.Words,
}

// groupChoices are the groups the inbox's filter offers, the language's
// first.
func groupChoices(counts []*platformv1.ExceptionGroupCount, current string) []string {
	out := []string{string(lang.GroupMissingValues), string(lang.GroupUserSystemError), string(lang.GroupInternalError)}
	var more []string
	for _, g := range counts {
		more = append(more, names.ID(g.GetGroup().GetName()))
	}
	slices.Sort(append(more, current))
	for _, g := range append(more, current) {
		if g != "" && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

func (c *Console) parseTemplates() error {
	names, err := templateFSNames()
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == "layout" {
			continue
		}
		t, err := template.New(n).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+n+".html")
		if err != nil {
			return fmt.Errorf("console: template %s: %w", n, err)
		}
		c.pages[n] = t
	}
	return nil
}

func templateFSNames() ([]string, error) {
	ents, err := templateFS.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".html"))
	}
	return out, nil
}

// valueText renders a Value for people.
func valueText(v *platformv1.Value) string {
	lv, err := protovalue.FromProto(v)
	if err != nil {
		return "(unreadable value)"
	}
	return lv.String()
}

// basics fills the layout's data: the workspace switcher and the caller's
// permissions in ws.
func (c *Console) basics(r *http.Request, s *sess, title string) (pageData, error) {
	d := pageData{Title: title, CSRF: s.CSRFToken, SignedIn: true, WS: r.PathValue("ws"), Perms: map[string]bool{}}
	ws, err := c.listWorkspaces(s)
	if err != nil {
		return d, err
	}
	d.Workspaces = ws
	if d.WS != "" {
		p, err := c.orgs.GetCurrentUserPermissions(s.ctx, &platformv1.GetCurrentUserPermissionsRequest{OrganizationId: s.OrganizationID, WorkspaceId: d.WS})
		if err != nil {
			return d, err
		}
		for _, x := range p.GetPermissions() {
			d.Perms[x] = true
		}
	}
	return d, nil
}

func (c *Console) listWorkspaces(s *sess) ([]*platformv1.Workspace, error) {
	res, err := c.workspaces.ListCurrentUserWorkspaces(s.ctx, &platformv1.ListCurrentUserWorkspacesRequest{OrganizationId: s.OrganizationID, PageSize: 100})
	if err == nil && len(res.GetUserWorkspaces()) > 0 {
		return res.GetUserWorkspaces(), nil
	}
	all, err2 := c.workspaces.ListWorkspaces(s.ctx, &platformv1.ListWorkspacesRequest{OrganizationId: s.OrganizationID, PageSize: 100})
	if err2 != nil {
		if err != nil {
			return nil, err
		}
		return nil, err2
	}
	return all.GetWorkspaces(), nil
}

// home goes to the inbox of the first workspace.
func (c *Console) home(w http.ResponseWriter, r *http.Request, s *sess) {
	ws, err := c.listWorkspaces(s)
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	if len(ws) == 0 {
		c.fail(w, r, s, http.StatusNotFound, "You are not a member of any workspace yet.")
		return
	}
	http.Redirect(w, r, "/w/"+names.ID(ws[0].GetName())+"/", http.StatusSeeOther)
}

type inboxData struct {
	pageData
	inboxForm
	Exceptions   []*platformv1.Exception
	Total        int32
	ByGroup      []*platformv1.ExceptionGroupCount
	ByAutomation []*platformv1.ExceptionAutomationCount
	Members      []*platformv1.WorkspaceUser
	Me           string
	// Names: automation id → display name (Automations fill the filter),
	// users/… → display name or email.
	AutoNames   map[string]string
	Automations []*platformv1.Automation
	People      map[string]string
	// Groups fill the group filter: the language's, and any other the
	// workspace's exceptions or the query name.
	Groups []string
	// Paging.
	PageToken, NextPageToken string
	// SelfURL is this page's fragment (the form's query), LiveURL its
	// updates, Back the page where the inbox's posts return.
	SelfURL, LiveURL, Back string
}

// inboxForm is the inbox's filter form and the AIP-160 filter it makes.
type inboxForm struct {
	State, Group, Automation, Assignee, Since, Query string
	Filter                                           string
}

// Query parameters (with the state's default) that keep the form's values
// on another page of the inbox: the filter links and the next page.
func (f inboxForm) Params() url.Values {
	v := url.Values{"state": {f.State}}
	for k, x := range map[string]string{"group": f.Group, "automation": f.Automation, "assignee": f.Assignee, "since": f.Since, "q": f.Query} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

// With returns Params with key set to value, as a query string.
func (f inboxForm) With(key, value string) template.URL {
	v := f.Params()
	v.Set(key, value)
	v.Del("page_token")
	return template.URL("?" + v.Encode()) //nolint:gosec // G203: an encoded query string
}

// inboxFilter builds the AIP-160 filter of the inbox's form; me is the
// caller (users/{id}), whom assignee=me names; assignee=none selects the
// unassigned exceptions.
func inboxFilter(q url.Values, me string) inboxForm {
	f := inboxForm{State: q.Get("state")}
	if !q.Has("state") {
		f.State = "PENDING"
	}
	f.Group, f.Automation, f.Assignee = q.Get("group"), q.Get("automation"), q.Get("assignee")
	f.Since, f.Query = q.Get("since"), strings.TrimSpace(q.Get("q"))
	var parts []string
	if f.State != "" {
		parts = append(parts, "state = "+strconv.Quote(f.State))
	}
	if f.Group != "" {
		parts = append(parts, "group = "+strconv.Quote(f.Group))
	}
	if f.Automation != "" {
		parts = append(parts, "automation = "+strconv.Quote(f.Automation))
	}
	switch f.Assignee {
	case "":
	case "me":
		parts = append(parts, "assignee = "+strconv.Quote(me))
	case "none":
		parts = append(parts, `assignee = ""`)
	default:
		parts = append(parts, "assignee = "+strconv.Quote(f.Assignee))
	}
	if f.Since != "" {
		if t, err := time.Parse("2006-01-02", f.Since); err == nil {
			parts = append(parts, "create_time >= "+strconv.Quote(t.Format(time.RFC3339)))
		} else {
			parts = append(parts, "create_time >= "+strconv.Quote(f.Since))
		}
	}
	if f.Query != "" {
		parts = append(parts, "("+f.Query+")")
	}
	f.Filter = strings.Join(parts, " AND ")
	return f
}

// inbox is the home page: the exceptions of a workspace, newest first.
func (c *Console) inbox(w http.ResponseWriter, r *http.Request, s *sess) {
	base, err := c.basics(r, s, "Exceptions")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &inboxData{pageData: base, Me: names.User(s.UserID)}
	q := r.URL.Query()
	d.inboxForm = inboxFilter(q, d.Me)
	d.PageToken = q.Get("page_token")
	org, ws := s.OrganizationID, d.WS
	list, err := c.exceptions.ListExceptions(s.ctx, &platformv1.ListExceptionsRequest{
		OrganizationId: org, WorkspaceId: ws, Filter: d.Filter, PageSize: 50, PageToken: d.PageToken,
	})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d.Exceptions, d.Total, d.NextPageToken = list.GetExceptions(), list.GetTotalSize(), list.GetNextPageToken()
	groups, err := c.exceptions.CountExceptionsByGroup(s.ctx, &platformv1.CountExceptionsByGroupRequest{OrganizationId: org, WorkspaceId: ws, Filter: d.Filter})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d.ByGroup = groups.GetGroupCounts()
	d.Groups = groupChoices(d.ByGroup, d.Group)
	autos, err := c.exceptions.CountExceptionsByAutomation(s.ctx, &platformv1.CountExceptionsByAutomationRequest{OrganizationId: org, WorkspaceId: ws, Filter: d.Filter})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d.ByAutomation = autos.GetAutomationCounts()
	c.nameInbox(s, d)
	if r.URL.Query().Get("fragment") == "" {
		// The members fill the assignee filter and the assign form.
		if m, err := c.workspaces.ListWorkspaceUsers(s.ctx, &platformv1.ListWorkspaceUsersRequest{OrganizationId: org, WorkspaceId: ws, PageSize: 100}); err == nil {
			d.Members = m.GetUsers()
		}
	}
	u := *r.URL
	qq := u.Query()
	qq.Set("fragment", "1")
	u.RawQuery = qq.Encode()
	d.SelfURL = u.RequestURI()
	d.LiveURL = "/w/" + url.PathEscape(ws) + "/live?topic=exceptions"
	d.Back = "/w/" + url.PathEscape(ws) + "/?" + d.Params().Encode()
	c.render(w, r, http.StatusOK, "inbox", d)
}

// maxSelected bounds the exceptions one inbox post archives or assigns.
const maxSelected = 100

// selectedIDs are the exceptions ticked in the inbox (or the one of a row's
// button).
func (c *Console) selectedIDs(w http.ResponseWriter, r *http.Request, s *sess, what string) ([]string, bool) {
	ids := r.PostForm["id"]
	if len(ids) == 0 {
		c.fail(w, r, s, http.StatusBadRequest, "Tick the exceptions to "+what+" first.")
		return nil, false
	}
	if len(ids) > maxSelected {
		c.fail(w, r, s, http.StatusBadRequest, fmt.Sprintf("%s at most %d exceptions at once.", strings.ToUpper(what[:1])+what[1:], maxSelected))
		return nil, false
	}
	return ids, true
}

// inboxBack is where an inbox post returns: the inbox page it came from
// (its query kept), else the workspace's inbox.
func inboxBack(r *http.Request, ws string) string {
	home := "/w/" + url.PathEscape(ws) + "/"
	if b := safeNext(r.PostFormValue("back")); strings.HasPrefix(b, home) {
		return b
	}
	return home
}

// assignSelected assigns the exceptions ticked in the inbox (or the one of
// a row's "Assign to me") to a member: assignee is users/{id}, "me", or ""
// to unassign.
func (c *Console) assignSelected(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	ids, ok := c.selectedIDs(w, r, s, "assign")
	if !ok {
		return
	}
	assignee := r.PostFormValue("assignee")
	if assignee == "me" {
		assignee = names.User(s.UserID)
	}
	for _, id := range ids {
		if _, err := c.exceptions.AssignException(s.ctx, &platformv1.AssignExceptionRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, ExceptionId: id, Assignee: assignee}); err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
	}
	http.Redirect(w, r, inboxBack(r, ws), http.StatusSeeOther)
}

// archiveSelected archives the exceptions ticked in the inbox.
func (c *Console) archiveSelected(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	ids, ok := c.selectedIDs(w, r, s, "archive")
	if !ok {
		return
	}
	for _, id := range ids {
		if _, err := c.exceptions.ArchiveException(s.ctx, &platformv1.ArchiveExceptionRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, ExceptionId: id}); err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
	}
	http.Redirect(w, r, inboxBack(r, ws), http.StatusSeeOther)
}

type exceptionData struct {
	pageData
	X          *platformv1.Exception
	Run        *platformv1.Run
	Automation string
	// The code of the step, cut around the failing span.
	Before, Span, After string
	Facts               []factView
	Members             []*platformv1.WorkspaceUser
	Me                  string
	ReplaceCode         string
	// What a person reads for the automation and the assignee (the
	// resolver is named in Resolution).
	AutomationName, AssigneeName string
	// Pending: the exception waits for guidance (the page speaks in the
	// present tense); Resolution is the guidance given, once resolved
	// (exception_page.go); Corrections the fields of the corrected-values
	// form of a user error; SelfURL and LiveURL make the state live.
	Pending          bool
	Resolution       *resolutionView
	Corrections      []invokeInput
	CorrectionExtra  []int
	SelfURL, LiveURL string
}

type factView struct {
	Name, Value string
}

// exception shows one exception with the guidance forms.
func (c *Console) exception(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showException(w, r, s, http.StatusOK, "", "")
}

func (c *Console) showException(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg, replace string) {
	base, err := c.basics(r, s, "Exception")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	base.Notice = done(r, exceptionNotices)
	org, ws, id := s.OrganizationID, base.WS, r.PathValue("id")
	x, err := c.exceptions.GetException(s.ctx, &platformv1.GetExceptionRequest{OrganizationId: org, WorkspaceId: ws, ExceptionId: id})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &exceptionData{pageData: base, X: x, Me: names.User(s.UserID), ReplaceCode: replace}
	d.Title = "Exception: " + x.GetMessage()
	if _, _, automation, runID, ok := names.ParseRun(x.GetRun()); ok {
		d.Automation = automation
		run, err := c.runs.GetRun(s.ctx, &platformv1.GetRunRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: automation, RunId: runID})
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		d.Run = run
		step, _ := strconv.Atoi(x.GetExecutionId())
		if ex := run.GetExecutableSteps().GetExecutables(); step >= 0 && step < len(ex) {
			code := ex[step].GetCode()
			a, b := clampSpan(len(code), x.GetLocation().GetStartByte(), x.GetLocation().GetEndByte())
			d.Before, d.Span, d.After = code[:a], code[a:b], code[b:]
		}
		for k, v := range run.GetUserInputs() {
			d.Facts = append(d.Facts, factView{k, valueText(v)})
		}
		for k, v := range run.GetExecutableSteps().GetInputs() {
			d.Facts = append(d.Facts, factView{k, valueText(v)})
		}
		sort.Slice(d.Facts, func(i, j int) bool { return d.Facts[i].Name < d.Facts[j].Name })
		d.Facts = slices.CompactFunc(d.Facts, func(a, b factView) bool { return a.Name == b.Name })
	}
	if d.Can(store.PermExceptionsResolve) {
		if m, err := c.workspaces.ListWorkspaceUsers(s.ctx, &platformv1.ListWorkspaceUsersRequest{OrganizationId: org, WorkspaceId: ws, PageSize: 100}); err == nil {
			d.Members = m.GetUsers()
		}
	}
	c.nameException(s, d)
	c.exceptionState(r, s, d)
	c.render(w, r, code, "exception", d)
}

func clampSpan(n int, start, end int64) (int, int) {
	a, b := int(max(0, min(start, int64(n)))), int(max(0, min(end, int64(n))))
	if b < a {
		b = a
	}
	return a, b
}

// exceptionAction resolves, archives, unarchives or assigns an exception.
func (c *Console) exceptionAction(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws, id := s.OrganizationID, r.PathValue("ws"), r.PathValue("id")
	back := "/w/" + url.PathEscape(ws) + "/exceptions/" + url.PathEscape(id)
	var err error
	switch r.PathValue("action") {
	case "resolve":
		req := &platformv1.ResolveExceptionRequest{OrganizationId: org, WorkspaceId: ws, ExceptionId: id}
		var perr error
		switch r.PostFormValue("kind") {
		case "provide_values":
			vals, e := formValues(givenOnly(r.PostForm))
			perr = e
			req.Guidance = &platformv1.ResolveExceptionRequest_ProvideValues{ProvideValues: &platformv1.ProvideValues{Values: vals}}
		case "answer":
			v, e := typedValue(r.PostFormValue("type"), r.PostFormValue("value"))
			perr = e
			req.Guidance = &platformv1.ResolveExceptionRequest_Answer{Answer: &platformv1.Answer{Value: v}}
		case "skip":
			req.Guidance = &platformv1.ResolveExceptionRequest_Skip{Skip: &platformv1.Skip{}}
		case "retry":
			req.Guidance = &platformv1.ResolveExceptionRequest_Retry{Retry: &platformv1.Retry{}}
		case "replace_step":
			req.Guidance = &platformv1.ResolveExceptionRequest_ReplaceStep{ReplaceStep: &platformv1.ReplaceStep{Code: r.PostFormValue("code")}}
		default:
			c.fail(w, r, s, http.StatusBadRequest, "Choose a kind of guidance.")
			return
		}
		if perr != nil {
			c.showException(w, r, s, http.StatusBadRequest, perr.Error(), r.PostFormValue("code"))
			return
		}
		x, e := c.exceptions.ResolveException(s.ctx, req)
		if e == nil {
			http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/automations/"+runPath(x.GetRun())+"?done=resolved", http.StatusSeeOther)
			return
		}
		if st := status.Convert(e); st.Code() == codes.InvalidArgument || st.Code() == codes.FailedPrecondition {
			code := http.StatusBadRequest
			if st.Code() == codes.FailedPrecondition {
				code = http.StatusConflict
			}
			c.showException(w, r, s, code, st.Message(), r.PostFormValue("code"))
			return
		}
		err = e
	case "archive":
		_, err = c.exceptions.ArchiveException(s.ctx, &platformv1.ArchiveExceptionRequest{OrganizationId: org, WorkspaceId: ws, ExceptionId: id})
	case "unarchive":
		_, err = c.exceptions.UnarchiveException(s.ctx, &platformv1.UnarchiveExceptionRequest{OrganizationId: org, WorkspaceId: ws, ExceptionId: id})
	case "say":
		c.say(w, r, s)
		return
	case "assign":
		_, err = c.exceptions.AssignException(s.ctx, &platformv1.AssignExceptionRequest{OrganizationId: org, WorkspaceId: ws, ExceptionId: id, Assignee: r.PostFormValue("assignee")})
		if err == nil && r.PostFormValue("back") == "inbox" {
			back = "/w/" + url.PathEscape(ws) + "/"
		}
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, back+"?done="+r.PathValue("action"), http.StatusSeeOther)
}

// runPath turns organizations/o/workspaces/w/automations/a/runs/r into
// a/runs/r.
func runPath(name string) string {
	_, _, automation, run, ok := names.ParseRun(name)
	if !ok {
		return ""
	}
	return url.PathEscape(automation) + "/runs/" + url.PathEscape(run)
}

type automationsData struct {
	pageData
	Automations []*platformv1.Automation
}

func (c *Console) automationList(w http.ResponseWriter, r *http.Request, s *sess) {
	base, err := c.basics(r, s, "Automations")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	res, err := c.automations.ListAutomations(s.ctx, &platformv1.ListAutomationsRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, PageSize: 100})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "automations", &automationsData{pageData: base, Automations: res.GetAutomations()})
}

func (c *Console) createAutomation(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	a, err := c.automations.CreateAutomation(s.ctx, &platformv1.CreateAutomationRequest{
		OrganizationId: s.OrganizationID, WorkspaceId: ws,
		Automation: &platformv1.Automation{DisplayName: r.PostFormValue("display_name"), EnglishCode: r.PostFormValue("code")},
	})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/automations/"+url.PathEscape(names.ID(a.GetName())), http.StatusSeeOther)
}

type automationData struct {
	pageData
	A    *platformv1.Automation
	ID   string
	Runs []*platformv1.Run
	// Inputs are the invoke form's fields: the facts the code needs
	// (invoke.go); ExtraRows the rows for other inputs.
	Inputs    []invokeInput
	ExtraRows []int
	// Draft is the code in the editor; Check its numbered lines and error.
	Draft string
	Check codeCheck
	// Published is the published code ("" when never published); Diff the
	// lines that differ from the draft.
	Published bool
	Diff      []diffLine
	// Flow is the published version's flow graph (flow.go).
	Flow *platformv1.AutomationVisualization
}

type diffLine struct {
	Op   string // "+" in the draft only, "-" in the published only
	Text string
}

// lineDiff lists the lines of draft missing from published (+) and of
// published missing from draft (-), in order.
func lineDiff(published, draft string) []diffLine {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
			m[l]++
		}
		return m
	}
	pc, dc := count(published), count(draft)
	var out []diffLine
	for _, l := range strings.Split(strings.TrimRight(published, "\n"), "\n") {
		if dc[l] > 0 {
			dc[l]--
			continue
		}
		out = append(out, diffLine{"-", l})
	}
	for _, l := range strings.Split(strings.TrimRight(draft, "\n"), "\n") {
		if pc[l] > 0 {
			pc[l]--
			continue
		}
		out = append(out, diffLine{"+", l})
	}
	return out
}

func (c *Console) automation(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showAutomation(w, r, s, http.StatusOK, "", "")
}

func (c *Console) showAutomation(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg, draft string) {
	base, err := c.basics(r, s, "Automation")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	id := r.PathValue("a")
	a, err := c.automations.GetAutomation(s.ctx, &platformv1.GetAutomationRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, AutomationId: id})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &automationData{pageData: base, A: a, ID: id, Draft: a.GetEnglishCode()}
	if errMsg != "" {
		d.Draft = draft
	}
	d.Title = a.GetDisplayName()
	if !d.Can("automations.write") {
		d.Check = codeCheck{Lines: numbered(d.Draft, -1, -1)} // the editor shows it otherwise
	}
	pubCode := ""
	if pub, err := c.automations.QueryAutomation(s.ctx, &platformv1.QueryAutomationRequest{
		OrganizationId: s.OrganizationID, WorkspaceId: base.WS, AutomationId: id, Stage: platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED,
	}); err == nil {
		d.Published = true
		pubCode = pub.GetEnglishCode()
		d.Diff = lineDiff(pub.GetEnglishCode(), a.GetEnglishCode())
		d.Flow = c.automationFlow(s, base.WS, id)
	}
	runs, err := c.runs.ListRuns(s.ctx, &platformv1.ListRunsRequest{OrganizationId: s.OrganizationID, WorkspaceId: base.WS, AutomationId: id, PageSize: 20})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d.Runs = runs.GetRuns()
	d.Inputs, d.ExtraRows = invokeForm(a.GetEnglishCode(), pubCode)
	c.render(w, r, code, "automation", d)
}

func (c *Console) automationAction(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws, id := s.OrganizationID, r.PathValue("ws"), r.PathValue("a")
	switch r.PathValue("action") {
	case "save", "publish":
		c.saveAutomation(w, r, s, r.PathValue("action") == "publish")
	case "invoke":
		inputs, err := formValues(givenOnly(r.PostForm))
		if err != nil {
			c.fail(w, r, s, http.StatusBadRequest, err.Error())
			return
		}
		stage := platformv1.AutomationStage_AUTOMATION_STAGE_DRAFT
		switch r.PostFormValue("stage") {
		case "published":
			stage = platformv1.AutomationStage_AUTOMATION_STAGE_PUBLISHED
		case "draft", "":
		default:
			c.fail(w, r, s, http.StatusBadRequest, "Invoke the draft or the published version.")
			return
		}
		res, err := c.automations.InvokeAutomation(s.ctx, &platformv1.InvokeAutomationRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: id, Inputs: inputs,
			Stage: stage, RequestId: r.PostFormValue("request_id"),
		})
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/automations/"+url.PathEscape(id)+"/runs/"+url.PathEscape(res.GetRunId()), http.StatusSeeOther)
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
	}
}

// historyPage is how many entries of a run's history its page shows.
const historyPage = 200

type historyItem struct {
	Time *timestamppb.Timestamp
	// Kind is state, say, call, run, exception or guidance (the CSS class).
	Kind string
	What string
	// Detail is shown under What (a book call's inputs and output, the
	// values given as guidance).
	Detail []factView
	// Exception links the exception an item is about.
	Exception string
	// By is who resolved an exception (users/…, agents/…, guideEntries/…).
	By string
}

// historyItems renders a page of a run's history.
func historyItems(evs []*platformv1.RunEvent) []historyItem {
	var out []historyItem
	for _, ev := range evs {
		if u := ev.GetRunUpdate(); u != nil {
			st, _ := runState(u.GetRun().GetState())
			what := names.Words(st)
			switch {
			case u.GetRun().GetState().GetStopped() != nil:
				what += ": " + u.GetRun().GetState().GetStopped().GetReason()
			case u.GetRun().GetState().GetStopping() != nil:
				what += ": " + u.GetRun().GetState().GetStopping().GetReason()
			}
			out = append(out, historyItem{Time: u.GetRun().GetState().GetUpdateTime(), Kind: "state", What: what})
			continue
		}
		j := ev.GetExecutionJournal()
		meta := func(k string) string { return j.GetExtraMetadata()[k].GetText() }
		it := historyItem{Time: j.GetEventTime()}
		if p := j.GetNodePatched(); p != nil {
			it.Kind, it.Exception, it.By = "guidance", names.ID(meta("exception")), meta("resolver")
			it.What = "resolved (" + strings.ReplaceAll(meta("guidance"), "_", " ") + ")"
			if it.By != "" {
				it.What += " by " + it.By
			}
			for k, v := range p.GetInputsPatch() {
				it.Detail = append(it.Detail, factView{k, valueText(v)})
			}
			if p.GetCodePatch() != "" {
				it.Detail = append(it.Detail, factView{"code", p.GetCodePatch()})
			}
			sort.Slice(it.Detail, func(a, b int) bool { return it.Detail[a].Name < it.Detail[b].Name })
			out = append(out, it)
			continue
		}
		n := j.GetNodeExecuted()
		switch n.GetNodeKind() {
		case "Say":
			it.Kind, it.What = "say", n.GetOutputs()["text"].GetText()
		case "FunctionCall":
			c := n.GetBookFunctionCall()
			it.Kind, it.What = "call", "called "+c.GetBookFunction().GetFunctionName()+" of "+c.GetBookFunction().GetBookName()
			for k, v := range c.GetInputs() {
				it.Detail = append(it.Detail, factView{k, valueText(v)})
			}
			sort.Slice(it.Detail, func(a, b int) bool { return it.Detail[a].Name < it.Detail[b].Name })
			if c.GetOutput() != nil {
				it.Detail = append(it.Detail, factView{"→", valueText(c.GetOutput())})
			}
		case "StartRun":
			it.Kind, it.What = "run", "started run "+names.ID(n.GetOutputs()["run"].GetText())
		case "Exception":
			it.Kind, it.Exception = "exception", names.ID(meta("exception"))
			switch meta("exception_state") {
			case "ARCHIVED":
				it.What = "exception archived"
			case "PENDING":
				it.What = "exception raised"
				if len(n.GetError()) == 0 {
					it.What = "exception brought back"
				}
			}
		case "HistoryTruncated":
			it.Kind, it.What = "state", "the history stops here (the run reached its limit of "+meta("history_limit")+" entries)"
		default:
			it.Kind, it.What = "state", n.GetNodeKind()
		}
		out = append(out, it)
	}
	return out
}

// runState names a run's state; terminal when it will not change by itself.
func runState(s *platformv1.RunState) (string, bool) {
	switch s.GetState().(type) {
	case *platformv1.RunState_Pending:
		return "pending", false
	case *platformv1.RunState_Executing:
		return "executing", false
	case *platformv1.RunState_Stopping:
		return "stopping", false
	case *platformv1.RunState_Stopped:
		return "stopped", true
	case *platformv1.RunState_AwaitingGuidance:
		return "awaiting_guidance", false
	case *platformv1.RunState_Completed:
		return "completed", true
	case *platformv1.RunState_Failed:
		return "failed", true
	}
	return "unknown", false
}
