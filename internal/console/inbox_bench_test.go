package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres/pgtest"
	"github.com/proserun/prose/store/sqlite"
	"github.com/proserun/prose/store/sqlite/sqlitetest"
	"github.com/proserun/prose/store/storetest"
)

// openConsoleBench opens a SQLite store holding the exception benchmark's
// 1,000,000 exceptions (storetest.BenchExceptions, 60 % pending) and an
// owner of their organization, seeding it the first time. It is kept in
// $PROSE_BENCH_DIR (default: the temporary directory)/prose-bench-console-sqlite;
// delete it to reseed.
func openConsoleBench(b *testing.B) (store.Store, string) {
	b.Helper()
	ctx := context.Background()
	base := os.Getenv("PROSE_BENCH_DIR")
	if base == "" {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "prose-bench-console-sqlite")
	const user = "bench-owner"
	if _, err := os.Stat(filepath.Join(dir, "seeded")); err != nil {
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		s, err := sqlite.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		storetest.SeedExceptionParents(b, s)
		addBenchOwner(b, s, user)
		// The benchmark's runs are not real programs: finished, so that the
		// engine leaves them alone.
		sqlitetest.SeedBenchExceptions(b, s, true)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "seeded"), nil, 0o644); err != nil { //nolint:gosec // G306: a marker file
			b.Fatal(err)
		}
	}
	s, err := sqlite.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, user
}

// addBenchOwner makes user an owner of the benchmark's organization and an
// admin of its workspace, unless it is already.
func addBenchOwner(b *testing.B, s store.Store, user string) {
	b.Helper()
	ctx := context.Background()
	if _, err := s.GetUser(ctx, user); err == nil {
		return
	}
	if _, err := s.CreateUser(ctx, store.User{ID: user, DisplayName: "Owner", Email: "owner@bench.test"}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.AddOrganizationMember(ctx, storetest.BenchExceptionOrg, user, []string{"owner"}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.AddWorkspaceMember(ctx, storetest.BenchExceptionOrg, storetest.BenchExceptionWorkspace, user, []string{"workspace_admin"}); err != nil {
		b.Fatal(err)
	}
}

// openConsoleBenchPostgres opens the PostgreSQL database of the exception
// benchmarks (pgtest.OpenExceptionBench: the same 1,000,000 exceptions,
// seeded once in prose_bench_exceptions) with the benchmark's owner; its
// runs are made terminal so that the engine leaves them alone.
func openConsoleBenchPostgres(b *testing.B) (store.Store, string) {
	b.Helper()
	s := pgtest.OpenExceptionBench(b)
	const user = "bench-owner"
	addBenchOwner(b, s, user)
	pgtest.FailBenchRuns(b, s)
	return s, user
}

// BenchmarkConsoleInbox: the inbox page (GET /w/ops/, all its calls: the
// session, the caller's workspaces and permissions, the first page of
// pending exceptions with the total, the counts by group and by automation,
// the members) over HTTP with 1,000,000 exceptions in the workspace.
//
// On SQLite and, with PROSE_TEST_POSTGRES_URL, on PostgreSQL:
//
//	go test ./internal/console -run '^$' -bench BenchmarkConsoleInbox -benchtime 200x
func BenchmarkConsoleInbox(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		st, user := openConsoleBench(b)
		benchInbox(b, st, user)
	})
	b.Run("postgres", func(b *testing.B) {
		st, user := openConsoleBenchPostgres(b)
		benchInbox(b, st, user)
	})
}

func benchInbox(b *testing.B, st store.Store, user string) {
	cfg := app.Config{Addr: "127.0.0.1:0", LogLevel: "error", Store: st}
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	srv := httptest.NewServer(a.HTTP)
	b.Cleanup(srv.Close)
	token := "bench-" + store.NewID()
	if _, err := st.CreateConsoleSession(context.Background(), store.ConsoleSession{
		TokenHash: store.ConsoleTokenHash(token), OrganizationID: storetest.BenchExceptionOrg, UserID: user,
		CSRFToken: "x", ExpireTime: time.Now().Add(time.Hour),
	}); err != nil {
		b.Fatal(err)
	}
	ws := "/w/" + storetest.BenchExceptionWorkspace + "/"
	for _, page := range []struct{ name, path string }{
		{"pending", ws},
		{"pending_by_automation", ws + "?state=PENDING&automation=a05"},      // 20,000 match
		{"pending_by_automation_none", ws + "?state=PENDING&automation=a07"}, // none match
		{"pending_by_group", ws + "?state=PENDING&group=user_system_error"},  // 200,000 match
		{"pending_assigned_to_me", ws + "?state=PENDING&assignee=me"},
	} {
		name, path := page.name, page.path
		b.Run(name, func(b *testing.B) {
			get := func() {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
				req.AddCookie(&http.Cookie{Name: "prose_session", Value: token})
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || n == 0 {
					b.Fatalf("GET %s: %d", path, res.StatusCode)
				}
			}
			get() // warm the caches
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				get()
				times = append(times, time.Since(t0))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-p50")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "ms-p99")
		})
	}
}
