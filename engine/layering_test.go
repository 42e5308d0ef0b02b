package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/proserun/prose/internal/importwalk"
)

// The engine computes on its own types: no package under engine/ (test
// files aside) reaches the public protos, directly or through another
// package of ours, with one exception kept on purpose: package engine
// itself imports prose.platform.v1 for its Value (the invocation's inputs,
// the outputs and book-call values of a run's history that the server
// renders), which persist.v1.Value mirrors number for number. A walk from
// another engine package stops at package engine (checked on its own).
func TestEngineImportsNoPublicProto(t *testing.T) {
	public := []string{"gen/prose/platform", "gen/prose/legacy", "gen/prose/book"}
	allowed := map[string]string{importwalk.Module + "engine": importwalk.Module + "gen/prose/platform/v1"}
	pkgs, err := importwalk.Dirs(".")
	if err != nil {
		t.Fatal(err)
	}
	dirs := len(pkgs)
	for _, path := range pkgs {
		pkg := importwalk.Module + filepath.ToSlash(filepath.Join("engine", path))
		var w importwalk.Walker
		w.By = map[string]string{importwalk.Module + "engine": ""} // checked by its own walk
		if path == "." {
			w.By = nil
		}
		err := w.Walk(pkg, path, func(from, to string) bool {
			for _, pub := range public {
				if importwalk.Under(to, pub) && allowed[from] != to {
					t.Errorf("%s imports %s", from, to)
				}
			}
			return !importwalk.Under(to, "gen")
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if dirs < 3 {
		t.Fatalf("walked %d packages: the walk is broken", dirs)
	}
}
