package app_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/app"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/postgres"
	"github.com/proserun/prose/store/postgres/pgtest"
)

func bearer(token string) *bookv1.ConnectionAuthentication {
	return &bookv1.ConnectionAuthentication{AuthenticationId: "bearer", AuthenticationCredentials: []*bookv1.CredentialValue{
		{Id: "token", Value: &platformv1.BdkValue{Kind: &platformv1.BdkValue_TextValue{TextValue: token}}}}}
}

// TestDBConnectionsStore checks books.Connections on the database through
// the app's adapter (DBConnections), on SQLite and on PostgreSQL: the
// store's errors arrive as the books sentinels (and still as the store's),
// with the messages clients see, and a key rotation reseals the secrets.
func TestDBConnectionsStore(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testDBConnections(t, openBookStore(t, t.TempDir())) })
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv(pgtest.EnvURL) == "" {
			t.Skip(pgtest.EnvURL + " not set: skipping a PostgreSQL test")
		}
		st, err := postgres.Open(t.Context(), pgtest.TempDatabase(t, "prose_conns_"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		testDBConnections(t, st)
	})
}

func testDBConnections(t *testing.T, st store.Store) {
	ctx := t.Context()
	if _, err := st.CreateOrganization(ctx, store.Organization{ID: bookWS.OrganizationID, DisplayName: "O"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWorkspace(ctx, store.Workspace{OrganizationID: bookWS.OrganizationID, ID: bookWS.WorkspaceID, Title: "W"}); err != nil {
		t.Fatal(err)
	}
	k1, _ := books.NewSecretKey()
	k2, _ := books.NewSecretKey()
	kr1, err := books.NewKeyring(k1)
	if err != nil {
		t.Fatal(err)
	}
	reg := books.NewRegistry(books.WithBuiltins(books.Builtins(books.BuiltinOptions{})...))
	conns := books.NewConnections(app.NewDBConnections(st), kr1, reg)

	crm, err := conns.Add(ctx, bookWS, "http", "1.0.0", books.ConnectionInput{Name: "crm", Auth: bearer("tok-1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conns.Add(ctx, bookWS, "http", "1.0.0", books.ConnectionInput{Name: "mail", Auth: bearer("tok-2")}); err != nil {
		t.Fatal(err)
	}
	if got, err := conns.Get(ctx, bookWS, crm.GetConnectionId()); err != nil || got.GetConnectionName() != "crm" ||
		got.GetAuthentication().GetAuthenticationCredentials()[0].GetValue() != nil {
		t.Fatalf("get: %v, %v", got, err)
	}
	if list, err := conns.List(ctx, bookWS); err != nil || len(list) != 2 {
		t.Fatalf("list: %d, %v", len(list), err)
	}

	// A name taken: the books sentinel and the store's, the message naming
	// the connection, then the store's.
	_, err = conns.Add(ctx, bookWS, "http", "1.0.0", books.ConnectionInput{Name: "crm"})
	if !errors.Is(err, books.ErrAlreadyExists) || !errors.Is(err, store.ErrAlreadyExists) ||
		!strings.HasPrefix(err.Error(), `a connection named "crm" exists in this workspace already: `) {
		t.Errorf("add a taken name: %v", err)
	}
	_, err = conns.Update(ctx, bookWS, "http", "1.0.0", crm.GetConnectionId(), books.ConnectionInput{Name: "mail"})
	if !errors.Is(err, books.ErrAlreadyExists) || !strings.HasPrefix(err.Error(), `a connection named "mail" exists in this workspace already: `) {
		t.Errorf("rename to a taken name: %v", err)
	}
	// Absent: ErrNotFound.
	if _, err := conns.Get(ctx, bookWS, "nope"); !errors.Is(err, books.ErrNotFound) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get an absent connection: %v", err)
	}
	if err := conns.Delete(ctx, bookWS, "nope"); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("delete an absent connection: %v", err)
	}
	other := books.Workspace{OrganizationID: bookWS.OrganizationID, WorkspaceID: "absent"}
	if _, err := conns.Add(ctx, other, "http", "1.0.0", books.ConnectionInput{Name: "crm"}); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("add in an absent workspace: %v", err)
	}

	// Key rotation through the adapter's rekey callback.
	rotating, _ := books.NewKeyring(k2, k1)
	if n, err := books.NewConnections(app.NewDBConnections(st), rotating, reg).Rekey(ctx); err != nil || n != 2 {
		t.Fatalf("rekey: %d, %v", n, err)
	}
	kr2, _ := books.NewKeyring(k2)
	if c, err := books.NewConnections(app.NewDBConnections(st), kr2, reg).Resolve(ctx, bookWS, "http", "crm"); err != nil || c.Credentials["token"] != "tok-1" {
		t.Fatalf("resolve after the rotation: %+v, %v", c, err)
	}
	// A secret no key opens stops the rekey with ErrSecretKey.
	k3, _ := books.NewSecretKey()
	kr3, _ := books.NewKeyring(k3, k1)
	if _, err := books.NewConnections(app.NewDBConnections(st), kr3, reg).Rekey(ctx); !errors.Is(err, books.ErrSecretKey) {
		t.Errorf("rekey without the sealing key: %v", err)
	}

	// The workspace's quota: ErrResourceExhausted.
	conns2 := books.NewConnections(app.NewDBConnections(st), kr2, reg)
	if err := conns2.Delete(ctx, bookWS, crm.GetConnectionId()); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < store.MaxConnectionsPerWorkspace; i++ {
		if _, err := st.CreateBookConnection(ctx, store.BookConnection{OrganizationID: bookWS.OrganizationID, WorkspaceID: bookWS.WorkspaceID,
			BookName: "http", BookVersion: "1.0.0", Name: "filler-" + store.NewID()}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = conns2.Add(ctx, bookWS, "http", "1.0.0", books.ConnectionInput{Name: "one too many"})
	if !errors.Is(err, books.ErrResourceExhausted) || !errors.Is(err, store.ErrResourceExhausted) {
		t.Errorf("add over the quota: %v", err)
	}
}
