// Package console is Prose's web console: server-rendered pages
// (html/template, assets embedded) where a person finds, understands and
// resolves what their automations need.
//
// The console holds no authority of its own. Every page calls the gRPC
// services through the same in-process channel the HTTP API uses
// (chain.Local), with the session's token in the call's metadata
// (Auth.ConsoleContext): the server's interceptor chain authenticates the
// session as its user and authorizes each call exactly as it does an API
// call.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
)

//go:embed static
var staticFS embed.FS

//go:embed templates/*.html
var templateFS embed.FS

// Defaults of Options.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultLinkTTL    = 24 * time.Hour
)

const (
	sessionCookie = "prose_session"
	signinCookie  = "prose_signin"
	// maxFormBytes bounds a form post.
	maxFormBytes = 1 << 20
)

// Auth is the server's authenticator as the console uses it
// (auth.KeyAuth implements it).
type Auth interface {
	// ConsoleContext returns ctx carrying the session token for calls on
	// the in-process channel.
	ConsoleContext(ctx context.Context, sessionToken string) context.Context
	// KeyIdentity checks an API key and returns its record.
	KeyIdentity(ctx context.Context, key string) (store.APIKey, error)
	// Session returns the current session of a token (store.ErrNotFound
	// when there is none or it has expired); the server caches it for the
	// console and its own interceptor alike.
	Session(ctx context.Context, token string) (store.ConsoleSession, error)
}

// Options configures New.
type Options struct {
	// Conn is the in-process channel to the services (chain.Local),
	// behind the interceptor chain.
	Conn grpc.ClientConnInterface
	// Sessions stores sessions and sign-in links.
	Sessions store.ConsoleSessions
	Auth     Auth
	// SessionTTL is how long a session lasts (0: DefaultSessionTTL).
	SessionTTL time.Duration
	// Secure marks cookies Secure (the console is served over https);
	// requests that arrived over TLS get Secure cookies anyway.
	Secure bool
	Logger *slog.Logger
	Now    func() time.Time
	// Hub wakes the live pages of a workspace (nil: a new one; give the
	// same Hub to engine.Options.Changed).
	Hub *Hub
	// Replicas, when set (replicas share a PostgreSQL database), carries
	// the changes of runs and exceptions between the replicas, so that the
	// live pages of one show the changes made on another at once (see
	// live.go).
	Replicas Replicas
}

// Console serves the pages.
type Console struct {
	opts  Options
	mux   *http.ServeMux
	pages map[string]*template.Template
	hub   *Hub
	// done ends the live streams (Close).
	done  chan struct{}
	close func()

	exceptions  platformv1.ExceptionServiceClient
	runs        platformv1.RunServiceClient
	history     platformv1.RunHistoryServiceClient
	automations platformv1.AutomationServiceClient
	workspaces  platformv1.WorkspaceServiceClient
	orgs        platformv1.OrganizationServiceClient
	apiKeys     platformv1.ApiKeyServiceClient
	books       bookv1.BookServiceClient
	events      platformv1.EventServiceClient
	productClients
}

// New builds the console.
func New(opts Options) (*Console, error) {
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Hub == nil {
		opts.Hub = NewHub()
	}
	done := make(chan struct{})
	c := &Console{
		opts: opts, mux: http.NewServeMux(), pages: map[string]*template.Template{},
		hub: opts.Hub, done: done, close: sync.OnceFunc(func() { close(done) }),
		exceptions:  platformv1.NewExceptionServiceClient(opts.Conn),
		runs:        platformv1.NewRunServiceClient(opts.Conn),
		history:     platformv1.NewRunHistoryServiceClient(opts.Conn),
		automations: platformv1.NewAutomationServiceClient(opts.Conn),
		workspaces:  platformv1.NewWorkspaceServiceClient(opts.Conn),
		orgs:        platformv1.NewOrganizationServiceClient(opts.Conn),
		apiKeys:     platformv1.NewApiKeyServiceClient(opts.Conn),
		books:       bookv1.NewBookServiceClient(opts.Conn),
		events:      platformv1.NewEventServiceClient(opts.Conn),
	}
	c.productClients = newProductClients(opts.Conn)
	if err := c.parseTemplates(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	if opts.Replicas != nil {
		ctx, cancel := context.WithCancel(context.Background())
		opts.Hub.share(ctx, opts.Replicas)
		go func() { <-done; cancel() }()
	}
	c.mux.HandleFunc("GET /signin", c.signinPage)
	c.mux.HandleFunc("POST /signin", c.signin)
	c.mux.HandleFunc("POST /signout", c.signout)
	c.mux.HandleFunc("GET /{$}", c.session(c.home))
	c.mux.HandleFunc("GET /w/{ws}/{$}", c.session(c.inbox))
	c.mux.HandleFunc("POST /w/{ws}/exceptions:archive", c.session(c.archiveSelected))
	c.mux.HandleFunc("POST /w/{ws}/exceptions:assign", c.session(c.assignSelected))
	c.mux.HandleFunc("GET /w/{ws}/exceptions/{id}", c.session(c.exception))
	c.mux.HandleFunc("GET /w/{ws}/exceptions/{id}/conversation", c.session(c.conversation))
	c.mux.HandleFunc("POST /w/{ws}/exceptions/{id}/{action}", c.session(c.exceptionAction))
	c.mux.HandleFunc("POST /w/{ws}/check-code", c.session(c.checkCode))
	c.mux.HandleFunc("GET /w/{ws}/runs", c.session(c.runList))
	c.mux.HandleFunc("GET /w/{ws}/live", c.session(c.live))
	c.mux.HandleFunc("GET /w/{ws}/settings", c.session(c.settings))
	c.mux.HandleFunc("POST /w/{ws}/settings/keys/{action}", c.session(c.keyAction))
	c.mux.HandleFunc("POST /w/{ws}/settings/members/{action}", c.session(c.memberAction))
	c.mux.HandleFunc("GET /w/{ws}/automations", c.session(c.automationList))
	c.mux.HandleFunc("POST /w/{ws}/automations", c.session(c.createAutomation))
	c.mux.HandleFunc("GET /w/{ws}/automations/{a}", c.session(c.automation))
	c.mux.HandleFunc("POST /w/{ws}/automations/{a}/{action}", c.session(c.automationAction))
	c.mux.HandleFunc("GET /w/{ws}/automations/{a}/runs/{r}", c.session(c.run))
	c.mux.HandleFunc("POST /w/{ws}/automations/{a}/runs/{r}/{action}", c.session(c.runAction))
	c.productRoutes()
	c.safeChangeRoutes()
	return c, nil
}

// Close ends the live streams (before the server drains its connections)
// and the replica refresh.
func (c *Console) Close() { c.close() }

// Owns reports whether the console serves path (the rest is the API's).
func Owns(path string) bool {
	return path == "/" || path == "/signin" || path == "/signout" ||
		strings.HasPrefix(path, "/w/") || strings.HasPrefix(path, "/static/")
}

// Mount returns a handler that serves the console's paths and passes every
// other request to api.
func (c *Console) Mount(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Owns(r.URL.Path) {
			c.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if r.Method == http.MethodPost {
		// A post from another site's page is refused before anything else
		// (the CSRF token is checked again per form).
		if o := r.Header.Get("Origin"); o != "" && o != "null" && !sameOrigin(o, r) {
			c.fail(w, r, nil, http.StatusForbidden, "This form was not sent by this console.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
	c.mux.ServeHTTP(w, r)
}

func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// CreateLink stores a one-time sign-in link for user in org, valid for ttl
// (0: DefaultLinkTTL), and returns its token; the link is
// <console>/signin?link=<token>.
func CreateLink(ctx context.Context, st store.ConsoleSessions, org, user string, ttl time.Duration, now time.Time) (string, error) {
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	token := randomToken()
	_, err := st.CreateConsoleSession(ctx, store.ConsoleSession{
		TokenHash: store.ConsoleTokenHash(token), Link: true, OrganizationID: org, UserID: user, ExpireTime: now.Add(ttl),
	})
	return token, err
}

// LinkURL is the sign-in URL of a link token on a console at base
// (http://127.0.0.1:8080).
func LinkURL(base, token string) string {
	return strings.TrimRight(base, "/") + "/signin?link=" + url.QueryEscape(token)
}

// sess is the signed-in caller of a request.
type sess struct {
	store.ConsoleSession
	token string
	ctx   context.Context // carries the session for gRPC calls
}

type sessionHandler func(w http.ResponseWriter, r *http.Request, s *sess)

// session loads the request's session (else redirects to sign-in) and, on
// posts, checks the form's CSRF token.
func (c *Console) session(h sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(sessionCookie)
		var s store.ConsoleSession
		if err == nil {
			s, err = c.opts.Auth.Session(r.Context(), ck.Value)
		}
		if err != nil {
			if !errors.Is(err, http.ErrNoCookie) && !errors.Is(err, store.ErrNotFound) {
				c.fail(w, r, nil, http.StatusInternalServerError, "The console could not read your session.")
				c.opts.Logger.Error("console session", "err", err)
				return
			}
			if r.Method != http.MethodGet {
				c.fail(w, r, nil, http.StatusUnauthorized, "Your session has ended: sign in again.")
				return
			}
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		cs := &sess{ConsoleSession: s, token: ck.Value, ctx: c.opts.Auth.ConsoleContext(r.Context(), ck.Value)}
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				c.fail(w, r, cs, http.StatusBadRequest, "The form could not be read: "+err.Error())
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.CSRFToken)) != 1 {
				c.fail(w, r, cs, http.StatusForbidden, "This form was not sent by this console (its anti-forgery token is missing or wrong). Reload the page and try again.")
				return
			}
		}
		h(w, r, cs)
	}
}

func (c *Console) secure(r *http.Request) bool {
	return c.opts.Secure || r.TLS != nil
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	// Secure whenever the console is served over https; a console on
	// http://127.0.0.1 needs cookies without it.
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure is set per request, see above
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.secure(r),
	})
}

type signinData struct {
	pageData
	Next, Link string
}

// signinPage shows the sign-in form (an API key, or the button of a link).
func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	tok := randomToken()
	c.setCookie(w, r, signinCookie, tok, 600)
	c.render(w, r, http.StatusOK, "signin", &signinData{
		pageData: pageData{Title: "Sign in", CSRF: tok},
		Next:     safeNext(r.URL.Query().Get("next")), Link: r.URL.Query().Get("link"),
	})
}

// safeNext keeps only a local path to go to after sign-in.
//
// A browser reads a Location leniently: it drops tabs and newlines anywhere,
// strips control characters and spaces at the ends, and reads a backslash
// as a slash, so "/\t/example.com" or "/\\example.com" leads off the site.
// A next with any control character or backslash is refused; what is left
// must parse to a path of this origin (no scheme, host or user, not "//").
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	for _, r := range next {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}

// signin starts a session from an API key or a one-time link.
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, nil, http.StatusBadRequest, "The form could not be read.")
		return
	}
	ck, err := r.Cookie(signinCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		c.fail(w, r, nil, http.StatusForbidden, "This sign-in form has expired or was not sent by this console: open the sign-in page again.")
		return
	}
	now := c.opts.Now()
	s := store.ConsoleSession{CSRFToken: randomToken(), ExpireTime: now.Add(c.opts.SessionTTL)}
	retry := func(msg string) {
		c.render(w, r, http.StatusUnauthorized, "signin", &signinData{
			pageData: pageData{Title: "Sign in", CSRF: ck.Value, Error: msg}, Next: safeNext(r.PostFormValue("next")),
		})
	}
	if link := r.PostFormValue("link"); link != "" {
		l, err := c.opts.Sessions.TakeConsoleLink(r.Context(), store.ConsoleTokenHash(link), now)
		if errors.Is(err, store.ErrNotFound) {
			retry("This sign-in link was used already or has expired. Ask for a new one with `prose login-link`, or sign in with an API key.")
			return
		}
		if err != nil {
			c.internal(w, r, nil, err)
			return
		}
		s.OrganizationID, s.UserID = l.OrganizationID, l.UserID
	} else {
		k, err := c.opts.Auth.KeyIdentity(r.Context(), strings.TrimSpace(r.PostFormValue("api_key")))
		if err != nil {
			if status.Code(err) == codes.Unauthenticated {
				retry("That API key is not valid: " + status.Convert(err).Message() + ".")
				return
			}
			c.internal(w, r, nil, err)
			return
		}
		s.OrganizationID, s.UserID, s.APIKeyID = k.OrganizationID, k.UserID, k.ID
	}
	// Sessions and links past their expiry go at each sign-in (an indexed
	// delete); a lookup never returns them anyway.
	if _, err := c.opts.Sessions.DeleteExpiredConsoleSessions(r.Context(), now); err != nil {
		c.opts.Logger.Warn("console: delete expired sessions", "err", err)
	}
	token := randomToken()
	s.TokenHash = store.ConsoleTokenHash(token)
	if _, err := c.opts.Sessions.CreateConsoleSession(r.Context(), s); err != nil {
		c.internal(w, r, nil, err)
		return
	}
	c.setCookie(w, r, signinCookie, "", -1)
	c.setCookie(w, r, sessionCookie, token, int(c.opts.SessionTTL/time.Second))
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// signout ends the session.
func (c *Console) signout(w http.ResponseWriter, r *http.Request) {
	c.session(func(w http.ResponseWriter, r *http.Request, s *sess) {
		if err := c.opts.Sessions.DeleteConsoleSession(r.Context(), s.TokenHash); err != nil && !errors.Is(err, store.ErrNotFound) {
			c.internal(w, r, s, err)
			return
		}
		c.setCookie(w, r, sessionCookie, "", -1)
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
	})(w, r)
}

// mendable is the message of err when its code is one of mistakes (an
// error the person can mend on the page, shown there), ok false otherwise
// (grpcFail's).
func mendable(err error, mistakes ...codes.Code) (msg string, ok bool) {
	st := status.Convert(err)
	if !slices.Contains(mistakes, st.Code()) {
		return "", false
	}
	return st.Message(), true
}

// grpcFail renders a gRPC error of a call made for the page.
func (c *Console) grpcFail(w http.ResponseWriter, r *http.Request, s *sess, err error) {
	st := status.Convert(err)
	var code int
	switch st.Code() {
	case codes.InvalidArgument, codes.OutOfRange:
		code = http.StatusBadRequest
	case codes.PermissionDenied:
		code = http.StatusForbidden
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.FailedPrecondition, codes.Aborted, codes.AlreadyExists:
		code = http.StatusConflict
	case codes.ResourceExhausted:
		code = http.StatusTooManyRequests
	case codes.Unauthenticated:
		c.setCookie(w, r, sessionCookie, "", -1)
		if r.Method == http.MethodGet {
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		code = http.StatusUnauthorized
	default:
		c.internal(w, r, s, err)
		return
	}
	c.fail(w, r, s, code, st.Message())
}

func (c *Console) internal(w http.ResponseWriter, r *http.Request, s *sess, err error) {
	c.opts.Logger.Error("console", "path", r.URL.Path, "err", err)
	c.fail(w, r, s, http.StatusInternalServerError, "Something went wrong on the server; it was logged.")
}

func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *sess, code int, msg string) {
	d := &pageData{Title: http.StatusText(code), Error: msg}
	if s != nil {
		d.CSRF = s.CSRFToken
		d.SignedIn = true
		d.WS = r.PathValue("ws")
	}
	c.render(w, r, code, "error", d)
}

// pageData is what every page's layout reads.
type pageData struct {
	Title    string
	CSRF     string
	Error    string
	Notice   string
	SignedIn bool
	WS       string
	// Workspaces for the switcher.
	Workspaces []*platformv1.Workspace
	// Perms are the caller's permissions in WS.
	Perms map[string]bool
}

// Can reports whether the caller holds perm (write buttons depend on it).
func (p *pageData) Can(perm string) bool { return p.Perms[perm] }

func (p *pageData) page() *pageData { return p }

type page interface{ page() *pageData }

func (c *Console) render(w http.ResponseWriter, r *http.Request, code int, name string, data page) {
	t, ok := c.pages[name]
	if !ok {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	tmpl := "layout"
	if r.URL.Query().Get("fragment") != "" {
		tmpl = "content"
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, tmpl, data); err != nil {
		c.opts.Logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(code)
	_, _ = fmt.Fprint(w, b.String())
}
