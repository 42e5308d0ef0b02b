// Package uploadslots bounds the uploads in flight: the server's whole
// bound (a channel of slots) and each tenant's share of it, so that one
// organization's slow uploads take at most its share and the others'
// still find slots. The HTTP gateway and the gRPC server's admission
// both take their slots here.
package uploadslots

import (
	"context"
	"sync"
	"time"
)

// PerTenant holds each tenant's share of the slots. A tenant's entry lives
// while it has uploads holding or waiting for one of its slots.
type PerTenant struct {
	max int
	mu  sync.Mutex
	by  map[string]*share
}

type share struct {
	ch   chan struct{}
	refs int // uploads holding or waiting for one of ch's slots
}

// NewPerTenant returns shares of max slots each.
func NewPerTenant(max int) *PerTenant {
	return &PerTenant{max: max, by: map[string]*share{}}
}

// Max is how many slots one tenant may hold.
func (s *PerTenant) Max() int { return s.max }

// Take takes one of the tenant's slots, waiting until timer fires (nil:
// no wait) or ctx ends; release gives it back.
func (s *PerTenant) Take(ctx context.Context, tenant string, timer <-chan time.Time) (release func(), ok bool) {
	t := s.ref(tenant)
	if !Take(ctx, t.ch, timer) {
		s.unref(tenant, t)
		return nil, false
	}
	return func() { <-t.ch; s.unref(tenant, t) }, true
}

func (s *PerTenant) ref(key string) *share {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.by[key]
	if t == nil {
		t = &share{ch: make(chan struct{}, s.max)}
		s.by[key] = t
	}
	t.refs++
	return t
}

func (s *PerTenant) unref(key string, t *share) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.refs--; t.refs == 0 {
		delete(s.by, key)
	}
}

// Take puts a token in ch, waiting until timer fires (nil: no wait) or ctx
// ends.
func Take(ctx context.Context, ch chan struct{}, timer <-chan time.Time) bool {
	select {
	case ch <- struct{}{}:
		return true
	default:
	}
	if timer == nil {
		return false
	}
	select {
	case ch <- struct{}{}:
		return true
	case <-timer:
	case <-ctx.Done():
	}
	return false
}
