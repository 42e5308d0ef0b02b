package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/proserun/prose/server/testenv"
)

// TestConsoleSignInNextIsSameOrigin: after sign-in the console sends a
// person only to a path of its own site, as a browser reads the Location —
// browsers drop tabs and newlines from a URL and read a backslash as a
// slash, so "/\t/example.com" and "/\\example.com" lead to example.com.
// Such a next (sent encoded in the form, as a crafted link carries it) ends
// on "/"; a plain path, with its query, is kept.
func TestConsoleSignInNextIsSameOrigin(t *testing.T) {
	e := newTestEnv(t)
	for next, want := range map[string]string{
		"/\t/example.com":        "/",
		"/\n/example.com":        "/",
		"/\r\n/example.com":      "/",
		"\t//example.com":        "/",
		"/\\example.com":         "/",
		"/x/\\..\\\\example.com": "/",
		"/\x00/example.com":      "/",
		"/\x7f/example.com":      "/",
		"//example.com":          "/",
		"https://example.com/":   "/",
		"/%09/example.com":       "/%09/example.com", // encoded: a path segment, the browser keeps it
		"/w/ws1/runs?state=DONE": "/w/ws1/runs?state=DONE",
		"javascript:alert(1)":    "/",
		"/./\t/example.com":      "/",
		"/ok/path":               "/ok/path",
	} {
		c := testenv.BrowserClient(t)
		_, _, tok := testenv.Page(t, c, e.Srv.URL, "/signin")
		code, loc, _ := testenv.Post(t, c, e.Srv.URL, "/signin", url.Values{"csrf": {tok}, "api_key": {e.NewKey(t, testenv.KeySpec{})}, "next": {next}})
		if code != http.StatusSeeOther || loc != want {
			t.Errorf("next=%q: %d Location %q, want %q", next, code, loc, want)
		}
	}
}
