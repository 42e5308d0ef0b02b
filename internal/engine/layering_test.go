package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/proserun/prose/internal/importwalk"
)

// The engine computes on its own types, the stored shapes and the
// language's values: no package under engine/ (test files aside) imports
// the public protos, directly or through another package of ours, but
// through package codec, where every conversion to and from them lives
// (TestOnlyCodecBridgesAPIAndStore checks it; the walk stops there). The
// values a client gives reach the engine as codec.Values, which it hands
// back to the codec to store. A walk from another engine package stops at
// package engine (checked on its own).
func TestEngineImportsNoPublicProto(t *testing.T) {
	public := []string{"gen/prose/platform", "gen/prose/legacy", "gen/prose/book"}
	pkgs, err := importwalk.Dirs(".")
	if err != nil {
		t.Fatal(err)
	}
	dirs := len(pkgs)
	codecReached := false
	for _, path := range pkgs {
		pkg := importwalk.Module + filepath.ToSlash(filepath.Join("internal/engine", path))
		var w importwalk.Walker
		w.By = map[string]string{importwalk.Module + "internal/engine": ""} // checked by its own walk
		if path == "." {
			w.By = nil
		}
		err := w.Walk(pkg, path, func(from, to string) bool {
			for _, pub := range public {
				if importwalk.Under(to, pub) {
					t.Errorf("%s imports %s", from, to)
				}
			}
			if importwalk.Under(to, "internal/codec") {
				codecReached = true
				return false
			}
			return !importwalk.Under(to, "gen")
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if dirs < 3 || !codecReached {
		t.Fatalf("walked %d packages and did not reach the codec: the walk is broken", dirs)
	}
}
