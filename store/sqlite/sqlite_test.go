package sqlite_test

import (
	"context"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/storetest"
)

func open(t *testing.T, opts ...store.Option) store.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

// TestTitleKeyMigration: migration 00013 recomputes the title keys of the
// workspaces written before it (Unicode folding).
func TestTitleKeyMigration(t *testing.T) {
	dir := t.TempDir()
	if err := sqlite.MigrateTo(t.Context(), dir, 12); err != nil {
		t.Fatal(err)
	}
	old, err := sqlite.Open(t.Context(), dir, store.WithoutMigrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	storetest.TitleKeyMigration(t, old, func(ctx context.Context) error {
		_, err := old.WriteDB().ExecContext(ctx, `UPDATE workspaces SET title_key = lower(title)`)
		return err
	}, func(ctx context.Context) store.Store {
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		return open2(t, dir)
	})
}

func open2(t *testing.T, dir string) store.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
