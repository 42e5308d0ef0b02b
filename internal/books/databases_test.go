package books_test

import (
	"database/sql"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store/postgres/pgtest"
)

const queryCode = `run the query on the database with
  the parameters are the wanted
  the connection is the db
the rows are the above
the names are ""
the total is 0
process each row in the rows as follows
  the names is the names + the row's name + ";"
  add the row's amount to the total
the output names is the names
the output total is the total
`

func checkQueryBook(t *testing.T, e *env, db, query string) {
	t.Helper()
	wanted := lang.ListValue(lang.Num(mustNum(t, "2.00")), lang.Text("%a%"))
	res := e.run(queryCode, map[string]lang.Value{"query": lang.Text(query), "wanted": wanted, "db": lang.Text(db)})
	wantCompleted(t, res)
	if got := outputText(t, res, "output names"); got != "Ana;Bea;Dan;" {
		t.Errorf("names = %q", got)
	}
	if got := outputText(t, res, "output total"); got != "122.74" {
		t.Errorf("total = %q (exact decimals)", got)
	}
	// A bad query is an exception naming the database's complaint.
	res = e.run(queryCode, map[string]lang.Value{"query": lang.Text("select nope from nowhere"), "wanted": lang.ListValue(), "db": lang.Text(db)})
	if res.Status != lang.Suspended || !strings.Contains(res.Exception.Message, "nowhere") {
		t.Errorf("bad query: %s %+v", res.Status, res.Exception)
	}
}

func TestDatabasesBookPostgreSQL(t *testing.T) {
	dbURL := pgtest.TempDatabase(t, "books")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	c := openPG(t, dbURL)
	execFile(t, c, "testdata/orders_postgresql.sql", "")
	e := newEnv(t, books.BuiltinOptions{})
	host, port, _ := net.SplitHostPort(u.Host)
	p, _ := strconv.Atoi(port)
	user := u.User.Username()
	pw, _ := u.User.Password()
	e.add("databases", "warehouse", auth("password", "username", user, "password", pw), map[string]*platformv1.BdkValue{
		"engine": text("postgresql"), "host": text(host), "port": num(float64(p)), "database": text(strings.TrimPrefix(u.Path, "/")), "tls": text("disable")})
	checkQueryBook(t, e, "warehouse", "select name, amount, placed from orders where amount > $1 and name like $2 order by id")
	// Too many rows, or too many bytes, is an exception.
	for q, want := range map[string]string{
		"select g as name, 1 as amount from generate_series(1, 10001) g where $1::numeric > 0 and $2::text <> ''":                 "more than 10000 rows",
		"select repeat('x', 1048576) as name, 1 as amount from generate_series(1, 11) g where $1::numeric > 0 and $2::text <> ''": "more than 10 MiB",
	} {
		res := e.run(queryCode, map[string]lang.Value{"query": lang.Text(q), "wanted": lang.ListValue(lang.Num(mustNum(t, "2.00")), lang.Text("%a%")), "db": lang.Text("warehouse")})
		if res.Status != lang.Suspended || res.Exception == nil || !strings.Contains(res.Exception.Message, want) {
			t.Errorf("%s: %s %+v, want %q", q, res.Status, res.Exception, want)
		}
	}
}

func openPG(t *testing.T, dbURL string) *sql.DB {
	t.Helper()
	c, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestDatabasesBookMariaDB(t *testing.T) {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Timeout = "tcp", "127.0.0.1:3306", "root", 2*time.Second
	if a := os.Getenv("PROSE_TEST_MARIADB_ADDR"); a != "" {
		cfg.Addr = a
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := sql.OpenDB(conn)
	t.Cleanup(func() { _ = admin.Close() }) // after the drop below (cleanups run last first)
	if err := admin.Ping(); err != nil {
		t.Skipf("no MariaDB at %s as root: %v", cfg.Addr, err)
	}
	name := "prose_books_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { execFile(t, admin, "testdata/drop_mariadb.sql", name) })
	execFile(t, admin, "testdata/orders_mariadb.sql", name)
	e := newEnv(t, books.BuiltinOptions{})
	host, port, _ := net.SplitHostPort(cfg.Addr)
	p, _ := strconv.Atoi(port)
	e.add("databases", "shop", auth("password", "username", "root", "password", ""), map[string]*platformv1.BdkValue{
		"engine": text("mariadb"), "host": text(host), "port": num(float64(p)), "database": text(name), "tls": text("disable")})
	checkQueryBook(t, e, "shop", "select name, amount, placed from orders where amount > ? and name like ? order by id")
}

// execFile runs the statements of a fixture file (separated by ";" at line
// ends; "--" lines are comments), with {db} replaced by db. The fixtures
// are files so that no SQL is written in Go outside store/.
func execFile(t *testing.T, c *sql.DB, path, db string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	for _, stmt := range strings.Split(strings.ReplaceAll(strings.Join(lines, "\n"), "{db}", db), ";\n") {
		if stmt = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(stmt), ";")); stmt == "" {
			continue
		}
		if _, err := c.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}
