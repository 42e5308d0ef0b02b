package books

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/lang"
)

// HTTPBookName is the name of the built-in http book.
const HTTPBookName = "http"

// HTTPBook returns the built-in http book: it calls REST APIs with hc.
//
//	call an api at a url (the response)
//
// Inputs (besides the url): method (default GET), headers and query
// (dictionaries), body (a dictionary or list is sent as JSON, a text as
// it is), form (a dictionary sent as application/x-www-form-urlencoded),
// connection (the name of an http connection: its "base url" makes a
// relative url absolute, and its authentication — bearer, basic or api_key —
// is added to requests to the base url's origin only). The response is the
// answer's JSON (a dictionary's fields are read as `the response's name`),
// or its text when it is not JSON. A status outside 2xx is an error.
func HTTPBook(hc *http.Client) *Builtin {
	procs := []*bookv1.Procedure{{
		Id:        "call_api",
		Signature: Signature("call an api at a url (the response)"),
		Inputs: []*bookv1.Concept{
			concept("url", textType, "The address to call; relative to the connection's base url when it is not absolute.", nil),
			concept("method", textType, "GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS.", textDefault("GET")),
			concept("headers", dictType, "Request headers (name → text).", nil),
			concept("query", dictType, "Query parameters added to the url (name → value).", nil),
			concept("body", anyType, "The body: a dictionary or list is sent as JSON; a text as it is.", nil),
			concept("form", dictType, "A form body (name → value), sent as application/x-www-form-urlencoded.", nil),
			concept("connection", textType, "The name of an http connection of the workspace.", nil),
		},
		Outputs:            []*bookv1.Concept{concept("response", anyType, "The answer's JSON value, or its text.", nil)},
		ShortDescription:   "Calls a REST API and reads its JSON answer.",
		ConnectionRequired: bookv1.ConnectionRequired_Optional,
		Examples: []*bookv1.Example{{
			Description: "Create a customer in a CRM",
			Snippet:     "call the api at \"/customers\" with\n  the method is \"POST\"\n  the body is a dictionary where\n    the name is \"Ana\"\n  the connection is \"crm\"\nthe customer is the above\nsay the customer's id",
		}},
		SearchHints: []string{"rest", "api", "request", "json", "webhook", "get", "post"},
	}}
	b := builtinBook(HTTPBookName, "HTTP", "Calls REST APIs: method, URL, headers, JSON or form bodies, and authentication from a connection.",
		"The http book is built into Prose. Answers larger than 10 MiB are refused; a call times out after 30 s (a connection's \"timeout seconds\" changes it, up to 120).",
		[]string{"network", "api"}, procs)
	b.Authentications = []*bookv1.Authentication{
		customAuth("bearer", "Bearer token", "token"),
		customAuth("basic", "User name and password", "username", "password"),
		customAuth("api_key", "API key in a header", "header", "key"),
		customAuth(OAuthAuthID, "OAuth 2.0 (authorization code): authorize the connection, then calls carry its access token", "client id", "client secret"),
	}
	b.Configurations = []*bookv1.Concept{
		concept("base url", textType, "The API's base URL; relative urls are joined to it and only requests to its origin carry the credentials.", nil),
		concept("timeout seconds", numberType, "How long a call may take (default 30, at most 120).", nil),
		concept("authorize url", textType, "oauth2: the provider's authorization endpoint.", nil),
		concept("token url", textType, "oauth2: the provider's token endpoint.", nil),
		concept("scopes", textType, "oauth2: the scopes to ask for, separated by spaces.", nil),
	}
	return &Builtin{Book: b, Funcs: map[string]Func{"call_api": func(ctx context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
		return callAPI(ctx, hc, in)
	}}}
}

var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

func callAPI(ctx context.Context, hc *http.Client, in map[string]lang.Value) (map[string]lang.Value, error) {
	conn, err := bookConnection(ctx, in, HTTPBookName)
	if err != nil {
		return nil, err
	}
	m, target, sameOrigin, err := requestTarget(in, conn)
	if err != nil {
		return nil, err
	}
	body, contentType, err := requestBody(in)
	if err != nil {
		return nil, err
	}
	timeout, err := timeoutOf(conn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	newRequest := func() (*http.Request, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, m, target.String(), rd)
		if err != nil {
			return nil, &InputError{Message: fmt.Sprintf("Could not make the request: %v", err)}
		}
		req.Header.Set("Accept", "application/json, */*;q=0.5")
		req.Header.Set("User-Agent", "prose-http-book/1.0")
		// The step's call id, as external books get it: a call made again
		// after a crash (its result was not journaled) carries the same
		// key, so an API that honours Idempotency-Key does it once. A key
		// the automation sets itself (headers below) wins.
		if id := callIDOf(ctx); id != "" {
			req.Header.Set("Idempotency-Key", id)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if h, ok := optional(in, "headers"); ok {
			d := h.AsDictionary()
			if d == nil {
				return nil, &InputError{Message: "the headers must be a dictionary"}
			}
			for i := range d.Len() {
				k, v := d.Entry(i)
				req.Header.Set(plainText(k), plainText(v))
			}
		}
		if conn != nil && sameOrigin {
			if err := authorize(req, conn); err != nil {
				return nil, err
			}
		}
		return req, nil
	}
	// An OAuth connection's access token is refreshed when it has expired,
	// or once when the API answers 401 (see Connections.RefreshOAuth).
	oauth := conn != nil && sameOrigin && conn.AuthID == OAuthAuthID && conn.Credentials[oauthAccessToken] != ""
	refreshed := false
	if oauth && oauthExpired(conn, time.Now()) {
		if conn, err = refreshOAuth(ctx, conn); err != nil {
			return nil, err
		}
		refreshed = true
	}
	req, err := newRequest()
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err == nil && oauth && !refreshed && resp.StatusCode == http.StatusUnauthorized {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if conn, err = refreshOAuth(ctx, conn); err != nil {
			return nil, err
		}
		if req, err = newRequest(); err != nil {
			return nil, err
		}
		resp, err = hc.Do(req)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s %s took longer than %s", m, target.Redacted(), timeout)
		}
		return nil, errors.New(redact(fmt.Sprintf("%s %s: %v", m, target.Redacted(), unwrapURLError(err)), conn))
	}
	defer resp.Body.Close()
	data, err := readLimited(resp.Body, MaxHTTPResponseBytes, "the answer")
	if err != nil {
		return nil, err
	}
	out, err := answerValue(m, target, resp, data, conn)
	if err != nil {
		return nil, err
	}
	return map[string]lang.Value{"response": out}, nil
}

// requestTarget is the method and URL of a call_api (the query added to
// the URL); sameOrigin: the URL is the connection's (see resolveURL).
func requestTarget(in map[string]lang.Value, conn *Connection) (m string, target *url.URL, sameOrigin bool, err error) {
	raw, err := input(in, "url", lang.KindText)
	if err != nil {
		return "", nil, false, err
	}
	method, err := input(in, "method", lang.KindText)
	if err != nil {
		return "", nil, false, err
	}
	m = strings.ToUpper(strings.TrimSpace(method.AsText()))
	if !containsString(httpMethods, m) {
		return "", nil, false, &InputError{Message: fmt.Sprintf("Could not use %q as the method: it must be one of %s", method.AsText(), strings.Join(httpMethods, ", "))}
	}
	target, sameOrigin, err = resolveURL(raw.AsText(), conn)
	if err != nil {
		return "", nil, false, err
	}
	if q, ok := optional(in, "query"); ok {
		d := q.AsDictionary()
		if d == nil {
			return "", nil, false, &InputError{Message: "the query must be a dictionary"}
		}
		vals := target.Query()
		for i := range d.Len() {
			k, v := d.Entry(i)
			vals.Add(plainText(k), plainText(v))
		}
		target.RawQuery = vals.Encode()
	}
	return m, target, sameOrigin, nil
}

// answerValue is the value of an API's answer: its JSON decoded (when it
// says it is JSON, or says nothing and parses), else its text; null when
// empty. An answer other than 2xx is an error quoting its start.
func answerValue(m string, target *url.URL, resp *http.Response, data []byte, conn *Connection) (lang.Value, error) {
	if resp.StatusCode/100 != 2 {
		snippet := strings.TrimSpace(string(data))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "…"
		}
		msg := fmt.Sprintf("%s %s: the server answered %s", m, target.Redacted(), resp.Status)
		if snippet != "" {
			msg += ": " + snippet
		}
		return lang.Value{}, errors.New(redact(msg, conn))
	}
	out := lang.Text(string(data))
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if len(bytes.TrimSpace(data)) == 0 {
		out = lang.Null()
	} else if mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "" {
		if v, err := lang.DecodePlain(data); err == nil {
			out = v
		} else if mt != "" {
			return lang.Value{}, fmt.Errorf("%s %s: the answer is not valid JSON: %w", m, target.Redacted(), err)
		}
	}
	return out, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// resolveURL makes raw absolute (joined to the connection's base url when it
// is relative) and reports whether it is at the base url's origin (or the
// connection has no base url), i.e. whether it may carry the credentials.
func resolveURL(raw string, conn *Connection) (*url.URL, bool, error) {
	bad := func(why string) error {
		return &InputError{Message: fmt.Sprintf("Could not call %q: %s", raw, why)}
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, false, bad("it is not a URL")
	}
	base := ""
	if conn != nil {
		base = conn.ConfigText("base url")
	}
	if base == "" {
		if !u.IsAbs() {
			return nil, false, bad("it is not an absolute http or https URL (a connection with a base url makes relative ones work)")
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, false, bad("only http and https URLs are called")
		}
		return u, true, nil
	}
	b, err := url.Parse(base)
	if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		return nil, false, &InputError{Message: fmt.Sprintf("the connection %q has a base url that is not an http or https URL", conn.Name)}
	}
	if !u.IsAbs() {
		if !strings.HasSuffix(b.Path, "/") {
			b.Path += "/"
		}
		u = b.ResolveReference(&url.URL{Path: strings.TrimPrefix(u.Path, "/"), RawQuery: u.RawQuery})
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, false, bad("only http and https URLs are called")
	}
	return u, u.Scheme == b.Scheme && u.Host == b.Host, nil
}

func requestBody(in map[string]lang.Value) ([]byte, string, error) {
	body, hasBody := optional(in, "body")
	form, hasForm := optional(in, "form")
	switch {
	case hasBody && hasForm:
		return nil, "", &InputError{Message: "Give a body or a form, not both"}
	case hasForm:
		d := form.AsDictionary()
		if d == nil {
			return nil, "", &InputError{Message: "the form must be a dictionary"}
		}
		vals := url.Values{}
		for i := range d.Len() {
			k, v := d.Entry(i)
			vals.Add(plainText(k), plainText(v))
		}
		return []byte(vals.Encode()), "application/x-www-form-urlencoded", nil
	case hasBody:
		var data []byte
		ct := "application/json"
		if body.Kind() == lang.KindText {
			data, ct = []byte(body.AsText()), "text/plain; charset=utf-8"
		} else {
			var err error
			if data, err = lang.AppendPlain(nil, body); err != nil {
				return nil, "", &InputError{Message: fmt.Sprintf("Could not send the body as JSON: %v", err)}
			}
		}
		if len(data) > MaxHTTPRequestBytes {
			return nil, "", &InputError{Message: fmt.Sprintf("the body is larger than %d MiB", MaxHTTPRequestBytes>>20)}
		}
		return data, ct, nil
	}
	return nil, "", nil
}

// authorize adds the connection's authentication to req.
func authorize(req *http.Request, c *Connection) error {
	cred := func(id string) (string, error) {
		v, ok := c.Credentials[id]
		if !ok || v == "" {
			return "", &InputError{Message: fmt.Sprintf("the connection %q has no %s", c.Name, id)}
		}
		return v, nil
	}
	switch c.AuthID {
	case "":
		return nil
	case "bearer":
		t, err := cred("token")
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+t)
	case "basic":
		u, err := cred("username")
		if err != nil {
			return err
		}
		p, err := cred("password")
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u+":"+p)))
	case "api_key":
		h, err := cred("header")
		if err != nil {
			return err
		}
		k, err := cred("key")
		if err != nil {
			return err
		}
		req.Header.Set(h, k)
	case OAuthAuthID:
		t := c.Credentials[oauthAccessToken]
		if t == "" {
			return &InputError{Message: fmt.Sprintf("the connection %q is not authorized yet: authorize it (PUT …/connections/%s/authorize) and open the URL it gives", c.Name, c.ID)}
		}
		req.Header.Set("Authorization", "Bearer "+t)
	default:
		return &InputError{Message: fmt.Sprintf("the connection %q has the authentication %q, which the http book does not know", c.Name, c.AuthID)}
	}
	return nil
}
