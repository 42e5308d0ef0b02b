package books_test

import (
	"testing"

	"github.com/proserun/prose/internal/importwalk"
)

// Package books imports no store, directly or through another package of
// ours (the dependency table of DESIGN.md): the database implements the
// stores books declares (Store, ConnectionStore) in cmd/prose. Test files
// are not counted: they may open a real store.
func TestBooksImportsNoStore(t *testing.T) {
	var w importwalk.Walker
	err := w.Walk(importwalk.Module+"books", ".", func(from, to string) bool {
		if importwalk.Under(to, "store") {
			t.Errorf("%s imports %s", from, to)
			return false
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.By) == 0 {
		t.Fatal("found no import of ours at all; the walk is broken")
	}
}
