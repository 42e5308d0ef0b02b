package sqlstore

import (
	"sync"
	"time"

	"github.com/proserun/prose/store"
)

// wsCache keeps the workspaces GetWorkspace read (every call of the API
// under a workspace checks that it exists; GET a workspace is one of the
// commonest calls) under the store's AuthGeneration, as server/transport's
// KeyAuth keeps keys: an entry is used only while the generation it was
// read under is current and for at most wsCacheTTL. Every write that
// changes what GetWorkspace returns moves the generation on after its
// commit (authChanged: a workspace updated or deleted, its organization
// deleted, its creator updated or deleted), in this process at once and, on
// PostgreSQL, in the other replicas by NOTIFY (store/postgres's listener,
// which also moves it on whenever it reconnects). The TTL bounds what a
// write the store cannot see leaves cached (another process on the same
// SQLite file, a replica whose notices are interrupted). Errors (a
// workspace not found) are not cached.
type wsCache struct {
	mu sync.Mutex
	m  map[wsKey]wsEntry
}

type wsKey struct{ org, id string }

type wsEntry struct {
	w   store.Workspace
	gen uint64
	at  time.Time
}

const (
	// wsCacheTTL bounds how long a cached workspace is used.
	wsCacheTTL = 2 * time.Second
	// wsCacheMax bounds the entries (beyond it the cache starts again
	// empty).
	wsCacheMax = 10000
)

func (c *wsCache) get(k wsKey, gen uint64) (store.Workspace, bool) {
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || e.gen != gen || time.Since(e.at) >= wsCacheTTL {
		return store.Workspace{}, false
	}
	return e.w, true
}

// put keeps w, read under gen (read before the workspace: a change
// committed after that moves the generation on and the entry is not used).
func (c *wsCache) put(k wsKey, w store.Workspace, gen uint64, at time.Time) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= wsCacheMax {
		c.m = map[wsKey]wsEntry{}
	}
	c.m[k] = wsEntry{w: w, gen: gen, at: at}
	c.mu.Unlock()
}
