package store_test

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	const module = "github.com/proserun/prose/"
	public := []string{"gen/prose/platform/", "gen/prose/legacy/", "gen/prose/book/"}
	seen := map[string]bool{}
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
			if !strings.HasPrefix(imp, module) || seen[imp] {
				continue
			}
			seen[imp] = true
			for _, pub := range public {
				if strings.HasPrefix(strings.TrimPrefix(imp, module)+"/", pub) {
					t.Errorf("%s imports %s", path, imp)
				}
			}
			walk(imp, "")
		}
	}
	dirs := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if _, err := build.ImportDir(path, 0); err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			return err
		}
		dirs++
		walk(module+filepath.ToSlash(filepath.Join("store", path)), path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dirs < 8 || !seen[module+"gen/prose/persist/v1"] {
		t.Fatalf("walked %d packages and did not reach persist.v1: the walk is broken", dirs)
	}
}
