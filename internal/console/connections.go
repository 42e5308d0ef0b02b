package console

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// Connections: what a book needs to reach a system (configuration and
// credentials, sealed at rest and never shown). The add form is built from
// the chosen book's own declaration of its authentications and
// configuration.

type connRow struct {
	C    *bookv1.BookConnectionDescriptor
	Auth string
	Used int32
}

type authForm struct {
	ID, Name, Kind string
	Credentials    []*bookv1.Credential
}

type configField struct {
	Key, Description, Kind string
}

type connectionsData struct {
	pageData
	Rows []connRow
	// Books that take connections, as "name@version".
	Books  []bookChoice
	Chosen *bookv1.Book
	Book   string
	Auths  []authForm
	Config []configField
	// Form values kept after an error.
	Name string
}

type bookChoice struct{ Key, Label string }

func (c *Console) connectionList(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showConnections(w, r, s, http.StatusOK, "")
}

func (c *Console) showConnections(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg string) {
	base, err := c.basics(r, s, "Connections")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	base.Notice = done(r, map[string]string{"add": "The connection is added.", "delete": "The connection is deleted.", "update": "Saved."})
	org, ws := s.OrganizationID, base.WS
	list, err := c.connections.ListAllWorkspaceBookConnections(s.ctx, &bookv1.ListAllWorkspaceBookConnectionsRequest{OrganizationId: org, WorkspaceId: ws, PageSize: maxListed})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &connectionsData{pageData: base, Book: r.URL.Query().Get("book"), Name: r.PostFormValue("connection_name")}
	if d.Book == "" {
		d.Book = r.PostFormValue("book")
	}
	var ids []string
	for _, cn := range list.GetBookConnections() {
		d.Rows = append(d.Rows, connRow{C: cn, Auth: cn.GetAuthentication().GetAuthenticationId()})
		ids = append(ids, cn.GetConnectionId())
	}
	if len(ids) > 0 && len(ids) <= 100 {
		if u, err := c.connections.CountConnectionUsage(s.ctx, &bookv1.CountConnectionUsageRequest{OrganizationId: org, WorkspaceId: ws, ConnectionIds: ids}); err == nil {
			for i, n := range u.GetConnectionCounts() {
				if i < len(d.Rows) {
					d.Rows[i].Used = n.GetCount()
				}
			}
		}
	}
	if d.Can("automations.write") {
		if err := c.fillConnectionForm(s, d); err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
	}
	c.render(w, r, code, "connections", d)
}

// fillConnectionForm lists the workspace's books that take a connection
// and, for the chosen one, the fields its authentications and
// configuration declare.
func (c *Console) fillConnectionForm(s *sess, d *connectionsData) error {
	books, err := c.books.ListWorkspaceBooks(s.ctx, &bookv1.ListWorkspaceBooksRequest{OrganizationId: s.OrganizationID, WorkspaceId: d.WS, PageSize: maxListed})
	if err != nil {
		return err
	}
	for _, b := range books.GetBooks() {
		if len(b.GetAuthentications()) == 0 && len(b.GetConfigMap()) == 0 && len(b.GetConfigurations()) == 0 && !b.GetConnectionRequired() {
			continue
		}
		key := b.GetName() + "@" + b.GetVersion()
		label := b.GetDisplayName()
		if label == "" {
			label = b.GetName()
		}
		d.Books = append(d.Books, bookChoice{key, label + " " + b.GetVersion()})
		if key == d.Book {
			d.Chosen = b
		}
	}
	if d.Chosen == nil {
		return nil
	}
	for _, a := range d.Chosen.GetAuthentications() {
		if cu := a.GetCustom(); cu != nil {
			d.Auths = append(d.Auths, authForm{ID: cu.GetId(), Name: cmpOr(cu.GetName(), cu.GetId()), Kind: "custom", Credentials: cu.GetCredentials()})
		} else if o := a.GetOauth(); o != nil {
			d.Auths = append(d.Auths, authForm{ID: o.GetId(), Name: cmpOr(o.GetName(), o.GetId()) + " (OAuth: authorize after adding)", Kind: "oauth", Credentials: o.GetCredentials()})
		}
	}
	for k, cp := range d.Chosen.GetConfigMap() {
		d.Config = append(d.Config, configField{Key: k, Description: cp.GetDescription(), Kind: conceptKind(cp.GetType())})
	}
	for _, cp := range d.Chosen.GetConfigurations() {
		if k := conceptName(cp); k != "" && d.Chosen.GetConfigMap()[k] == nil {
			d.Config = append(d.Config, configField{Key: k, Description: cp.GetDescription(), Kind: conceptKind(cp.GetType())})
		}
	}
	sort.Slice(d.Config, func(i, j int) bool { return d.Config[i].Key < d.Config[j].Key })
	return nil
}

// conceptName is a concept's first noun phrase as words, the key its value
// goes by (as the books read it).
func conceptName(c *bookv1.Concept) string {
	nps := c.GetNounPhrases().GetNounPhrases()
	if len(nps) == 0 {
		return ""
	}
	return strings.Join(append(append([]string(nil), nps[0].GetModifiers()...), nps[0].GetHead()), " ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// conceptKind is how a configuration value is typed in: number, yes/no or
// text.
func conceptKind(t *bookv1.ConceptType) string {
	if o := t.GetOptionalType(); o != nil {
		return conceptKind(o.GetInner())
	}
	switch t.GetScalarType() {
	case bookv1.ConceptScalarType_ConceptScalarTypeNumber:
		return "number"
	case bookv1.ConceptScalarType_ConceptScalarTypeBoolean:
		return "boolean"
	}
	return "text"
}

// addConnection adds a connection of the chosen book from the form:
// connection_name, auth (an authentication id), cred.{auth}.{id} and
// config.{key} (typed as the book declares).
func (c *Console) addConnection(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	name, version, ok := strings.Cut(r.PostFormValue("book"), "@")
	if !ok {
		c.showConnections(w, r, s, http.StatusBadRequest, "Choose a book first.")
		return
	}
	req := &bookv1.AddWorkspaceBookConnectionRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, BookName: name, BookVersion: version,
		ConnectionName: strings.TrimSpace(r.PostFormValue("connection_name")), ConfigMap: map[string]*platformv1.BdkValue{}}
	if auth := r.PostFormValue("auth"); auth != "" {
		ca := &bookv1.ConnectionAuthentication{AuthenticationId: auth}
		prefix := "cred." + auth + "."
		var keys []string
		for k := range r.PostForm {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			ca.AuthenticationCredentials = append(ca.AuthenticationCredentials, &bookv1.CredentialValue{Id: strings.TrimPrefix(k, prefix),
				Value: &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: r.PostFormValue(k)}}})
		}
		req.Authentication = ca
	}
	for k, vs := range r.PostForm {
		key, ok := strings.CutPrefix(k, "config.")
		if !ok || strings.TrimSpace(vs[0]) == "" {
			continue
		}
		v, err := bdkValue(r.PostFormValue("kind."+key), strings.TrimSpace(vs[0]))
		if err != nil {
			c.showConnections(w, r, s, http.StatusBadRequest, key+": "+err.Error())
			return
		}
		req.ConfigMap[key] = v
	}
	if _, err := c.connections.AddWorkspaceBookConnection(s.ctx, req); err != nil {
		if msg, ok := mendable(err, codes.InvalidArgument, codes.AlreadyExists, codes.NotFound, codes.ResourceExhausted); ok {
			c.showConnections(w, r, s, http.StatusBadRequest, msg)
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, wsURL(ws, "connections")+"?done=add", http.StatusSeeOther)
}

func bdkValue(kind, s string) (*platformv1.BdkValue, error) {
	switch kind {
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return &platformv1.BdkValue{Kind: &platformv1.BdkValue_NumberValue{NumberValue: f}}, nil
	case "boolean":
		switch strings.ToLower(s) {
		case "yes", "true":
			return &platformv1.BdkValue{Kind: &platformv1.BdkValue_BooleanValue{BooleanValue: true}}, nil
		case "no", "false":
			return &platformv1.BdkValue{Kind: &platformv1.BdkValue_BooleanValue{BooleanValue: false}}, nil
		}
		return nil, fmt.Errorf("answer yes or no, not %q", s)
	}
	return &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: s}}, nil
}

type connectionData struct {
	pageData
	C        *bookv1.BookConnectionDescriptor
	ID       string
	Config   []factView
	Creds    []string
	OAuth    bool
	Used     []named
	Test     *connTest
	Tables   []string
	Procs    int
	BookLink string
}

// connTest is what checking a connection found.
type connTest struct {
	OK bool
	// Reached: the check connected to the system (databases, email);
	// otherwise nothing was sent, and the page says so.
	Reached bool
	Book    string
	Detail  []factView
	Error   string
}

// connection shows a connection; with ?test=1 it also tests it (a read:
// anyone who may see the connection may test it).
func (c *Console) connection(w http.ResponseWriter, r *http.Request, s *sess) {
	var t *connTest
	if r.URL.Query().Get("test") != "" {
		t = c.testConnection(s, r.PathValue("ws"), r.PathValue("id"))
	}
	c.showConnection(w, r, s, http.StatusOK, "", t)
}

func (c *Console) showConnection(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg string, test *connTest) {
	base, err := c.basics(r, s, "Connection")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	org, ws, id := s.OrganizationID, base.WS, r.PathValue("id")
	g, err := c.connections.GetWorkspaceBookConnection(s.ctx, &bookv1.GetWorkspaceBookConnectionRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	cn := g.GetBookConnection()
	d := &connectionData{pageData: base, C: cn, ID: id, Test: test, BookLink: wsURL(ws, "books", cn.GetBookName())}
	d.Title = "Connection " + cn.GetConnectionName()
	for k, v := range cn.GetConfigMap() {
		d.Config = append(d.Config, factView{k, bdkText(v)})
	}
	sort.Slice(d.Config, func(i, j int) bool { return d.Config[i].Name < d.Config[j].Name })
	for _, cr := range cn.GetAuthentication().GetAuthenticationCredentials() {
		d.Creds = append(d.Creds, cr.GetId())
	}
	d.OAuth = cn.GetAuthentication().GetAuthenticationId() == "oauth2"
	if tr, err := c.connections.TraceConnectionUsage(s.ctx, &bookv1.TraceConnectionUsageRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id}); err == nil && len(tr.GetAutomations()) > 0 {
		autoNames, _, err := c.automationNames(s, ws)
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		for _, a := range tr.GetAutomations() {
			id := names.ID(a.GetAutomationId())
			d.Used = append(d.Used, named{id, cmpOr(autoNames[id], "an automation")})
		}
	}
	c.render(w, r, code, "connection", d)
}

// bdkText writes a configuration value as people do.
func bdkText(v *platformv1.BdkValue) string {
	switch k := v.GetKind().(type) {
	case *platformv1.BdkValue_TextValue:
		return k.TextValue
	case *platformv1.BdkValue_NumberValue:
		return plainNumber(k.NumberValue)
	case *platformv1.BdkValue_BooleanValue:
		if k.BooleanValue {
			return "yes"
		}
		return "no"
	case nil:
		return ""
	}
	return "(a value)"
}

// connectionAction authorizes (OAuth: off to the provider) or
// deletes a connection.
func (c *Console) connectionAction(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws, id := s.OrganizationID, r.PathValue("ws"), r.PathValue("id")
	switch r.PathValue("action") {
	case "authorize":
		res, err := c.connections.AuthorizeWorkspaceBookConnection(s.ctx, &bookv1.AuthorizeWorkspaceBookConnectionRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id})
		if err != nil {
			if msg, ok := mendable(err, codes.FailedPrecondition, codes.InvalidArgument); ok {
				c.showConnection(w, r, s, http.StatusBadRequest, msg, nil)
				return
			}
			c.grpcFail(w, r, s, err)
			return
		}
		u, err := url.Parse(res.GetAuthorizeUrl().GetUrl())
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
			c.showConnection(w, r, s, http.StatusBadRequest, "The connection's authorize url is not a web address.", nil)
			return
		}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
	case "delete":
		_, err := c.connections.DeleteWorkspaceConnection(s.ctx, &bookv1.DeleteWorkspaceConnectionRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id})
		if err != nil {
			if msg, ok := mendable(err, codes.FailedPrecondition); ok {
				c.showConnection(w, r, s, http.StatusConflict, msg, nil)
				return
			}
			c.grpcFail(w, r, s, err)
			return
		}
		http.Redirect(w, r, wsURL(ws, "connections")+"?done=delete", http.StatusSeeOther)
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
	}
}

// testConnection checks a connection as far as its book lets one check it
// without running an automation (CheckWorkspaceBookConnection: a databases
// connection connects and lists tables, an email connection signs in to
// its SMTP server); every book says who the connection acts as.
func (c *Console) testConnection(s *sess, ws, id string) *connTest {
	org := s.OrganizationID
	g, err := c.connections.GetWorkspaceBookConnection(s.ctx, &bookv1.GetWorkspaceBookConnectionRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id})
	if err != nil {
		return &connTest{Error: status.Convert(err).Message()}
	}
	res, err := c.connections.CheckWorkspaceBookConnection(s.ctx, &bookv1.CheckWorkspaceBookConnectionRequest{OrganizationId: org, WorkspaceId: ws, ConnectionId: id})
	if err != nil {
		return &connTest{Error: status.Convert(err).Message()}
	}
	if res.GetChecked() && !res.GetReached() {
		return &connTest{Error: res.GetProblem()}
	}
	t := &connTest{OK: true, Reached: res.GetReached(), Book: g.GetBookConnection().GetBookName()}
	for k, v := range res.GetDetails() {
		t.Detail = append(t.Detail, factView{k, v})
	}
	sort.Slice(t.Detail, func(i, j int) bool { return t.Detail[i].Name < t.Detail[j].Name })
	return t
}
