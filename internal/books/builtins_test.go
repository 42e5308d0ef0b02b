package books_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
)

// env is a workspace with the built-in books and connections kept in a
// SQLite store.
type env struct {
	t     *testing.T
	st    store.Store
	reg   *books.Registry
	conns *books.Connections
	ws    books.Workspace
}

func newEnv(t *testing.T, opts books.BuiltinOptions) *env {
	t.Helper()
	ctx := t.Context()
	st := openBookStore(t, t.TempDir())
	ws := books.Workspace{OrganizationID: "acme", WorkspaceID: "ops"}
	if _, err := st.CreateOrganization(ctx, store.Organization{ID: ws.OrganizationID, DisplayName: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: ws.OrganizationID, ID: ws.WorkspaceID, Title: "Ops"}); err != nil {
		t.Fatal(err)
	}
	key, _ := books.NewSecretKey()
	kr, err := books.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	reg := books.NewRegistry(books.WithBuiltins(books.Builtins(opts)...))
	return &env{t: t, st: st, reg: reg, conns: books.NewConnections(sqlConnections{st}, kr, reg), ws: ws}
}

func text(s string) *platformv1.BdkValue {
	return &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: s}}
}

func num(f float64) *platformv1.BdkValue {
	return &platformv1.BdkValue{Kind: &platformv1.BdkValue_NumberValue{NumberValue: f}}
}

func auth(id string, kv ...string) *bookv1.ConnectionAuthentication {
	a := &bookv1.ConnectionAuthentication{AuthenticationId: id}
	for i := 0; i < len(kv); i += 2 {
		a.AuthenticationCredentials = append(a.AuthenticationCredentials, &bookv1.CredentialValue{Id: kv[i], Value: text(kv[i+1])})
	}
	return a
}

func (e *env) add(book, name string, a *bookv1.ConnectionAuthentication, config map[string]*platformv1.BdkValue) *bookv1.BookConnectionDescriptor {
	e.t.Helper()
	d, err := e.conns.Add(e.t.Context(), e.ws, book, "1.0.0", books.ConnectionInput{Name: name, Auth: a, Config: config})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) run(code string, inputs map[string]lang.Value) *lang.Result {
	e.t.Helper()
	prog, err := lang.Parse(code)
	if err != nil {
		e.t.Fatal(err)
	}
	return lang.Start(e.t.Context(), prog, inputs, lang.Options{Books: e.reg.ForWorkspace(e.ws)})
}

func (e *env) resume(code string, state []byte, r lang.Resolution) *lang.Result {
	e.t.Helper()
	prog, err := lang.Parse(code)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := lang.Resume(e.t.Context(), prog, state, r, lang.Options{Books: e.reg.ForWorkspace(e.ws)})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func wantCompleted(t *testing.T, res *lang.Result) {
	t.Helper()
	if res.Status != lang.Completed {
		t.Fatalf("status %s, exception %+v, failure %+v", res.Status, res.Exception, res.Failure)
	}
}

func outputText(t *testing.T, res *lang.Result, name string) string {
	t.Helper()
	v, ok := res.Outputs[name]
	if !ok {
		t.Fatalf("no output %q in %v", name, res.Outputs)
	}
	if v.Kind() == lang.KindText {
		return v.AsText()
	}
	return v.String()
}

func TestKeyringSealsOpensAndRotates(t *testing.T) {
	k1, _ := books.NewSecretKey()
	k2, _ := books.NewSecretKey()
	old, err := books.NewKeyring(k1)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := old.Seal([]byte("s3cr3t"), []byte("row-1"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("s3cr3t")) {
		t.Fatal("the sealed secret holds the plain text")
	}
	if _, err := old.Open(sealed, []byte("row-2")); !errors.Is(err, books.ErrSecretKey) {
		t.Errorf("opened with another row's data: %v", err)
	}
	rotated, _ := books.NewKeyring(k2, k1)
	if got, err := rotated.Open(sealed, []byte("row-1")); err != nil || string(got) != "s3cr3t" {
		t.Errorf("rotation keyring opens old secret: %q, %v", got, err)
	}
	if rotated.Current(sealed) {
		t.Error("a secret of the old key reads as current")
	}
	resealed, _ := rotated.Seal([]byte("s3cr3t"), []byte("row-1"))
	if !rotated.Current(resealed) {
		t.Error("a secret sealed by the new key is not current")
	}
	newOnly, _ := books.NewKeyring(k2)
	if _, err := newOnly.Open(sealed, []byte("row-1")); !errors.Is(err, books.ErrSecretKey) {
		t.Errorf("opened without its key: %v", err)
	}
	tampered := bytes.Clone(resealed)
	tampered[len(tampered)-1] ^= 1
	if _, err := rotated.Open(tampered, []byte("row-1")); !errors.Is(err, books.ErrSecretKey) {
		t.Errorf("tampered secret opened: %v", err)
	}
	// Parsing: the error never quotes a key.
	bad := base64.StdEncoding.EncodeToString([]byte("short-key"))
	if _, err := books.ParseSecretKeys(bad); err == nil || strings.Contains(err.Error(), bad) {
		t.Errorf("short key: %v", err)
	}
	keys, err := books.ParseSecretKeys(base64.StdEncoding.EncodeToString(k2) + ", " + base64.RawURLEncoding.EncodeToString(k1))
	if err != nil || len(keys) != 2 || !bytes.Equal(keys[1], k1) {
		t.Errorf("two keys: %v %v", keys, err)
	}
}

// recorder is an API on loopback that records what it was sent.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
	fail bool
}

type recorded struct {
	method, path, query, auth, apiKey, contentType, body string
}

func (rc *recorder) last(t *testing.T) recorded {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.reqs) == 0 {
		t.Fatal("the server got no request")
	}
	return rc.reqs[len(rc.reqs)-1]
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("Content-Type"), string(body)})
	fail := rc.fail
	rc.mu.Unlock()
	if fail {
		// A server that echoes the request's credentials in its error.
		http.Error(w, "upstream broken; you sent "+r.Header.Get("Authorization"), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/customers/7":
		_, _ = w.Write([]byte(`{"id": 7, "name": "Ana", "total": 12.50, "tags": ["vip"]}`))
	default:
		_ = json.NewEncoder(w).Encode(map[string]any{"received": string(body), "path": r.URL.Path})
	}
}

func TestHTTPBookCallsAnAPIWithConnectionAuth(t *testing.T) {
	api := &recorder{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	other := &recorder{}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	e := newEnv(t, books.BuiltinOptions{HTTP: srv.Client()})
	base := map[string]*platformv1.BdkValue{"base url": text(srv.URL + "/api")}
	e.add("http", "crm", auth("bearer", "token", "tok-s3cr3t-1"), base)
	e.add("http", "crm basic", auth("basic", "username", "ana", "password", "pw-s3cr3t-2"), base)
	e.add("http", "crm key", auth("api_key", "header", "X-Api-Key", "key", "key-s3cr3t-3"), base)

	// GET with bearer: the answer's JSON fields are the response's fields.
	code := "call the api at \"/customers/7\" with\n  the connection is \"crm\"\nthe customer is the above\n" +
		"the output name is the customer's name\nthe output total is the customer's total\n"
	res := e.run(code, nil)
	wantCompleted(t, res)
	if got := outputText(t, res, "output name"); got != "Ana" {
		t.Errorf("name = %q", got)
	}
	if got := outputText(t, res, "output total"); got != "12.50" {
		t.Errorf("total = %q (exact decimals)", got)
	}
	if r := api.last(t); r.method != "GET" || r.path != "/api/customers/7" || r.auth != "Bearer tok-s3cr3t-1" {
		t.Errorf("request = %+v", r)
	}

	// POST a JSON body with basic auth and query parameters.
	payload := lang.NewDictionary()
	payload.SetText("name", lang.Text("Bo"))
	payload.SetText("amount", lang.Num(mustNum(t, "3.10")))
	query := lang.NewDictionary()
	query.SetText("dry run", lang.Text("yes"))
	code = "call the api at \"orders\" with\n  the method is \"POST\"\n  the body is the payload\n  the query is the options\n  the connection is \"crm basic\"\nthe output echo is the above's received\n"
	res = e.run(code, map[string]lang.Value{"payload": lang.DictValue(payload), "options": lang.DictValue(query)})
	wantCompleted(t, res)
	r := api.last(t)
	if r.method != "POST" || r.contentType != "application/json" || r.body != `{"name":"Bo","amount":3.10}` || r.query != "dry+run=yes" {
		t.Errorf("POST request = %+v", r)
	}
	if r.auth != "Basic "+base64.StdEncoding.EncodeToString([]byte("ana:pw-s3cr3t-2")) {
		t.Errorf("basic auth = %q", r.auth)
	}

	// A form body with the API key header.
	form := lang.NewDictionary()
	form.SetText("q", lang.Text("a b"))
	code = "call the api at \"search\" with\n  the method is \"put\"\n  the form is the fields\n  the connection is \"crm key\"\n"
	res = e.run(code, map[string]lang.Value{"fields": lang.DictValue(form)})
	wantCompleted(t, res)
	if r := api.last(t); r.method != "PUT" || r.contentType != "application/x-www-form-urlencoded" || r.body != "q=a+b" || r.apiKey != "key-s3cr3t-3" || r.auth != "" {
		t.Errorf("form request = %+v", r)
	}

	// An absolute URL at another origin never carries the connection's
	// credentials.
	res = e.run("call the api at the other url with\n  the connection is \"crm\"\n", map[string]lang.Value{"other url": lang.Text(otherSrv.URL + "/x")})
	wantCompleted(t, res)
	if r := other.last(t); r.auth != "" || r.apiKey != "" {
		t.Errorf("credentials sent to another origin: %+v", r)
	}
}

func mustNum(t *testing.T, s string) lang.Number {
	t.Helper()
	n, err := lang.ParseNumber(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestHTTPBookFailureIsAnExceptionToRetry(t *testing.T) {
	api := &recorder{fail: true}
	srv := httptest.NewServer(api)
	defer srv.Close()
	e := newEnv(t, books.BuiltinOptions{HTTP: srv.Client()})
	e.add("http", "crm", auth("bearer", "token", "tok-s3cr3t-1"), map[string]*platformv1.BdkValue{"base url": text(srv.URL + "/api"), "timeout seconds": num(5)})
	code := "call the api at \"/customers/7\" with\n  the connection is \"crm\"\nthe output name is the above's name\n"
	res := e.run(code, nil)
	if res.Status != lang.Suspended || res.Exception == nil {
		t.Fatalf("status %s, %+v", res.Status, res.Failure)
	}
	msg := res.Exception.Message
	if !strings.Contains(msg, "502 Bad Gateway") || strings.Contains(msg, "tok-s3cr3t-1") {
		t.Errorf("exception message = %q (must name the status, never the token)", msg)
	}
	if res.Exception.Group != lang.GroupUserSystemError {
		t.Errorf("group = %s", res.Exception.Group)
	}
	// The API recovers; retry runs the call again.
	api.mu.Lock()
	api.fail = false
	api.mu.Unlock()
	res = e.resume(code, res.State, lang.Resolution{Kind: lang.Retry})
	wantCompleted(t, res)
	if got := outputText(t, res, "output name"); got != "Ana" {
		t.Errorf("after retry: %q", got)
	}

	// Bad input: an unknown connection, a relative URL without one, a bad
	// method — each an exception, not a crash.
	for _, c := range []struct{ code, want string }{
		{"call the api at \"/x\" with\n  the connection is \"nope\"\n", `no connection named "nope"`},
		{"call the api at \"/x\"\n", "not an absolute http or https URL"},
		{"call the api at \"ftp://x/y\"\n", "only http and https"},
		{"call the api at \"http://127.0.0.1:1/\" with\n  the method is \"BREW\"\n", "must be one of GET"},
	} {
		res := e.run(c.code, nil)
		if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, c.want) {
			t.Errorf("%q: status %s, exception %+v; want one containing %q", c.code, res.Status, res.Exception, c.want)
		}
	}
}

func TestHTTPBookRefusesAnswersOverTheLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range books.MaxHTTPResponseBytes>>20 + 1 {
			_, _ = w.Write(chunk)
		}
	}))
	defer srv.Close()
	e := newEnv(t, books.BuiltinOptions{HTTP: srv.Client()})
	res := e.run("call the api at the url\n", map[string]lang.Value{"url": lang.Text(srv.URL)})
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "larger than 10 MiB") {
		t.Fatalf("status %s, exception %+v", res.Status, res.Exception)
	}
}

func TestConnectionValidationAndSecretsAtRest(t *testing.T) {
	e := newEnv(t, books.BuiltinOptions{})
	ctx := t.Context()
	for _, c := range []struct {
		name string
		in   books.ConnectionInput
		want string
	}{
		{"no name", books.ConnectionInput{}, "connection_name is required"},
		{"unknown method", books.ConnectionInput{Name: "x", Auth: auth("oauth", "token", "t")}, `authentication "oauth" is not one of the book's`},
		{"missing credential", books.ConnectionInput{Name: "x", Auth: auth("basic", "username", "u")}, `needs the credential "password"`},
		{"extra credential", books.ConnectionInput{Name: "x", Auth: auth("bearer", "token", "t", "pin", "1")}, `has no credential "pin"`},
		{"unknown config", books.ConnectionInput{Name: "x", Config: map[string]*platformv1.BdkValue{"host": text("h")}}, `config_map has the key "host"`},
		{"wrong config type", books.ConnectionInput{Name: "x", Config: map[string]*platformv1.BdkValue{"timeout seconds": text("5")}}, "must be a number_value"},
	} {
		_, err := e.conns.Add(ctx, e.ws, "http", "1.0.0", c.in)
		if !errors.Is(err, books.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := e.conns.Add(ctx, e.ws, "nope", "1.0.0", books.ConnectionInput{Name: "x"}); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("unknown book: %v", err)
	}
	d := e.add("http", "crm", auth("bearer", "token", "tok-s3cr3t-1"), nil)
	if _, err := e.conns.Add(ctx, e.ws, "http", "1.0.0", books.ConnectionInput{Name: "crm"}); !errors.Is(err, books.ErrAlreadyExists) {
		t.Errorf("duplicate name: %v", err)
	}
	// The raw row holds no plain text credential.
	row, err := e.st.GetBookConnection(ctx, e.ws.OrganizationID, e.ws.WorkspaceID, d.GetConnectionId())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(row.Secret, []byte("tok-s3cr3t-1")) || bytes.Contains(row.Descriptor, []byte("tok-s3cr3t-1")) || len(row.Secret) == 0 {
		t.Errorf("raw row: descriptor %q secret %x", row.Descriptor, row.Secret)
	}
	// Reads carry the credential's id, never its value.
	for _, got := range []*bookv1.BookConnectionDescriptor{d, must(e.conns.Get(ctx, e.ws, d.GetConnectionId()))} {
		creds := got.GetAuthentication().GetAuthenticationCredentials()
		if len(creds) != 1 || creds[0].GetId() != "token" || creds[0].GetValue() != nil {
			t.Errorf("read credentials = %v", creds)
		}
	}
	// An update without the credential's value keeps it.
	_, err = e.conns.Update(ctx, e.ws, "http", "1.0.0", d.GetConnectionId(), books.ConnectionInput{
		Name: "crm2", Auth: &bookv1.ConnectionAuthentication{AuthenticationId: "bearer",
			AuthenticationCredentials: []*bookv1.CredentialValue{{Id: "token"}}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.conns.Resolve(ctx, e.ws, "http", "crm2")
	if err != nil || c.Credentials["token"] != "tok-s3cr3t-1" {
		t.Errorf("resolved after update: %+v, %v", c, err)
	}
	// A connection of another book is not the http book's.
	e.add("email", "mail", nil, nil)
	if _, err := e.conns.Resolve(ctx, e.ws, "http", "mail"); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("another book's connection: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCodeConnections(t *testing.T) {
	code := "call the api at \"/x\" with\n  the connection is \"crm\"\n\tThe Connection is \"mail\"\nthe connection is the other\n  the connection is \"crm\"\n"
	got := books.CodeConnections(code)
	if len(got) != 2 || got[0] != "crm" || got[1] != "mail" {
		t.Errorf("CodeConnections = %q", got)
	}
}

func TestConnectionsRekeyAfterRotation(t *testing.T) {
	ctx := t.Context()
	st := openBookStore(t, t.TempDir())
	ws := books.Workspace{OrganizationID: "acme", WorkspaceID: "ops"}
	if _, err := st.CreateOrganization(ctx, store.Organization{ID: ws.OrganizationID, DisplayName: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: ws.OrganizationID, ID: ws.WorkspaceID, Title: "Ops"}); err != nil {
		t.Fatal(err)
	}
	k1, _ := books.NewSecretKey()
	k2, _ := books.NewSecretKey()
	old, _ := books.NewKeyring(k1)
	reg := books.NewRegistry(books.WithBuiltins(books.Builtins(books.BuiltinOptions{})...))
	d, err := books.NewConnections(sqlConnections{st}, old, reg).Add(ctx, ws, "http", "1.0.0", books.ConnectionInput{Name: "crm", Auth: auth("bearer", "token", "tok-1")})
	if err != nil {
		t.Fatal(err)
	}
	rotating, _ := books.NewKeyring(k2, k1)
	n, err := books.NewConnections(sqlConnections{st}, rotating, reg).Rekey(ctx)
	if err != nil || n != 1 {
		t.Fatalf("rekey: %d, %v", n, err)
	}
	if n, _ := books.NewConnections(sqlConnections{st}, rotating, reg).Rekey(ctx); n != 0 {
		t.Errorf("a second rekey sealed %d again", n)
	}
	// The old key can go: the new one alone opens the secret.
	c, err := books.NewConnections(sqlConnections{st}, must(books.NewKeyring(k2)), reg).Resolve(ctx, ws, "http", "crm")
	if err != nil || c.Credentials["token"] != "tok-1" || c.ID != d.GetConnectionId() {
		t.Errorf("after rotation: %+v, %v", c, err)
	}
	// Without the key that sealed it, the secret does not open: an error, not
	// a wrong value.
	k3, _ := books.NewSecretKey()
	if _, err := books.NewConnections(sqlConnections{st}, must(books.NewKeyring(k3)), reg).Resolve(ctx, ws, "http", "crm"); !errors.Is(err, books.ErrSecretKey) {
		t.Errorf("wrong key: %v", err)
	}
}

func TestConnectionFilter(t *testing.T) {
	ds := []*bookv1.BookConnectionDescriptor{
		{BookName: "http", BookVersion: "1.0.0", ConnectionName: "CRM main", ConnectionId: "a"},
		{BookName: "email", BookVersion: "1.0.0", ConnectionName: "mail", ConnectionId: "b"},
		{BookName: "http", BookVersion: "2.0.0", ConnectionName: "billing", ConnectionId: "c"},
	}
	for _, c := range []struct{ filter, want string }{
		{``, "abc"},
		{`book_name = "http"`, "ac"},
		{`book_name = "http" AND book_version != "1.0.0"`, "c"},
		{`connection_name:"crm" OR connection_id = "b"`, "ab"},
		{`NOT book_name = "http"`, "b"},
	} {
		f, err := books.ParseConnectionFilter(c.filter)
		if err != nil {
			t.Fatalf("%q: %v", c.filter, err)
		}
		got := ""
		for _, d := range ds {
			if f.Match(d) {
				got += d.GetConnectionId()
			}
		}
		if got != c.want {
			t.Errorf("%q matches %q, want %q", c.filter, got, c.want)
		}
	}
	for _, bad := range []string{`token = "x"`, `book_name = 1`, `book_name >`, `"http" = book_name`} {
		if _, err := books.ParseConnectionFilter(bad); !errors.Is(err, books.ErrInvalidArgument) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func openBookStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
