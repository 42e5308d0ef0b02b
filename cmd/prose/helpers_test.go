package main

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
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/backend"
)

// testServeConfig is a serve configuration on a fresh data directory. With
// PROSE_TEST_POSTGRES_URL set, the store is the package's own PostgreSQL
// database instead (made by TestMain, shared by the tests; every test makes
// its own organization).
func testServeConfig(t *testing.T) serveConfig {
	t.Helper()
	// The tests' HTTP, SMTP and database servers are on loopback.
	cfg := serveConfig{addr: "127.0.0.1:0", data: t.TempDir(), logLevel: "error", allowPrivateNetworks: true}
	if url := os.Getenv("PROSE_TEST_POSTGRES_URL"); url != "" {
		st, err := backend.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("open PostgreSQL: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		cfg.store = st
	}
	return cfg
}

// testEnv is a running app with an organization of its own, reachable over
// HTTP (srv) and gRPC (conn).
type testEnv struct {
	app   *app
	st    store.Store
	srv   *httptest.Server
	conn  *grpc.ClientConn
	init  initResult // org, owner, first workspace, key with level All
	email string     // the owner's
}

// newTestEnv starts the app on testServeConfig and creates an organization.
func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	return newTestEnvWith(t, nil)
}

// newTestEnvWith is newTestEnv with a configuration changed by edit.
func newTestEnvWith(t *testing.T, edit func(*serveConfig)) *testEnv {
	t.Helper()
	return newTestEnvLogged(t, edit, slog.New(slog.DiscardHandler))
}

// newTestEnvLogged is newTestEnvWith with the app logging to logger.
func newTestEnvLogged(t *testing.T, edit func(*serveConfig), logger *slog.Logger) *testEnv {
	t.Helper()
	cfg := testServeConfig(t)
	if edit != nil {
		edit(&cfg)
	}
	a, err := newApp(context.Background(), cfg, logger, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	e := &testEnv{app: a, st: a.store}
	e.srv = httptest.NewServer(a.http)
	t.Cleanup(e.srv.Close)
	// The console's live streams end first: the server's Close waits for
	// the requests in flight.
	t.Cleanup(a.console.Close)

	lis := bufconn.Listen(1 << 20)
	go func() { _ = a.grpc.Serve(lis) }()
	t.Cleanup(a.grpc.Stop)
	e.conn, err = grpc.NewClient("passthrough:///prose",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.conn.Close() })

	e.email = "owner-" + store.NewID() + "@example.test"
	e.init, err = bootstrap(context.Background(), e.st, initOptions{organization: "Test org", email: e.email, workspace: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// keySpec describes a test key.
type keySpec struct {
	level      store.PermissionLevel
	workspaces []string // empty: all
	toggles    map[string]bool
	expired    bool
	user       string // default: the owner
}

// newKey stores a key for the test organization and returns its value.
func (e *testEnv) newKey(t *testing.T, spec keySpec) string {
	t.Helper()
	g := apikey.Generate()
	user := spec.user
	if user == "" {
		user = e.init.userID
	}
	level := spec.level
	if level == "" {
		level = store.PermissionAll
	}
	exp := time.Now().Add(time.Hour)
	if spec.expired {
		exp = time.Now().Add(-time.Hour)
	}
	_, err := e.st.CreateAPIKey(context.Background(), store.APIKey{
		OrganizationID: e.init.orgID, UserID: user, Name: "test", Prefix: g.Prefix, SecretHash: g.Hash,
		AllWorkspaces: len(spec.workspaces) == 0, WorkspaceIDs: spec.workspaces,
		PermissionLevel: level, Permissions: spec.toggles, ExpireTime: exp,
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g.Value
}

// newViewer stores a user "Zed Viewer", a member of the test organization
// (role member) and a workspace_viewer of its first workspace.
func (e *testEnv) newViewer(t *testing.T) store.User {
	t.Helper()
	ctx := context.Background()
	u, err := e.st.CreateUser(ctx, store.User{DisplayName: "Zed Viewer", Email: "zed-" + store.NewID() + "@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AddOrganizationMember(ctx, e.init.orgID, u.ID, []string{"member"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AddWorkspaceMember(ctx, e.init.orgID, e.init.workspaceID, u.ID, []string{"workspace_viewer"}); err != nil {
		t.Fatal(err)
	}
	return u
}

// newWorkspace creates another workspace in the test organization.
func (e *testEnv) newWorkspace(t *testing.T, title string) string {
	t.Helper()
	w, err := e.st.CreateWorkspace(context.Background(), store.Workspace{
		OrganizationID: e.init.orgID, Title: title, CreatorID: e.init.userID,
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

var _ = transport.MethodAccess

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// pgReplica returns a function making the serve configuration of one more
// replica on the package's PostgreSQL database, each with its own
// connections; it skips the test when PROSE_TEST_POSTGRES_URL is not set.
func pgReplica(t *testing.T) func() serveConfig {
	t.Helper()
	url := os.Getenv("PROSE_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("PROSE_TEST_POSTGRES_URL is not set")
	}
	return func() serveConfig {
		st, err := backend.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("open PostgreSQL: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return serveConfig{addr: "127.0.0.1:0", data: t.TempDir(), logLevel: "error", store: st, allowPrivateNetworks: true}
	}
}

// skipTierIfOff skips t when the environment variable env (a test tier's
// switch, see "Tests" in the README) is "off"; "" and "on" run the tier
// where what it needs is present, and any other value fails the test.
func skipTierIfOff(t *testing.T, env string) {
	t.Helper()
	switch v := os.Getenv(env); v {
	case "", "on":
	case "off":
		t.Skipf("%s=off: skipping this tier", env)
	default:
		t.Fatalf("%s=%q: want on, off or unset", env, v)
	}
}
