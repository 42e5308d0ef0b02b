// Package testenv is the shared test harness of Prose: a running app (the
// whole service of `prose serve`, server/app) with an organization of its
// own, reachable over HTTP and gRPC, and the helpers that call it. Any
// package tests itself over the public surface with it from a _test
// package: testenv.New(t), then e.API, e.DoGRPC, e.MkAutomation, e.WaitRun.
//
// With PROSE_TEST_POSTGRES_URL set, the store is the package's own
// PostgreSQL database (made by Main from the package's TestMain, shared by
// its tests; every test makes its own organization).
package testenv

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/proserun/prose/server/apikey"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/backend"
)

// Config is a serve configuration on a fresh data directory, or on the
// package's PostgreSQL database when PROSE_TEST_POSTGRES_URL is set.
func Config(t testing.TB) app.Config {
	t.Helper()
	// The tests' HTTP, SMTP and database servers are on loopback.
	cfg := app.Config{Addr: "127.0.0.1:0", Data: t.TempDir(), LogLevel: "error", AllowPrivateNetworks: true}
	if url := os.Getenv("PROSE_TEST_POSTGRES_URL"); url != "" {
		if !mainRan {
			t.Fatal("PROSE_TEST_POSTGRES_URL is set but the package's TestMain does not call testenv.Main: the tests would write the server's own database")
		}
		st, err := backend.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("open PostgreSQL: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		cfg.Store = st
	}
	return cfg
}

// Env is a running app with an organization of its own, reachable over
// HTTP (Srv) and gRPC (Conn).
type Env struct {
	App   *app.App
	Store store.Store
	Srv   *httptest.Server
	Conn  *grpc.ClientConn
	Init  app.InitResult // org, owner, first workspace, key with level All
	Email string         // the owner's
}

// New starts the app on Config and creates an organization.
func New(t *testing.T) *Env {
	t.Helper()
	return NewWith(t, nil)
}

// NewWith is New with a configuration changed by edit.
func NewWith(t *testing.T, edit func(*app.Config)) *Env {
	t.Helper()
	return NewLogged(t, edit, Discard())
}

// NewLogged is NewWith with the app logging to logger.
func NewLogged(t *testing.T, edit func(*app.Config), logger *slog.Logger) *Env {
	t.Helper()
	cfg := Config(t)
	if edit != nil {
		edit(&cfg)
	}
	a, err := app.New(context.Background(), cfg, logger, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	e := &Env{App: a, Store: a.Store}
	e.Srv = httptest.NewServer(a.HTTP)
	t.Cleanup(e.Srv.Close)
	// The console's live streams end first: the server's Close waits for
	// the requests in flight.
	t.Cleanup(a.Console.Close)

	lis := bufconn.Listen(1 << 20)
	go func() { _ = a.GRPC.Serve(lis) }()
	t.Cleanup(a.GRPC.Stop)
	e.Conn, err = grpc.NewClient("passthrough:///prose",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Conn.Close() })

	e.Email = "owner-" + store.NewID() + "@example.test"
	e.Init, err = app.Bootstrap(context.Background(), e.Store, app.InitOptions{Organization: "Test org", Email: e.Email, Workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// KeySpec describes a test key.
type KeySpec struct {
	Level      store.PermissionLevel
	Workspaces []string // empty: all
	Toggles    map[string]bool
	Expired    bool
	User       string // default: the owner
}

// NewKey stores a key for the test organization and returns its value.
func (e *Env) NewKey(t *testing.T, spec KeySpec) string {
	t.Helper()
	g := apikey.Generate()
	user := spec.User
	if user == "" {
		user = e.Init.UserID
	}
	level := spec.Level
	if level == "" {
		level = store.PermissionAll
	}
	exp := time.Now().Add(time.Hour)
	if spec.Expired {
		exp = time.Now().Add(-time.Hour)
	}
	_, err := e.Store.CreateAPIKey(context.Background(), store.APIKey{
		OrganizationID: e.Init.OrganizationID, UserID: user, Name: "test", Prefix: g.Prefix, SecretHash: g.Hash,
		AllWorkspaces: len(spec.Workspaces) == 0, WorkspaceIDs: spec.Workspaces,
		PermissionLevel: level, Permissions: spec.Toggles, ExpireTime: exp,
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g.Value
}

// NewViewer stores a user "Zed Viewer", a member of the test organization
// (role member) and a workspace_viewer of its first workspace.
func (e *Env) NewViewer(t *testing.T) store.User {
	t.Helper()
	ctx := context.Background()
	u, err := e.Store.CreateUser(ctx, store.User{DisplayName: "Zed Viewer", Email: "zed-" + store.NewID() + "@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddOrganizationMember(ctx, e.Init.OrganizationID, u.ID, []string{"member"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.AddWorkspaceMember(ctx, e.Init.OrganizationID, e.Init.WorkspaceID, u.ID, []string{"workspace_viewer"}); err != nil {
		t.Fatal(err)
	}
	return u
}

// NewWorkspace creates another workspace in the test organization.
func (e *Env) NewWorkspace(t *testing.T, title string) string {
	t.Helper()
	w, err := e.Store.CreateWorkspace(context.Background(), store.Workspace{
		OrganizationID: e.Init.OrganizationID, Title: title, CreatorID: e.Init.UserID,
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

// Discard is a logger that drops everything.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// PGReplica returns a function making the serve configuration of one more
// replica on the package's PostgreSQL database, each with its own
// connections; it skips the test when PROSE_TEST_POSTGRES_URL is not set.
func PGReplica(t *testing.T) func() app.Config {
	t.Helper()
	url := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL is not set")
	}
	if !mainRan {
		t.Fatal("PROSE_TEST_POSTGRES_URL is set but the package's TestMain does not call testenv.Main: the tests would write the server's own database")
	}
	return func() app.Config {
		st, err := backend.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("open PostgreSQL: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		// Each replica its own name (as replicas on one host need).
		return app.Config{Addr: "127.0.0.1:0", Data: t.TempDir(), LogLevel: "error", Store: st, AllowPrivateNetworks: true, ReplicaName: "replica-" + store.NewID()}
	}
}

// SkipTierIfOff skips t when the environment variable env (a test tier's
// switch, see "Tests" in the README) is "off"; "" and "on" run the tier
// where what it needs is present, and any other value fails the test.
func SkipTierIfOff(t *testing.T, env string) {
	t.Helper()
	switch v := os.Getenv(env); v {
	case "", "on":
	case "off":
		t.Skipf("%s=off: skipping this tier", env)
	default:
		t.Fatalf("%s=%q: want on, off or unset", env, v)
	}
}
