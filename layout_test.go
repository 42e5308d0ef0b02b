package prose

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/importwalk"
)

// The top level is the design card's (docs/architecture.md): the public
// contract and its generated code, the service's layers, the packages a
// user imports on purpose, and what the build and the reader need.
// Everything else lives under internal/, so that no exported name of the
// machinery becomes a promise to the modules that import Prose.
var topLevel = []string{
	// the design card
	"proto", "gen", "server", "gateway", "store", "cmd",
	// imported on purpose by users
	"client", "bookserver",
	// the machinery
	"internal",
	// read or needed by the build
	"docs", "examples", "third_party", "tools",
}

func TestTopLevelIsTheDesignCards(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name()[0] != '.' && !slices.Contains(topLevel, e.Name()) {
			t.Errorf("top-level folder %s/: move it under internal/ (or, if users import it on purpose, add it to topLevel with the reason)", e.Name())
		}
	}
}

// floors orders the top-level folders by what their packages may import:
// a package imports packages of its own folder or of a lower floor, never
// of its own floor's other folders or above, so that the folders' import
// graph has no arrow running back up. The parts are put together at the
// top (server/app); what the whole module uses sits at the bottom with the
// store (row ids, the filter bounds) and the generated code.
var floors = map[string]int{
	"cmd":        7,
	"examples":   7,
	"server":     6,
	"bookserver": 5,
	"client":     4,
	"internal":   3,
	"gateway":    2,
	"store":      1,
	"gen":        0,
}

func TestTopLevelImportsPointDown(t *testing.T) {
	dirs, err := importwalk.Dirs(".")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, dir := range dirs {
		from := strings.Split(filepath.ToSlash(dir), "/")[0]
		if from == "third_party" || from == "tools" || from == "." {
			continue
		}
		floor, ok := floors[from]
		if !ok {
			t.Errorf("%s: folder %s/ has no floor: add it to floors", dir, from)
			continue
		}
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		read++
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, importwalk.Module) {
				continue
			}
			to := strings.Split(importwalk.Rel(imp), "/")[0]
			if to != from && floors[to] >= floor {
				t.Errorf("%s imports %s: %s/ (floor %d) may import only folders below it", dir, importwalk.Rel(imp), from, floor)
			}
		}
	}
	if read < 50 {
		t.Fatalf("read %d packages: the walk is broken", read)
	}
}
