package codec_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/importwalk"
)

// TestOnlyCodecBridgesAPIAndStore: the public API's messages
// (prose.platform.v1, the legacy packages, the book protocol) and the
// stored shapes (prose.persist.v1) meet in package codec and the packages
// under it alone: no other package of the module (test files aside)
// imports both, so every conversion between them lives here. The store
// imports no API package at all (store.TestStoreImportsNoPublicProto) and
// the engine none but through the codec (engine.TestEngineImportsNoPublicProto).
func TestOnlyCodecBridgesAPIAndStore(t *testing.T) {
	public := []string{"gen/prose/platform", "gen/prose/legacy", "gen/prose/book"}
	const stored = "store/persist"
	root := filepath.Join("..", "..")
	dirs, err := importwalk.Dirs(root)
	if err != nil {
		t.Fatal(err)
	}
	bridges := 0
	for _, dir := range dirs {
		if strings.HasPrefix(filepath.ToSlash(dir), "third_party/") || strings.HasPrefix(filepath.ToSlash(dir), "tools/") {
			continue
		}
		p, err := build.ImportDir(filepath.Join(root, dir), 0)
		if err != nil {
			t.Fatal(err)
		}
		var api, store string
		for _, imp := range p.Imports {
			for _, pub := range public {
				if importwalk.Under(imp, pub) {
					api = imp
				}
			}
			if importwalk.Under(imp, stored) {
				store = imp
			}
		}
		if api == "" || store == "" {
			continue
		}
		if rel := filepath.ToSlash(dir); rel != "internal/codec" && !strings.HasPrefix(rel, "internal/codec/") {
			t.Errorf("%s imports both %s and %s: convert through package codec", rel, importwalk.Rel(api), importwalk.Rel(store))
			continue
		}
		bridges++
	}
	if len(dirs) < 30 || bridges == 0 {
		t.Fatalf("read %d packages and found the codec bridging none: the walk is broken", len(dirs))
	}
}
