package testenv

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// BrowserClient is an HTTP client with a cookie jar that does not follow
// redirects (tests look at them).
func BrowserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// Page GETs path and returns the status, the body and the first CSRF token
// on it.
func Page(t *testing.T, c *http.Client, base, path string) (int, string, string) {
	t.Helper()
	res, err := c.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	tok := ""
	if m := csrfField.FindSubmatch(b); m != nil {
		tok = string(m[1])
	}
	return res.StatusCode, string(b), tok
}

// Post sends a form and returns the status, the Location and the body.
func Post(t *testing.T, c *http.Client, base, path string, form url.Values, header ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}

// ConsoleSignIn signs c in with an API key and returns the session's CSRF
// token (read from the inbox).
func (e *Env) ConsoleSignIn(t *testing.T, c *http.Client, key string) string {
	t.Helper()
	_, _, tok := Page(t, c, e.Srv.URL, "/signin")
	code, loc, body := Post(t, c, e.Srv.URL, "/signin", url.Values{"csrf": {tok}, "api_key": {key}, "next": {"/"}})
	if code != http.StatusSeeOther || loc != "/" {
		t.Fatalf("sign-in: %d %s %s", code, loc, body)
	}
	code, _, csrf := Page(t, c, e.Srv.URL, "/w/"+e.Init.WorkspaceID+"/")
	if code != http.StatusOK || csrf == "" {
		t.Fatalf("inbox after sign-in: %d", code)
	}
	return csrf
}

// MustURL parses s, failing t when it is not a URL.
func MustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
