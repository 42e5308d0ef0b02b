package sqlite_test

import (
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
