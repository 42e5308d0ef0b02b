package netguard_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dialSite matches what makes a network connection (or a client that makes
// them) in Go source: the standard library's dialers and clients, and the
// drivers and clients of the modules Prose uses.
var dialSite = regexp.MustCompile(`net\.Dial\(|net\.DialTimeout\(|net\.Dialer\{|new\(net\.Dialer\)|tls\.Dial\(|tls\.DialWithDialer\(|tls\.Dialer\{|` +
	`http\.Client\{|new\(http\.Client\)|http\.Transport\{|new\(http\.Transport\)|http\.DefaultClient|http\.DefaultTransport|http\.(Get|Post|PostForm|Head)\(|` +
	`nats\.Connect\(|amqp\.Dial|mqtt\.NewClient\(|websocket\.Dialer\{|websocket\.DefaultDialer|pgx\.Connect|pgxpool\.New|pgconn\.Connect\(|sql\.Open|mysql\.NewConnector\(|` +
	`smtp\.Dial\(|smtp\.SendMail\(|grpc\.NewClient\(|grpc\.Dial\(|grpc\.DialContext\(|otlp[a-z]*\.New\(|net\.Resolver\{`)

// allowed is every dial site outside this package, by file and what it
// makes, with how many there are and why it is not a way out a tenant can
// point somewhere unguarded: either its dialer is netguard's, or the address
// is the operator's (the server's own store, telemetry, model API) or the
// program is not the server.
var allowed = []struct {
	file, site string
	n          int
	why        string
}{
	{"server/message_nats.go", "nats.Connect(", 1, "nats.SetCustomDialer with netguard's dialer (message_dial.go)"},
	{"server/message_amqp.go", "amqp.Dial", 1, "amqp.Config.Dial is netguard's dialer (message_dial.go)"},
	{"server/message_mqtt.go", "mqtt.NewClient(", 2, "its opener is mqttOpen, on netguard's dialer (message_dial.go); the second clears a deleted instance's session with the same options"},
	{"server/message_dial.go", "websocket.Dialer{", 1, "NetDialContext is netguard's dialer"},
	{"internal/books/email.go", "tls.Dialer{", 1, "NetDialer is netguard's dialer"},
	{"internal/books/databases.go", "pgx.Connect", 1, "DialFunc is netguard's dialer"},
	{"internal/books/databases.go", "mysql.NewConnector(", 1, "DialFunc is netguard's dialer"},
	{"internal/books/databases.go", "sql.Open", 1, "sql.OpenDB of that connector"},
	{"store/postgres/postgres.go", "pgxpool.New", 1, "the server's own database (--store)"},
	{"store/postgres/notify.go", "pgx.Connect", 1, "the server's own database (LISTEN/NOTIFY)"},
	{"store/postgres/pgtest/pgtest.go", "pgx.Connect", 2, "tests' database (PROSE_TEST_POSTGRES_URL)"},
	{"store/sqlite/sqlite.go", "sql.Open", 2, "a file"},
	{"store/sqlite/sqlitetest/seed.go", "sql.Open", 1, "a file"},
	{"internal/tracing/tracing.go", "otlptracehttp.New(", 1, "the operator's collector (OTEL_EXPORTER_OTLP_ENDPOINT)"},
	{"internal/tracing/tracing.go", "otlptracegrpc.New(", 1, "the operator's collector (OTEL_EXPORTER_OTLP_ENDPOINT)"},
	{"internal/agent/model.go", "http.Client{", 1, "the model API the operator configures"},
	{"client/client.go", "grpc.NewClient(", 1, "the public Go client, in its user's program"},
	{"bookserver/booktest/booktest.go", "http.Post(", 2, "the kit's checks of a book author's own server, in their tests"},
	{"cmd/prose-load/main.go", "http.Client{", 1, "a load generator the operator points at their server"},
	{"cmd/prose-load/main.go", "http.Transport{", 1, "a load generator the operator points at their server"},
	{"cmd/prose-upload-load/main.go", "http.Client{", 1, "a load generator the operator points at their server"},
	{"cmd/prose-upload-load/main.go", "http.Transport{", 1, "a load generator the operator points at their server"},
	{"cmd/prose-upload-load/grpc.go", "grpc.NewClient(", 1, "a load generator the operator points at their server"},
	{"server/testenv/console.go", "http.Client{", 1, "the test harness's browser, on the test's own server"},
	{"server/testenv/env.go", "grpc.NewClient(", 1, "the test harness's client of the test's own server"},
	{"server/testenv/books.go", "grpc.NewClient(", 1, "the test harness's client of the test's own server"},
	{"server/testenv/brokers.go", "net.DialTimeout(", 1, "the test harness's check that a broker it started on loopback answers"},
}

// TestOneWayOut: every connection the server makes is made by this
// package's dialer, but for the sites in allowed. A new dial site fails
// here: give it netguard's dialer (DialFunc, HTTPClient) and, when a tenant
// can point it somewhere, a row in server's outboundPaths (server/outbound_paths_test.go) (whose test
// checks the guard is on); or, for the server's own address, add it to
// allowed with why.
func TestOneWayOut(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not %s: %v", root, err)
	}
	found := map[string]int{}
	where := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == "gen", rel == "third_party", rel == "internal/netguard", strings.HasPrefix(d.Name(), ".") && rel != ".", d.Name() == "testdata", d.Name() == "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(text, "//") {
				continue
			}
			for _, m := range dialSite.FindAllString(text, -1) {
				k := rel + "\x00" + m
				found[k]++
				where[k] = append(where[k], fmt.Sprintf("%s:%d", rel, line))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allowed {
		k := a.file + "\x00" + a.site
		if found[k] != a.n {
			t.Errorf("%s: %d × %s, allowed %d (%s): a new dial site needs netguard's dialer; one gone, its entry removed", a.file, found[k], a.site, a.n, a.why)
		}
		delete(found, k)
	}
	for k, n := range found {
		file, site, _ := strings.Cut(k, "\x00")
		t.Errorf("%s: %d × %s outside internal/netguard (%s): dial through netguard (DialFunc, HTTPClient) and add the path to server's outboundPaths (server/outbound_paths_test.go), or list the server's own address in allowed with why",
			file, n, site, strings.Join(where[k], ", "))
	}
}
