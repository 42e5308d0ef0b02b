package console

import (
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
)

// codeLine is one numbered line of code, cut around a marked span.
type codeLine struct {
	N                   int
	Before, Span, After string
	Marked              bool
}

// codeCheck is the editor's view of code: numbered lines, the syntax
// error's line marked at its span.
type codeCheck struct {
	Lines   []codeLine
	Error   string
	Line    int32
	Column  int32
	Checked bool
	// Suggestions complete the line being written: the procedures of the
	// workspace's books (the standard library among them) that the
	// catalog search ranks first for it.
	Suggestions []suggestion
	// Warnings are what the language says of code that parses but likely
	// does not do what its author meant (lang.Program.Warnings: an output
	// set only inside a block), each at its line.
	Warnings []string
}

// suggestion is a procedure the editor offers: its sentence and an example.
type suggestion struct {
	Book, Signature, Example string
}

// numbered cuts code into numbered lines and marks [start, end) on the
// line where it starts (start < 0: nothing).
func numbered(code string, start, end int) []codeLine {
	var out []codeLine
	off := 0
	for i, l := range strings.SplitAfter(code, "\n") {
		if l == "" && i > 0 {
			break
		}
		text := strings.TrimSuffix(l, "\n")
		cl := codeLine{N: i + 1, Before: text}
		if start >= off && start <= off+len(text) && start >= 0 {
			a := start - off
			b := min(max(end-off, a), len(text))
			cl = codeLine{N: i + 1, Before: text[:a], Span: text[a:b], After: text[b:], Marked: true}
			if cl.Span == "" {
				cl.Span = " " // an empty span (end of line) still shows
			}
			start = -1
		}
		out = append(out, cl)
		off += len(l)
	}
	return out
}

// check parses code through ParseAutomationCode.
func (c *Console) check(s *sess, ws, code string) (codeCheck, error) {
	res, err := c.automations.ParseAutomationCode(s.ctx, &platformv1.ParseAutomationCodeRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, Code: code})
	if err != nil {
		return codeCheck{}, err
	}
	cc := codeCheck{Checked: true}
	start, end := -1, -1
	if errs := res.GetErrors(); len(errs) > 0 {
		x := errs[0]
		cc.Error, cc.Line, cc.Column = x.GetMessage(), x.GetLine(), x.GetColumn()
		start, end = int(x.GetLocation().GetStartByte()), int(x.GetLocation().GetEndByte())
	}
	cc.Lines = numbered(code, start, end)
	if cc.Error == "" {
		if prog, err := lang.Parse(code); err == nil {
			for _, w := range prog.Warnings() {
				cc.Warnings = append(cc.Warnings, w.String())
			}
		}
	}
	cc.Suggestions = c.suggest(s, ws, code)
	return cc, nil
}

// suggest searches the catalog for the last line written (its words, at
// least three letters); no suggestions when the search fails, as the
// check itself stands without them.
func (c *Console) suggest(s *sess, ws, code string) []suggestion {
	lines := strings.Split(strings.TrimRight(code, " \t\r\n"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) < 3 || strings.HasPrefix(last, "#") {
		return nil
	}
	res, err := c.books.SearchWorkspaceBookProcedures(s.ctx, &bookv1.SearchWorkspaceBookProceduresRequest{
		OrganizationId: s.OrganizationID, WorkspaceId: ws, Query: last, TopK: 5})
	if err != nil {
		return nil
	}
	var out []suggestion
	for _, r := range res.GetResults() {
		p := r.GetProcedure()
		sg := suggestion{Book: r.GetBookName(), Signature: p.GetSignature().GetEnglish()}
		if ex := p.GetExamples(); len(ex) > 0 {
			sg.Example = ex[0].GetSnippet()
		}
		out = append(out, sg)
	}
	return out
}

type checkData struct {
	pageData
	Check codeCheck
}

// checkCode answers the editor's live check (an htmx fragment).
func (c *Console) checkCode(w http.ResponseWriter, r *http.Request, s *sess) {
	cc, err := c.check(s, r.PathValue("ws"), r.PostFormValue("code"))
	if err != nil {
		st := status.Convert(err)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		code := http.StatusOK // htmx swaps only 2xx answers: the message shows in place
		if st.Code() == codes.Unauthenticated {
			code = http.StatusUnauthorized
		}
		w.WriteHeader(code)
		_ = c.pages["check"].ExecuteTemplate(w, "content", &checkData{Check: codeCheck{Error: st.Message(), Checked: true}})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := c.pages["check"].ExecuteTemplate(w, "content", &checkData{Check: cc}); err != nil {
		c.opts.Logger.Error("console: render check", "err", err)
	}
}

// saveAutomation writes the draft (name and code) or publishes it.
func (c *Console) saveAutomation(w http.ResponseWriter, r *http.Request, s *sess, publish bool) {
	org, ws, id := s.OrganizationID, r.PathValue("ws"), r.PathValue("a")
	var err error
	if publish {
		_, err = c.automations.PublishAutomation(s.ctx, &platformv1.PublishAutomationRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id})
	} else {
		_, err = c.automations.UpdateAutomation(s.ctx, &platformv1.UpdateAutomationRequest{
			OrganizationId: org, WorkspaceId: ws, AutomationId: id,
			Automation: &platformv1.Automation{DisplayName: r.PostFormValue("display_name"), EnglishCode: r.PostFormValue("code")},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"display_name", "english_code"}},
		})
	}
	if err != nil {
		if msg, ok := mendable(err, codes.InvalidArgument, codes.FailedPrecondition); ok {
			c.showAutomation(w, r, s, http.StatusBadRequest, msg, r.PostFormValue("code"))
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/automations/"+url.PathEscape(id), http.StatusSeeOther)
}
