package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

func testConsoleSessions(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.org(t, "other")
	s.user(t, "ann", "Ann", "ann@example.com")
	s.user(t, "bob", "Bob", "bob@example.com")
	of(s.st.AddOrganizationMember(s.ctx, "acme", "ann", []string{"admin"})).must(t)
	of(s.st.AddOrganizationMember(s.ctx, "acme", "bob", []string{"member"})).must(t)
	now := s.clock.Peek()
	hour := now.Add(time.Hour)

	sess := of(s.st.CreateConsoleSession(s.ctx, store.ConsoleSession{
		TokenHash: "h-session", OrganizationID: "acme", UserID: "ann", APIKeyID: "k1", CSRFToken: "csrf", ExpireTime: hour,
	})).must(t)
	if sess.CreateTime.IsZero() || !sess.ExpireTime.Equal(store.Time(hour)) {
		t.Errorf("Create = %+v", sess)
	}
	got := of(s.st.GetConsoleSession(s.ctx, "h-session", now)).must(t)
	if got.UserID != "ann" || got.OrganizationID != "acme" || got.APIKeyID != "k1" || got.CSRFToken != "csrf" || got.Link ||
		!got.ExpireTime.Equal(sess.ExpireTime) || !got.CreateTime.Equal(sess.CreateTime) {
		t.Errorf("Get = %+v, want %+v", got, sess)
	}
	_, err := s.st.GetConsoleSession(s.ctx, "h-session", hour)
	wantErr(t, err, store.ErrNotFound, "get at its expiry")
	_, err = s.st.GetConsoleSession(s.ctx, "h-nope", now)
	wantErr(t, err, store.ErrNotFound, "get unknown")
	_, err = s.st.TakeConsoleLink(s.ctx, "h-session", now)
	wantErr(t, err, store.ErrNotFound, "take a session as a link")

	for name, tc := range map[string]struct {
		s    store.ConsoleSession
		want error
	}{
		"same hash":  {store.ConsoleSession{TokenHash: "h-session", OrganizationID: "acme", UserID: "bob", ExpireTime: hour}, store.ErrAlreadyExists},
		"non-member": {store.ConsoleSession{TokenHash: "h2", OrganizationID: "other", UserID: "ann", ExpireTime: hour}, store.ErrNotFound},
		"no hash":    {store.ConsoleSession{OrganizationID: "acme", UserID: "ann", ExpireTime: hour}, store.ErrInvalidArgument},
		"no expiry":  {store.ConsoleSession{TokenHash: "h3", OrganizationID: "acme", UserID: "ann"}, store.ErrInvalidArgument},
	} {
		_, err := s.st.CreateConsoleSession(s.ctx, tc.s)
		wantErr(t, err, tc.want, name)
	}

	// A link is taken once, by one of concurrent takers, and is never a session.
	of(s.st.CreateConsoleSession(s.ctx, store.ConsoleSession{TokenHash: "h-link", Link: true, OrganizationID: "acme", UserID: "ann", ExpireTime: hour})).must(t)
	_, err = s.st.GetConsoleSession(s.ctx, "h-link", now)
	wantErr(t, err, store.ErrNotFound, "get a link as a session")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 4 {
		wg.Go(func() {
			l, err := s.st.TakeConsoleLink(s.ctx, "h-link", now)
			if err == nil {
				if !l.Link || l.UserID != "ann" {
					t.Errorf("Take = %+v", l)
				}
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d takers got the link, want 1", wins)
	}
	of(s.st.CreateConsoleSession(s.ctx, store.ConsoleSession{TokenHash: "h-old-link", Link: true, OrganizationID: "acme", UserID: "ann", ExpireTime: now.Add(time.Minute)})).must(t)
	_, err = s.st.TakeConsoleLink(s.ctx, "h-old-link", now.Add(time.Minute))
	wantErr(t, err, store.ErrNotFound, "take an expired link")

	// Sign-out, expiry sweep, and the end of a membership.
	noErr(t, s.st.DeleteConsoleSession(s.ctx, "h-session"))
	wantErr(t, s.st.DeleteConsoleSession(s.ctx, "h-session"), store.ErrNotFound, "delete twice")
	of(s.st.CreateConsoleSession(s.ctx, store.ConsoleSession{TokenHash: "h-bob", OrganizationID: "acme", UserID: "bob", ExpireTime: hour})).must(t)
	of(s.st.CreateConsoleSession(s.ctx, store.ConsoleSession{TokenHash: "h-ann", OrganizationID: "acme", UserID: "ann", ExpireTime: hour.Add(time.Hour)})).must(t)
	n := of(s.st.DeleteExpiredConsoleSessions(s.ctx, hour)).must(t)
	if n != 2 { // h-bob and h-old-link
		t.Errorf("DeleteExpired = %d, want 2", n)
	}
	of(s.st.GetConsoleSession(s.ctx, "h-ann", hour)).must(t)
	noErr(t, s.st.RemoveOrganizationMember(s.ctx, "acme", "ann"))
	_, err = s.st.GetConsoleSession(s.ctx, "h-ann", now)
	wantErr(t, err, store.ErrNotFound, "get after the membership ended")
}
