package books_test

import (
	"go/build"
	"strings"
	"testing"
)

// Package books imports no store, directly or through another package of
// ours (the dependency table of DESIGN.md): the database implements the
// stores books declares (Store, ConnectionStore) in cmd/prose. Test files
// are not counted: they may open a real store.
func TestBooksImportsNoStore(t *testing.T) {
	const module = "github.com/proserun/prose/"
	seen := map[string]string{} // package → a package that imports it
	var walk func(path, dir string)
	walk = func(path, dir string) {
		var p *build.Package
		var err error
		if dir != "" {
			p, err = build.ImportDir(dir, 0)
		} else {
			p, err = build.Import(path, ".", 0)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if _, ok := seen[imp]; ok {
				continue
			}
			seen[imp] = path
			if rest := strings.TrimPrefix(imp, module); rest == "store" || strings.HasPrefix(rest, "store/") {
				t.Errorf("%s imports %s", path, imp)
				continue
			}
			walk(imp, "")
		}
	}
	walk(module+"books", ".")
	if len(seen) == 0 {
		t.Fatal("found no import of ours at all; the walk is broken")
	}
}
