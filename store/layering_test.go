package store_test

import (
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
