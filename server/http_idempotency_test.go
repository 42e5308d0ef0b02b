package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/proserun/prose/server/testenv"
	"github.com/proserun/prose/store"
)

// TestHTTPBookSendsIdempotencyKey: every call of the http book carries the
// run's call id ({run}/{step}/{journal index}) as Idempotency-Key, as
// external books get it: two calls of a run carry two keys, a call made
// again (a person retries it after the API failed) carries the same key.
func TestHTTPBookSendsIdempotencyKey(t *testing.T) {
	e := newTestEnv(t)
	var mu sync.Mutex
	var keys []string
	fail := true
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, r.URL.Path+" "+r.Header.Get("Idempotency-Key"))
		if r.URL.Path == "/second" && fail {
			fail = false
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	defer api.Close()
	a := e.MkAutomation(t, "Calls", `call the api at "`+api.URL+`/first"
call the api at "`+api.URL+`/second" with
  the method is "POST"
the output done is 1
`, false)
	run := e.invokeAPI(t, a.ID)
	r := e.WaitRun(t, a.ID, run, "awaiting_guidance")
	xid := store.LastSegment(fmt.Sprint(testenv.Field(r, "state.awaiting_guidance.exception")))
	e.API(t, "POST", e.WsPath()+"/exceptions/"+xid+":resolve", `{"retry": {}}`, 200)
	e.WaitRun(t, a.ID, run, "completed")

	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 3 {
		t.Fatalf("calls: %q", keys)
	}
	key := func(i int) string { _, k, _ := strings.Cut(keys[i], " "); return k }
	if !strings.HasPrefix(keys[0], "/first "+run+"/") || !strings.HasPrefix(keys[1], "/second "+run+"/") || key(0) == key(1) {
		t.Errorf("two calls of the run: %q, want two keys %s/…", keys[:2], run)
	}
	if keys[2] != keys[1] {
		t.Errorf("the call made again: %q, then %q: want the same key", keys[1], keys[2])
	}
}
