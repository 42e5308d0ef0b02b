package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With PROSE_TEST_CREATED_DATABASES set, CreateDatabase logs the name of
// the database it creates (CI checks that every logged name is gone after
// the tests).
func TestCreateDatabaseLogsItsName(t *testing.T) {
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Skip(EnvURL + " not set: skipping a PostgreSQL test")
	}
	log := filepath.Join(t.TempDir(), "created")
	t.Setenv(EnvCreatedLog, log)
	dbURL, drop, err := CreateDatabase(context.Background(), base, "prose_pgtest_")
	if err != nil {
		t.Fatal(err)
	}
	if err := drop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	name := dbURL[strings.LastIndexByte(dbURL, '/')+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	if got := string(data); got != name+"\n" || !strings.HasPrefix(name, "prose_pgtest_") {
		t.Errorf("logged %q, want the database %q", got, name)
	}
}
