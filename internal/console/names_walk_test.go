package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// Resource names of people and organizations, and ids of store.NewID's
// form (20 characters of [a-z2-7], a letter first).
var (
	personOrOrgName = regexp.MustCompile(`\b(users|organizations)/[a-z0-9]`)
	randomID        = regexp.MustCompile(`\b[a-z][a-z2-7]{19}\b`)
	emailAddress    = regexp.MustCompile(`\S+@\S+`)
)

// TestConsoleWalkShowsNames follows every link of the console from the
// inbox of a seeded workspace (an automation made in the console, by
// name, among them) and fails on any page whose visible text shows a
// users/… or organizations/… resource name, the id of something that has
// a name (automation, person, organization, workspace, connection,
// trigger, webhook, learning), or a random 20-character id other than a
// run's (a run has no name: it is shown as #number beside its id). Ids in
// links are fine; text is what a person reads.
func TestConsoleWalkShowsNames(t *testing.T) {
	e := newTestEnv(t)
	sd := seedProduct(t, e)
	c := testenv.BrowserClient(t)
	csrf := e.ConsoleSignIn(t, c, e.NewKey(t, testenv.KeySpec{}))
	ws := "/w/" + e.Init.WorkspaceID
	code, loc, body := testenv.Post(t, c, e.Srv.URL, ws+"/automations", url.Values{"csrf": {csrf}, "display_name": {"Überweisungen prüfen"},
		"code": {seedCode}})
	if code != http.StatusSeeOther || !strings.HasSuffix(loc, "/automations/uberweisungen-prufen") {
		t.Fatalf("create in the console: %d %s %s", code, loc, body)
	}
	named, runs := namedIDs(t, e, sd)
	pages := walkConsole(t, c, e.Srv.URL, ws+"/", 250)
	for _, want := range []string{ws + "/runs", ws + "/automations/" + sd.Automation, ws + "/exceptions/" + sd.Exception, ws + "/settings"} {
		if _, ok := pages[want]; !ok {
			t.Errorf("the walk did not reach %s", want)
		}
	}
	// Runs by number beside their ids, automations and people by name.
	runPage := ws + "/automations/" + sd.Automation + "/runs/" + sd.Resolved
	for p, want := range map[string][]string{
		ws + "/":                             {"Supplier check #1"},
		ws + "/runs":                         {"#1 " + sd.Waiting, "#2 " + sd.Resolved, "Invoice totals", "Supplier check"},
		runPage:                              {"Invoice totals #2", "run " + sd.Resolved},
		ws + "/automations/" + sd.Automation: {"#2 " + sd.Resolved},
		ws + "/exceptions/" + sd.Exception:   {"Supplier check #1"},
	} {
		containsAll(t, p, strings.Join(strings.Fields(pages[p]), " "), want...)
	}
	_, body, _ = testenv.Page(t, c, e.Srv.URL, runPage)
	containsAll(t, "the run page", body, "<title>Invoice totals #2 (Completed)")
	t.Logf("%d pages walked", len(pages))
	paths := make([]string, 0, len(pages))
	for p := range pages {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		// States and groups in words, never in the API's spelling.
		if w := wireWord.FindString(pages[p]); w != "" {
			i := strings.Index(pages[p], w)
			t.Errorf("%s shows %q in the API's spelling: …%s…", p, w, pages[p][max(0, i-80):min(len(pages[p]), i+40)])
		}
		for _, bad := range idsInText(pages[p], named, runs) {
			t.Errorf("%s shows %s", p, bad)
			if i := strings.Index(pages[p], bad[strings.LastIndexByte(bad, ' ')+1:]); i >= 0 {
				t.Logf("…%s…", pages[p][max(0, i-120):min(len(pages[p]), i+60)])
			}
		}
	}
}

// wireWord matches a state or group written as the API spells it
// (PENDING, awaiting_guidance, missing_values).
var wireWord = regexp.MustCompile(`\b(PENDING|RESOLVED|ARCHIVED|COMPLETED|FAILED|EXECUTING|STOPPED|AWAITING_GUIDANCE|[a-z]+_[a-z_]+)\b`)

// namedIDs are the ids of the things with a name, each with what it is
// (an id equal to its name, folded, is left out: showing it shows the
// name), and the ids of runs.
func namedIDs(t *testing.T, e *testEnv, sd seeded) (map[string]string, map[string]bool) {
	t.Helper()
	ctx := context.Background()
	org, ws := e.Init.OrganizationID, e.Init.WorkspaceID
	named := map[string]string{org: "organization", ws: "workspace", e.Init.UserID: "person"}
	owner, err := e.Store.GetUser(ctx, e.Init.UserID)
	if err != nil {
		t.Fatal(err)
	}
	// The owner's name is made of its e-mail address, an id in it: a name.
	named[owner.DisplayName] = ""
	autos, err := e.Store.ListAutomations(ctx, store.ListAutomationsRequest{OrganizationID: org, WorkspaceID: ws, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range autos.Items {
		if !strings.EqualFold(a.ID, a.DisplayName) {
			named[a.ID] = "automation " + a.DisplayName
		}
	}
	for id, what := range map[string]string{sd.Learning: "learning", sd.Webhook: "webhook", sd.Connection: "connection", sd.Trigger: "trigger"} {
		named[id] = what
	}
	runs := map[string]bool{}
	rs, err := e.Store.ListRuns(ctx, store.ListRunsRequest{OrganizationID: org, WorkspaceID: ws, AutomationID: "-", PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs.Items {
		runs[r.ID] = true
	}
	return named, runs
}

// idsInText lists what a page's text shows that a name belongs in place of.
func idsInText(text string, named map[string]string, runs map[string]bool) []string {
	text = emailAddress.ReplaceAllString(urls.ReplaceAllString(text, ""), "")
	var out []string
	for id, what := range named {
		if what == "" {
			text = strings.ReplaceAll(text, id, "")
			continue
		}
	}
	for id, what := range named {
		if what != "" && regexp.MustCompile(`\b`+regexp.QuoteMeta(id)+`\b`).MatchString(text) {
			out = append(out, what+" by its id "+id)
		}
	}
	for _, m := range personOrOrgName.FindAllString(text, 3) {
		out = append(out, "a resource name "+m+"…")
	}
	for _, m := range randomID.FindAllString(text, -1) {
		if !runs[m] && named[m] == "" {
			out = append(out, "a random id "+m)
		}
	}
	return out
}

// walkConsole GETs start and every console page linked from the pages it
// reached (at most limit), and returns the visible text of each by path.
func walkConsole(t *testing.T, c *http.Client, base, start string, limit int) map[string]string {
	t.Helper()
	pages := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 && len(pages) < limit {
		p := queue[0]
		queue = queue[1:]
		if _, seen := pages[p]; seen {
			continue
		}
		res, err := c.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			pages[p] = ""
			continue
		}
		text, links := visibleText(string(b))
		pages[p] = text
		for _, l := range links {
			if next, ok := consoleLink(p, l); ok {
				queue = append(queue, next)
			}
		}
	}
	return pages
}

// consoleLink resolves href against the page at from; ok for a console
// page to walk (not an asset, a download, the live feed or signing out).
func consoleLink(from, href string) (string, bool) {
	u, err := url.Parse(href)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return "", false
	}
	abs := (&url.URL{Path: from}).ResolveReference(u)
	abs.Fragment = ""
	p := abs.Path
	if !strings.HasPrefix(p, "/w/") || strings.Contains(p, "/live") || strings.Contains(p, "/static/") ||
		strings.HasSuffix(p, ".csv") || strings.Contains(p, "/download") || abs.Query().Has("fragment") {
		return "", false
	}
	return abs.RequestURI(), true
}

// visibleText is the text of a page a person reads (text outside script,
// style and template, and the values of inputs that show theirs), and
// its links. Code is left out too: a program, a filter expression or an
// id set out to be typed (the automations list's, a key's prefix) is
// written with ids on purpose.
func visibleText(doc string) (string, []string) {
	z := html.NewTokenizer(strings.NewReader(doc))
	var b strings.Builder
	var links []string
	hidden := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String(), links
		case html.TextToken:
			if hidden == 0 {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "script", "style", "template", "code":
				if tok.Type == html.StartTagToken {
					hidden++
				}
			case "a":
				if h := attr(tok, "href"); h != "" {
					links = append(links, h)
				}
			case "input":
				switch attr(tok, "type") {
				case "", "text", "search", "email", "url", "number", "date", "submit", "button":
					b.WriteString(attr(tok, "value") + " ")
				}
			}
		case html.EndTagToken:
			if n, _ := z.TagName(); hidden > 0 && slices.Contains([]string{"script", "style", "template", "code"}, string(n)) {
				hidden--
			}
		}
	}
}

func attr(tok html.Token, key string) string {
	for _, a := range tok.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
