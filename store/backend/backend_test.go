package backend

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOpenSQLiteDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "nested")
	for i := range 2 {
		v, err := Migrate(t.Context(), dir)
		if err != nil || v < 1 {
			t.Fatalf("Migrate #%d = %d, %v", i+1, v, err)
		}
	}
	st, err := Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "prose.db")); err != nil {
		t.Fatal(err)
	}
}

func TestIsPostgres(t *testing.T) {
	for target, want := range map[string]bool{
		"postgres://u@h/db": true, "postgresql://h/db": true, "/var/lib/prose": false, "data": false, "x.db": false,
	} {
		if got := IsPostgres(target); got != want {
			t.Errorf("IsPostgres(%q) = %v", target, got)
		}
	}
}
