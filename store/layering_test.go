package store_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/importwalk"
)

// sqlText matches the SQL statements Prose writes.
var sqlText = regexp.MustCompile(`\b(SELECT\s[^"]*\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|(CREATE|DROP|ALTER)\s+(TABLE|INDEX|DATABASE)|LISTEN\s+\w|pg_notify)\b`)

// SQL is written only inside store/ (the backends, their migrations and
// test helpers): everything else goes through the store's interfaces and
// typed filters.
func TestNoSQLOutsideStore(t *testing.T) {
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "store", "gen", "third_party", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if sqlText.MatchString(line) {
				t.Errorf("%s:%d: SQL outside store/: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The store keeps no public API message: what it persists is its own
// columns and the private prose.persist.v1 messages (whose migrations it
// writes). No package under store/ (test files aside, directly or through
// another package of ours) imports the public protos (prose.platform.v1,
// the legacy packages, the book protocol), so none can marshal one into a
// column: a change to the public protos is never a data migration.
func TestStoreImportsNoPublicProto(t *testing.T) {
	public := []string{"gen/prose/platform", "gen/prose/legacy", "gen/prose/book"}
	var w importwalk.Walker
	visit := func(from, to string) bool {
		for _, pub := range public {
			if importwalk.Under(to, pub) {
				t.Errorf("%s imports %s", from, to)
			}
		}
		return true
	}
	pkgs, err := importwalk.Dirs(".")
	if err != nil {
		t.Fatal(err)
	}
	dirs := len(pkgs)
	for _, path := range pkgs {
		if err := w.Walk(importwalk.Module+filepath.ToSlash(filepath.Join("store", path)), path, visit); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := w.By[importwalk.Module+"store/persist/v1"]; dirs < 8 || !ok {
		t.Fatalf("walked %d packages and did not reach persist.v1: the walk is broken", dirs)
	}
}
