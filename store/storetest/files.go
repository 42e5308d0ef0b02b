package storetest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/proserun/prose/store"
)

// testFiles runs the file cases.
func testFiles(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"FileCreateGetDelete", testFileCreateGetDelete},
		{"FilePendingUpload", testFilePendingUpload},
		{"FileUploadOnceConcurrently", testFileUploadOnceConcurrently},
		{"ServerSecret", testServerSecret},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, setup(t, open)) })
	}
}

func testFileCreateGetDelete(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.org(t, "other")
	content := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<16) // binary, 256 KiB
	f := of(s.st.CreateFile(s.ctx, store.File{OrganizationID: "acme", Filename: "a.bin", MimeType: "application/octet-stream"}, content, true)).must(t)
	if len(f.ID) != 20 || f.SizeBytes != int64(len(content)) || !f.Uploaded || f.CreateTime.IsZero() || !f.CreateTime.Equal(f.UpdateTime) {
		t.Fatalf("created: %+v", f)
	}
	got := of(s.st.GetFile(s.ctx, "acme", f.ID)).must(t)
	if got != f {
		t.Errorf("GetFile = %+v, want %+v", got, f)
	}
	meta, data, err := s.st.GetFileContent(s.ctx, "acme", f.ID)
	noErr(t, err)
	if meta != f || !bytes.Equal(data, content) {
		t.Errorf("GetFileContent = %+v, %d bytes", meta, len(data))
	}

	// Organization-scoped: another organization does not see it.
	_, err = s.st.GetFile(s.ctx, "other", f.ID)
	wantErr(t, err, store.ErrNotFound, "get from another organization")
	_, _, err = s.st.GetFileContent(s.ctx, "other", f.ID)
	wantErr(t, err, store.ErrNotFound, "content from another organization")
	wantErr(t, s.st.DeleteFile(s.ctx, "other", f.ID), store.ErrNotFound, "delete from another organization")

	// Ids, parents.
	_, err = s.st.CreateFile(s.ctx, store.File{OrganizationID: "acme", ID: f.ID, Filename: "b"}, nil, true)
	wantErr(t, err, store.ErrAlreadyExists, "duplicate id")
	_, err = s.st.CreateFile(s.ctx, store.File{OrganizationID: "nope", Filename: "b"}, nil, true)
	wantErr(t, err, store.ErrNotFound, "unknown organization")
	_, err = s.st.CreateFile(s.ctx, store.File{OrganizationID: "acme", WorkspaceID: "nope", Filename: "b"}, nil, true)
	wantErr(t, err, store.ErrNotFound, "unknown workspace")

	// An empty file is a file.
	empty := of(s.st.CreateFile(s.ctx, store.File{OrganizationID: "acme", Filename: "empty.txt", MimeType: "text/plain"}, nil, true)).must(t)
	_, data, err = s.st.GetFileContent(s.ctx, "acme", empty.ID)
	noErr(t, err)
	if data == nil || len(data) != 0 || empty.SizeBytes != 0 {
		t.Errorf("empty file: %v %+v", data, empty)
	}

	noErr(t, s.st.DeleteFile(s.ctx, "acme", f.ID))
	_, err = s.st.GetFile(s.ctx, "acme", f.ID)
	wantErr(t, err, store.ErrNotFound, "get deleted")
	wantErr(t, s.st.DeleteFile(s.ctx, "acme", f.ID), store.ErrNotFound, "delete twice")

	// Deleting the organization deletes its files.
	noErr(t, s.st.DeleteOrganization(s.ctx, "acme"))
	s.org(t, "acme")
	_, err = s.st.GetFile(s.ctx, "acme", empty.ID)
	wantErr(t, err, store.ErrNotFound, "file of a deleted organization")
}

func testFilePendingUpload(t *testing.T, s *suite) {
	s.org(t, "acme")
	s.ws(t, "acme", "ws", "WS")
	f := of(s.st.CreateFile(s.ctx, store.File{OrganizationID: "acme", WorkspaceID: "ws", ID: "f1", Filename: "r.csv", MimeType: "text/csv"}, []byte("ignored"), false)).must(t)
	if f.Uploaded || f.SizeBytes != 0 || f.WorkspaceID != "ws" {
		t.Fatalf("pending: %+v", f)
	}
	_, _, err := s.st.GetFileContent(s.ctx, "acme", "f1")
	wantErr(t, err, store.ErrFailedPrecondition, "content of a pending file")

	up := of(s.st.PutFileContent(s.ctx, "acme", "f1", "", []byte("a,b\n1,2\n"))).must(t)
	if !up.Uploaded || up.SizeBytes != 8 || up.MimeType != "text/csv" || !up.UpdateTime.After(f.UpdateTime) || !up.CreateTime.Equal(f.CreateTime) {
		t.Fatalf("uploaded: %+v", up)
	}
	// A second upload is refused and changes nothing.
	_, err = s.st.PutFileContent(s.ctx, "acme", "f1", "text/plain", []byte("x"))
	wantErr(t, err, store.ErrAlreadyExists, "second upload")
	meta, data, err := s.st.GetFileContent(s.ctx, "acme", "f1")
	noErr(t, err)
	if string(data) != "a,b\n1,2\n" || meta.MimeType != "text/csv" || meta.SizeBytes != 8 || meta != up {
		t.Errorf("after a refused second upload: %+v %q", meta, data)
	}
	// A file made with its bytes takes no upload either.
	of(s.st.CreateFile(s.ctx, store.File{OrganizationID: "acme", ID: "f2", Filename: "b.csv", MimeType: "text/csv"}, []byte("b"), true)).must(t)
	_, err = s.st.PutFileContent(s.ctx, "acme", "f2", "", []byte("x"))
	wantErr(t, err, store.ErrAlreadyExists, "upload to a file made with its bytes")
	_, err = s.st.PutFileContent(s.ctx, "acme", "nope", "", []byte("x"))
	wantErr(t, err, store.ErrNotFound, "upload to a missing file")
}

// testFileUploadOnceConcurrently: of concurrent uploads to one pending file
// (one pre-signed URL used by several clients, or replicas), exactly one
// wins; the others get ErrAlreadyExists and the bytes are the winner's.
func testFileUploadOnceConcurrently(t *testing.T, s *suite) {
	s.org(t, "acme")
	of(s.st.CreateFile(s.ctx, store.File{OrganizationID: "acme", ID: "f1", Filename: "r.csv"}, nil, false)).must(t)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.st.PutFileContent(s.ctx, "acme", "f1", "", []byte{byte('a' + i)})
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Errorf("uploads %d and %d both succeeded", won, i)
		case !errors.Is(err, store.ErrAlreadyExists):
			t.Errorf("upload %d: %v, want ErrAlreadyExists", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no upload succeeded")
	}
	_, data, err := s.st.GetFileContent(s.ctx, "acme", "f1")
	noErr(t, err)
	if string(data) != string(rune('a'+won)) {
		t.Errorf("content %q, want the winner's %q", data, string(rune('a'+won)))
	}
}

func testServerSecret(t *testing.T, s *suite) {
	calls := 0
	gen := func(v string) func() []byte {
		return func() []byte { calls++; return []byte(v) }
	}
	a := of(s.st.ServerSecret(s.ctx, "k", gen("first"))).must(t)
	b := of(s.st.ServerSecret(s.ctx, "k", gen("second"))).must(t)
	if string(a) != "first" || string(b) != "first" || calls != 1 {
		t.Fatalf("secret = %q then %q after %d generations", a, b, calls)
	}
	// Concurrent first calls agree on one value.
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := s.st.ServerSecret(s.ctx, "race", func() []byte { return []byte{byte('a' + i)} })
			if err != nil {
				t.Errorf("ServerSecret: %v", err)
				return
			}
			got[i] = string(v)
		}()
	}
	wg.Wait()
	for _, v := range got {
		if v != got[0] {
			t.Fatalf("concurrent secrets differ: %q", got)
		}
	}
}
