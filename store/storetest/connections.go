package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/proserun/prose/store"
)

// testBookConnections runs the book connection and secret key cases.
func testBookConnections(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"BookConnectionCRUD", testBookConnectionCRUD},
		{"BookConnectionLimit", testBookConnectionLimit},
		{"BookConnectionCascade", testBookConnectionCascade},
		{"SecretKeyFirstWins", testSecretKeyFirstWins},
		{"BookConnectionRekey", testBookConnectionRekey},
		{"BookConnectionRefreshOneAtATime", testBookConnectionRefresh},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

func bconn(org, ws, id, name string) store.BookConnection {
	return store.BookConnection{OrganizationID: org, WorkspaceID: ws, ID: id, BookName: "http", BookVersion: "1.0.0",
		Name: name, Descriptor: []byte("d-" + name), Secret: []byte{0, 1, 0xff}}
}

func sameConn(t *testing.T, what string, got, want store.BookConnection) {
	t.Helper()
	if got.OrganizationID != want.OrganizationID || got.WorkspaceID != want.WorkspaceID || got.ID != want.ID ||
		got.BookName != want.BookName || got.BookVersion != want.BookVersion || got.Name != want.Name ||
		!bytes.Equal(got.Descriptor, want.Descriptor) || !bytes.Equal(got.Secret, want.Secret) ||
		!got.CreateTime.Equal(want.CreateTime) || !got.UpdateTime.Equal(want.UpdateTime) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func testBookConnectionCRUD(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	a := of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "c2", "crm"))).must(t)
	if a.CreateTime.IsZero() || !a.CreateTime.Equal(a.UpdateTime) {
		t.Fatalf("created: %+v", a)
	}
	sameConn(t, "GetBookConnection", of(s.st.GetBookConnection(s.ctx, "acme", "w1", "c2")).must(t), a)
	b := of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "c1", "mail"))).must(t)
	gen := of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "", "generated"))).must(t)
	if gen.ID == "" {
		t.Error("no id generated")
	}
	// The same name in another workspace is another connection.
	of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w2", "c2", "crm"))).must(t)

	_, err := s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "c3", "crm"))
	wantErr(t, err, store.ErrAlreadyExists, "duplicate name")
	_, err = s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "c1", "other"))
	wantErr(t, err, store.ErrAlreadyExists, "duplicate id")
	_, err = s.st.CreateBookConnection(s.ctx, bconn("acme", "nope", "c1", "x"))
	wantErr(t, err, store.ErrNotFound, "unknown workspace")
	_, err = s.st.GetBookConnection(s.ctx, "acme", "w2", "c1")
	wantErr(t, err, store.ErrNotFound, "connection of another workspace")

	// Ordered by id; the generated id is random, so it may sort anywhere.
	l := of(s.st.ListBookConnections(s.ctx, "acme", "w1")).must(t)
	want := []string{"c1", "c2", gen.ID}
	slices.Sort(want)
	var ids []string
	for _, c := range l {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("list = %+v, want the ids %q", l, want)
	}
	sameConn(t, "list c1", l[slices.Index(ids, "c1")], b)
	if l := of(s.st.ListBookConnections(s.ctx, "acme", "unknown")).must(t); len(l) != 0 {
		t.Errorf("list of unknown workspace = %+v", l)
	}

	up := a
	up.Name, up.Descriptor, up.Secret = "crm2", []byte("new"), []byte("sealed")
	up.BookName, up.BookVersion = "ignored", "2.0.0"
	got := of(s.st.UpdateBookConnection(s.ctx, up)).must(t)
	if got.Name != "crm2" || got.BookVersion != "2.0.0" || string(got.Secret) != "sealed" || got.BookName != "http" || !got.UpdateTime.After(a.UpdateTime) || !got.CreateTime.Equal(a.CreateTime) {
		t.Errorf("updated = %+v", got)
	}
	up.Name = "mail"
	_, err = s.st.UpdateBookConnection(s.ctx, up)
	wantErr(t, err, store.ErrAlreadyExists, "rename onto another connection's name")
	up.ID = "nope"
	_, err = s.st.UpdateBookConnection(s.ctx, up)
	wantErr(t, err, store.ErrNotFound, "update unknown")

	noErr(t, s.st.DeleteBookConnection(s.ctx, "acme", "w1", "c2"))
	wantErr(t, s.st.DeleteBookConnection(s.ctx, "acme", "w1", "c2"), store.ErrNotFound, "delete twice")
	if _, err := s.st.GetBookConnection(s.ctx, "acme", "w2", "c2"); err != nil {
		t.Errorf("the other workspace's c2: %v", err)
	}
	// The name is free again.
	of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "c9", "crm"))).must(t)
}

func testBookConnectionLimit(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	for i := range store.MaxConnectionsPerWorkspace {
		of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", fmt.Sprintf("c%04d", i), fmt.Sprintf("n%d", i)))).must(t)
	}
	_, err := s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "over", "over"))
	wantErr(t, err, store.ErrResourceExhausted, "one connection over the limit")
}

func testBookConnectionCascade(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "c1", "crm"))).must(t)
	noErr(t, s.st.DeleteWorkspace(s.ctx, "acme", "w1"))
	s.ws(t, "acme", "w1", "One again")
	if l := of(s.st.ListBookConnections(s.ctx, "acme", "w1")).must(t); len(l) != 0 {
		t.Errorf("connections of a recreated workspace: %+v", l)
	}
}

func testSecretKeyFirstWins(t *testing.T, s *suite) {
	var wg sync.WaitGroup
	keys := make([][]byte, 4)
	errs := make([]error, 4)
	for i := range keys {
		wg.Go(func() {
			keys[i], errs[i] = s.st.EnsureSecretKey(s.ctx, []byte{byte(i + 1), 2, 3})
		})
	}
	wg.Wait()
	for i := range keys {
		noErr(t, errs[i])
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("key %d = %x, key 0 = %x: concurrent first starts disagree", i, keys[i], keys[0])
		}
	}
	again := of(s.st.EnsureSecretKey(s.ctx, []byte("another"))).must(t)
	if !bytes.Equal(again, keys[0]) {
		t.Errorf("a later start replaced the key: %x, want %x", again, keys[0])
	}
	_, err := s.st.EnsureSecretKey(s.ctx, nil)
	wantErr(t, err, store.ErrInvalidArgument, "empty candidate")
}

func testBookConnectionRekey(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	s.ws(t, "acme", "w2", "Two")
	var ids []string
	for i := range 450 { // more than one batch
		ws := []string{"w1", "w2"}[i%2]
		c := bconn("acme", ws, fmt.Sprintf("c%04d", i), fmt.Sprintf("n%d", i))
		c.Secret = []byte("old")
		if i%3 == 0 {
			c.Secret = []byte("new")
		}
		created := of(s.st.CreateBookConnection(s.ctx, c)).must(t)
		ids = append(ids, ws+"/"+created.ID)
	}
	seen := map[string]bool{}
	n, err := s.st.RekeyBookConnections(s.ctx, func(c store.BookConnection) ([]byte, bool, error) {
		seen[c.WorkspaceID+"/"+c.ID] = true
		if string(c.Secret) == "old" {
			return []byte("new"), true, nil
		}
		return nil, false, nil
	})
	noErr(t, err)
	if n != 300 || len(seen) != len(ids) {
		t.Fatalf("rekeyed %d (want 300), saw %d of %d", n, len(seen), len(ids))
	}
	for _, l := range [][]store.BookConnection{of(s.st.ListBookConnections(s.ctx, "acme", "w1")).must(t), of(s.st.ListBookConnections(s.ctx, "acme", "w2")).must(t)} {
		for _, c := range l {
			if string(c.Secret) != "new" {
				t.Fatalf("%s/%s secret %q after rekey", c.WorkspaceID, c.ID, c.Secret)
			}
		}
	}
	boom := errors.New("boom")
	_, err = s.st.RekeyBookConnections(s.ctx, func(store.BookConnection) ([]byte, bool, error) { return nil, false, boom })
	if !errors.Is(err, boom) {
		t.Errorf("reseal error: %v", err)
	}
}

// testBookConnectionRefresh: RefreshBookConnection holds the connection
// while its refresh runs. A second refresh of the same connection starts
// only after the first has written, and reads what it wrote; a refresh of
// another connection does not wait; a refresh that fails writes nothing and
// its error comes back; an absent connection is ErrNotFound; a wait ends
// with its context.
func testBookConnectionRefresh(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "w1", "One")
	orig := of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "c1", "crm"))).must(t)
	of(s.st.CreateBookConnection(s.ctx, bconn("acme", "w1", "c2", "mail"))).must(t)

	entered, release := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		_, err := s.st.RefreshBookConnection(s.ctx, "acme", "w1", "c1", func(_ context.Context, c store.BookConnection) (*store.BookConnection, error) {
			close(entered)
			<-release
			c.Descriptor, c.Secret = []byte("d-refreshed"), []byte("s-refreshed")
			return &c, nil
		})
		firstDone <- err
	}()
	<-entered
	// Another connection is not held.
	other := of(s.st.RefreshBookConnection(s.ctx, "acme", "w1", "c2", func(_ context.Context, c store.BookConnection) (*store.BookConnection, error) {
		return nil, nil
	})).must(t)
	if other.Name != "mail" {
		t.Errorf("refresh of another connection: %+v", other)
	}
	secondIn := make(chan []byte, 1)
	secondDone := make(chan store.BookConnection, 1)
	go func() {
		got, err := s.st.RefreshBookConnection(s.ctx, "acme", "w1", "c1", func(_ context.Context, c store.BookConnection) (*store.BookConnection, error) {
			secondIn <- c.Secret
			return nil, nil
		})
		if err != nil {
			t.Error(err)
		}
		secondDone <- got
	}()
	// The second must not start while the first holds the connection.
	select {
	case sec := <-secondIn:
		t.Fatalf("a second refresh ran while the first held the connection (it read %q)", sec)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if sec := <-secondIn; string(sec) != "s-refreshed" {
		t.Errorf("the second refresh read the secret %q, want the first's", sec)
	}
	got := <-secondDone
	if string(got.Secret) != "s-refreshed" || string(got.Descriptor) != "d-refreshed" || got.Name != "crm" ||
		!got.CreateTime.Equal(orig.CreateTime) || got.UpdateTime.Before(orig.UpdateTime) {
		t.Errorf("after the refresh: %+v", got)
	}

	// A refresh that fails writes nothing; its error comes back.
	boom := errors.New("the token url refused")
	_, err := s.st.RefreshBookConnection(s.ctx, "acme", "w1", "c1", func(_ context.Context, c store.BookConnection) (*store.BookConnection, error) {
		c.Secret = []byte("lost")
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("a failed refresh: %v, want its error", err)
	}
	if c := of(s.st.GetBookConnection(s.ctx, "acme", "w1", "c1")).must(t); string(c.Secret) != "s-refreshed" {
		t.Errorf("a failed refresh wrote %q", c.Secret)
	}
	_, err = s.st.RefreshBookConnection(s.ctx, "acme", "w1", "absent", func(context.Context, store.BookConnection) (*store.BookConnection, error) {
		t.Error("refresh called for an absent connection")
		return nil, nil
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an absent connection: %v", err)
	}

	// A wait ends with its context.
	entered, release = make(chan struct{}), make(chan struct{})
	go func() {
		_, err := s.st.RefreshBookConnection(s.ctx, "acme", "w1", "c1", func(_ context.Context, c store.BookConnection) (*store.BookConnection, error) {
			close(entered)
			<-release
			return nil, nil
		})
		firstDone <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(s.ctx, 100*time.Millisecond)
	defer cancel()
	_, err = s.st.RefreshBookConnection(ctx, "acme", "w1", "c1", func(context.Context, store.BookConnection) (*store.BookConnection, error) {
		t.Error("refresh called while another held the connection")
		return nil, nil
	})
	if err == nil {
		t.Error("a wait past its context succeeded")
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
}
