package safechange_test

import (
	"testing"

	"github.com/proserun/prose/internal/importwalk"
)

// TestSafeChangeImportsOnlyTheLanguage keeps the package's one dependency
// of ours the language: the CLI and the server give it their books and
// records, so that it knows no store, engine or API.
func TestSafeChangeImportsOnlyTheLanguage(t *testing.T) {
	var w importwalk.Walker
	reached := false
	err := w.Walk(importwalk.Module+"internal/safechange", ".", func(from, to string) bool {
		if importwalk.Rel(to) != "internal/lang" {
			t.Errorf("%s imports %s", importwalk.Rel(from), importwalk.Rel(to))
		}
		reached = true
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reached {
		t.Fatal("the walk reached nothing: it is broken")
	}
}
