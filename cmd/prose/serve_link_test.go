package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
	"github.com/proserun/prose/server/testenv"
)

// startServe runs `prose serve args…` in process until the test ends, and
// returns its stderr once it says it is serving.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testenv.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- serveCmd(ctx, append(args, "--log-level", "info", "--log-format", "json"), nil, io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(testtime.Limit(testtime.Wait)):
			t.Error("serve did not stop")
		}
	})
	for deadline := testtime.Deadline(testtime.Wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s := stderr.String(); strings.Contains(s, `"msg":"serving"`) {
			return s
		}
		select {
		case rc := <-done:
			t.Fatalf("serve exited %d:\n%s", rc, stderr.String())
		default:
		}
	}
	t.Fatalf("serve is not serving:\n%s", stderr.String())
	return ""
}

var (
	signInLinkRE = regexp.MustCompile(`(https?://[^/\s]+)/signin\?link=[A-Za-z0-9_%-]+`)
	listenPortRE = regexp.MustCompile(`"msg":"serving","addr":"[^"]*:(\d+)"`)
)

// signInWith signs a browser in with a link serve printed, at base (the
// link's own origin unless the test serves it elsewhere).
func signInWith(t *testing.T, link, base string) {
	t.Helper()
	u := testenv.MustURL(t, link)
	c := testenv.BrowserClient(t)
	_, body, tok := testenv.Page(t, c, base, "/signin?"+u.RawQuery)
	if !strings.Contains(body, "Sign in with this link") {
		t.Fatal("the printed link's page offers no sign-in")
	}
	if code, loc, body := testenv.Post(t, c, base, "/signin", url.Values{"csrf": {tok}, "link": {u.Query().Get("link")}, "next": {"/"}}); code != http.StatusSeeOther || loc != "/" {
		t.Fatalf("sign in with the printed link: %d %s %s", code, loc, body)
	}
	if code, _, _ := testenv.Page(t, c, base, "/"); code != http.StatusSeeOther {
		t.Errorf("home after sign-in: %d, want a redirect to the inbox", code)
	}
}

// `prose serve` on an empty store prints the `prose login` line and a
// one-time sign-in link, both at the address it listens on (port 0 as the
// port it got, 0.0.0.0 as localhost) or at --public-url; the link signs
// in, and the hints are whole command lines.
func TestServePrintsSignInLink(t *testing.T) {
	for _, tc := range []struct {
		name, addr, publicURL string
		base, login           string // $PORT: the port serve got
	}{
		{"loopback", "127.0.0.1:0", "", "http://127.0.0.1:$PORT", "127.0.0.1:$PORT"},
		{"every address", "0.0.0.0:0", "", "http://localhost:$PORT", "localhost:$PORT"},
		{"public url", "127.0.0.1:0", "https://prose.example.test/", "https://prose.example.test", "https://prose.example.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir() + "/my data"
			args := []string{"--addr", tc.addr, "--data", data}
			if tc.publicURL != "" {
				args = append(args, "--public-url", tc.publicURL)
			}
			out := startServe(t, args...)
			m := listenPortRE.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no port in:\n%s", out)
			}
			port := m[1]
			base := strings.ReplaceAll(tc.base, "$PORT", port)
			link := signInLinkRE.FindStringSubmatch(out)
			if link == nil || link[1] != base {
				t.Fatalf("serve printed no sign-in link at %s:\n%s", base, out)
			}
			if !regexp.MustCompile(`Next: prose login --address ` + regexp.QuoteMeta(strings.ReplaceAll(tc.login, "$PORT", port)) + ` --api-key prose_\S+ --workspace organizations/\S+\n`).MatchString(out) {
				t.Errorf("no whole `prose login` line for %s:\n%s", tc.login, out)
			}
			again := "(or later: prose login-link --data '" + data + "' --url " + base + "):"
			if !strings.Contains(out, again) {
				t.Errorf("no whole `prose login-link` line %q:\n%s", again, out)
			}
			signInWith(t, link[0], "http://127.0.0.1:"+port)
		})
	}
}

// After `prose init`, serve prints no key and no link, unless asked
// with --print-login-link (or PROSE_PRINT_LOGIN_LINK); init's own output
// says so, with the store and address it was given.
func TestServePrintLoginLink(t *testing.T) {
	data := t.TempDir()
	var out, errb bytes.Buffer
	if rc := initCmd(context.Background(), []string{"--data", data, "--address", "127.0.0.1:9191"}, nil, &out, &errb); rc != 0 {
		t.Fatalf("init: %d %s", rc, errb.String())
	}
	for _, want := range []string{
		"Next: prose login --address 127.0.0.1:9191 --api-key prose_",
		"Sign in to the web console with the link that prints: prose serve --data " + data + " --addr 127.0.0.1:9191 --print-login-link\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("init does not say %q:\n%s", want, out.String())
		}
	}
	errb.Reset()
	if rc := initCmd(context.Background(), []string{"--data", data}, nil, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "for a new key: prose keys create --name NAME --data "+data+" (") {
		t.Errorf("init again: %d %s", rc, errb.String())
	}
	if s := startServe(t, "--addr", "127.0.0.1:0", "--data", data); signInLinkRE.MatchString(s) || strings.Contains(s, "prose_") {
		t.Fatalf("serve on an initialised store printed a link or a key:\n%s", s)
	}
	for _, args := range [][]string{{"--print-login-link"}, {"--print-login-link=true"}} {
		s := startServe(t, append([]string{"--addr", "127.0.0.1:0", "--data", data}, args...)...)
		link := signInLinkRE.FindString(s)
		if link == "" || strings.Contains(s, "Next: prose login") {
			t.Fatalf("serve %v: want a link and no key:\n%s", args, s)
		}
		signInWith(t, link, signInLinkRE.FindStringSubmatch(s)[1])
	}
	t.Setenv("PROSE_PRINT_LOGIN_LINK", "true")
	if s := startServe(t, "--addr", "127.0.0.1:0", "--data", data); !signInLinkRE.MatchString(s) {
		t.Fatalf("PROSE_PRINT_LOGIN_LINK=true: no link:\n%s", s)
	}
}

// An address of every interface (0.0.0.0, ::), where a server listens, is
// localhost where a client goes: in login-link's link (PROSE_ADDRESS) and
// in init's `prose login` line, while init's `prose serve` line keeps it.
func TestSignInOnEveryAddress(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	t.Setenv("PROSE_CONFIG", t.TempDir()+"/profiles.json")
	var out, errb bytes.Buffer
	if rc := initCmd(ctx, []string{"--data", data, "--address", "0.0.0.0:9191"}, nil, &out, &errb); rc != 0 {
		t.Fatalf("init: %d %s", rc, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "Next: prose login --address localhost:9191 --api-key") || !strings.Contains(s, "--addr 0.0.0.0:9191 --print-login-link") {
		t.Errorf("init on 0.0.0.0:\n%s", s)
	}
	for addr, want := range map[string]string{
		"0.0.0.0:9090":         "http://localhost:9090/signin?link=",
		"[::]:9090":            "http://localhost:9090/signin?link=",
		"http://0.0.0.0:9090":  "http://localhost:9090/signin?link=",
		"https://prose.test":   "https://prose.test/signin?link=",
		"prose.internal:8443":  "http://prose.internal:8443/signin?link=",
		"https://[::1]:8443/x": "https://[::1]:8443/x/signin?link=",
	} {
		t.Setenv("PROSE_ADDRESS", addr)
		out.Reset()
		if rc := loginLinkCmd(ctx, []string{"--data", data}, nil, &out, &errb); rc != 0 || !strings.HasPrefix(out.String(), want) {
			t.Errorf("PROSE_ADDRESS=%s: login-link %d %q, want %s…", addr, rc, out.String(), want)
		}
	}
}
