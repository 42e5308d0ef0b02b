package books_test

import (
	"testing"

	"github.com/proserun/prose/internal/importwalk"
)

// Package books imports no store, directly or through another package of
// ours (the dependency table of DESIGN.md): the database implements the
// stores books declares (Store, ConnectionStore) in server/app. Test files
// are not counted: they may open a real store. The one package of store/
// books may use is store/aipfilter, the bound on AIP-160 filter texts that
// every list shares: it is a function of a text, imports nothing of ours
// and reaches no database.
func TestBooksImportsNoStore(t *testing.T) {
	var w importwalk.Walker
	err := w.Walk(importwalk.Module+"internal/books", ".", func(from, to string) bool {
		if importwalk.Under(to, "store") && !importwalk.Under(to, "store/aipfilter") {
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

// TestAIPFilterIsALeaf: store/aipfilter, which books may import, imports
// nothing of ours.
func TestAIPFilterIsALeaf(t *testing.T) {
	var w importwalk.Walker
	err := w.Walk(importwalk.Module+"store/aipfilter", "", func(from, to string) bool {
		t.Errorf("%s imports %s", from, to)
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
}
