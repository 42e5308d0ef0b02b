package books_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
)

// With PublicNetworkOnly (prose serve's default) no book reaches an
// address that is not public: an http call (by address or by a name that
// resolves to loopback, or redirected there), a file download, a database
// or a mail server on loopback, or the cloud metadata address, each an
// exception at the statement naming the address. The server's own files
// are read through OwnFile, without the network.
func TestBooksReachOnlyPublicAddresses(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"Ana"}`))
	}))
	defer srv.Close()
	own := func(_ context.Context, url string) ([]byte, bool, error) {
		if strings.HasPrefix(url, "https://prose.example/files/download/") {
			return []byte("customer,amount\nAna,12.50\n"), true, nil
		}
		return nil, false, nil
	}
	e := newEnv(t, books.BuiltinOptions{PublicNetworkOnly: true, OwnFile: own})
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	e.add("databases", "db", auth("password", "username", "postgres", "password", "x"), map[string]*platformv1.BdkValue{
		"engine": text("postgresql"), "host": text("127.0.0.1"), "port": num(5432), "database": text("postgres"), "tls": text("disable")})
	e.add("databases", "maria", auth("password", "username", "root", "password", "x"), map[string]*platformv1.BdkValue{
		"engine": text("mariadb"), "host": text("localhost"), "port": num(3306), "database": text("x"), "tls": text("disable")})
	e.add("email", "mail", auth("password", "username", "robot@acme.test", "password", "x"), map[string]*platformv1.BdkValue{
		"host": text("127.0.0.1"), "port": num(2525), "security": text("none"), "from": text("robot@acme.test")})
	for _, c := range []struct {
		name, code string
		in         map[string]lang.Value
	}{
		{"http by address", "call the api at \"" + srv.URL + "/x\"\n", nil},
		{"http by name", "call the api at \"http://localhost:" + port + "/x\"\n", nil},
		{"cloud metadata", "call the api at \"http://169.254.169.254/latest/meta-data/\"\n", nil},
		{"file download", "read the table from the orders file\n", map[string]lang.Value{"orders file": lang.FileValue(&lang.File{URL: srv.URL + "/o.csv"})}},
		{"postgresql", "run the query on the database with\n  the connection is \"db\"\n", map[string]lang.Value{"query": lang.Text("select 1"), "database": lang.Text("db")}},
		{"mariadb", "run the query on the database with\n  the connection is \"maria\"\n", map[string]lang.Value{"query": lang.Text("select 1"), "database": lang.Text("db")}},
		{"mail", "send an email to \"ana@acme.test\" with\n  the connection is \"mail\"\n", nil},
	} {
		res := e.run(c.code, c.in)
		if res.Status != lang.Suspended || res.Exception == nil || !strings.Contains(res.Exception.Message, "refused: not a public address") {
			t.Errorf("%s: status %s, exception %+v, want a refusal naming the address", c.name, res.Status, res.Exception)
		}
	}
	if hits != 0 {
		t.Errorf("the loopback server was reached %d times", hits)
	}
	// The server's own file, by its signed URL: read without the network.
	res := e.run("read the table from the orders file\nthe orders are the above\nthe total is 0\nprocess each order in the orders as follows\n  add the order's amount to the total\nthe output total is the total\n",
		map[string]lang.Value{"orders file": lang.FileValue(&lang.File{URL: "https://prose.example/files/download/tok"})})
	wantCompleted(t, res)
	if got := outputText(t, res, "output total"); got != "12.50" {
		t.Errorf("own file: %s", got)
	}
	// Allowed, the same call reaches the server.
	e2 := newEnv(t, books.BuiltinOptions{})
	wantCompleted(t, e2.run("call the api at \""+srv.URL+"/x\"\nthe output name is the above's name\n", nil))
	if hits != 1 {
		t.Errorf("with private networks allowed: %d calls", hits)
	}
}
