package books

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/lang"
)

// DatabasesBookName is the name of the built-in databases book.
const DatabasesBookName = "databases"

// MaxQueryRows bounds the rows a query of the databases book returns.
const MaxQueryRows = 10_000

// MaxQueryBytes bounds the bytes of the values a query returns (texts and
// binary values by their length, other values 16 bytes each), as an HTTP
// answer is bounded: 10,000 rows of a 1 GB column are no table to hold.
// A row is read whole before it is counted.
const MaxQueryBytes = 10 << 20

// resultBytes counts the bytes of a query's values against MaxQueryBytes.
type resultBytes int

func (n *resultBytes) add(vals []any) error {
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			*n += resultBytes(len(x))
		case []byte:
			*n += resultBytes(len(x))
		default:
			*n += 16
		}
	}
	if *n > MaxQueryBytes {
		return &InputError{Message: fmt.Sprintf("the query returned more than %d MiB; narrow it (fewer columns or rows, LIMIT)", MaxQueryBytes>>20)}
	}
	return nil
}

// Databases returns the built-in databases book: parameterised queries
// against a PostgreSQL or MariaDB (MySQL) database of a connection (config:
// engine — postgresql or mariadb —, host, port, database, tls — disable,
// require (default) or verify —; authentication "password" with username and
// password).
//
//	run a query on a database (the rows)
//
// Inputs: query (the SQL, with the engine's placeholders: $1, $2 … on
// PostgreSQL, ? on MariaDB), parameters (a list of values), connection.
func Databases() *Builtin { return databasesBook(network{}) }

func databasesBook(nw network) *Builtin {
	procs := []*bookv1.Procedure{{
		Id:        "run_query",
		Signature: Signature("run a query on a database (the rows)"),
		Inputs: []*bookv1.Concept{
			concept("query", textType, "The SQL; values go in parameters ($1, $2 … on PostgreSQL, ? on MariaDB), never into the text.", nil),
			concept("parameters", anyType, "The values of the query's placeholders, in order (a list, or one value).", nil),
			concept("connection", textType, "The name of a databases connection of the workspace.", nil),
		},
		Outputs:            []*bookv1.Concept{concept("rows", tableType, "The rows the query returns, as a table (empty for a statement that returns none).", nil)},
		ShortDescription:   "Runs a parameterised SQL query on PostgreSQL or MariaDB and returns its rows.",
		ConnectionRequired: bookv1.ConnectionRequired_Always,
		Examples: []*bookv1.Example{{Description: "Orders of a customer",
			Snippet: "run the query on the database with\n  the query is \"select id, total from orders where customer = $1\"\n  the parameters are the customer id\n  the connection is \"warehouse\"\nthe orders are the above"}},
		SearchHints: []string{"sql", "postgres", "postgresql", "mysql", "mariadb", "select", "query"},
	}}
	b := builtinBook(DatabasesBookName, "Databases", "Runs parameterised SQL on PostgreSQL and MariaDB.",
		"The databases book is built into Prose. A query takes at most 30 s (a connection's \"timeout seconds\" changes it, up to 120) and returns at most 10,000 rows.",
		[]string{"network", "sql"}, procs)
	b.ConnectionRequired = true
	b.Authentications = []*bookv1.Authentication{customAuth("password", "User name and password", "username", "password")}
	b.Configurations = []*bookv1.Concept{
		concept("engine", textType, "postgresql or mariadb.", nil),
		concept("host", textType, "The database server's host.", nil),
		concept("port", numberType, "The port (default 5432 for postgresql, 3306 for mariadb).", nil),
		concept("database", textType, "The database's name.", nil),
		concept("tls", textType, "disable, require (default: encrypted, the certificate not checked) or verify (encrypted and checked).", nil),
		concept("timeout seconds", numberType, "How long a query may take (default 30, at most 120).", nil),
	}
	return &Builtin{Book: b, Funcs: map[string]Func{"run_query": func(ctx context.Context, in map[string]lang.Value) (map[string]lang.Value, error) {
		return runQuery(ctx, nw, in)
	}}}
}

func runQuery(ctx context.Context, nw network, in map[string]lang.Value) (map[string]lang.Value, error) {
	conn, err := bookConnection(ctx, in, DatabasesBookName)
	if err != nil {
		return nil, err
	}
	if conn == nil {
		return nil, &InputError{Message: "Please provide the connection: the name of a databases connection of this workspace"}
	}
	q, err := input(in, "query", lang.KindText)
	if err != nil {
		return nil, err
	}
	var params []any
	if p, ok := optional(in, "parameters"); ok {
		items := []lang.Value{p}
		if p.Kind() == lang.KindList {
			items = p.AsList().Items
		}
		for i, v := range items {
			a, err := sqlArg(v)
			if err != nil {
				return nil, &InputError{Message: fmt.Sprintf("parameter %d: %v", i+1, err)}
			}
			params = append(params, a)
		}
	}
	t, err := queryConnection(ctx, nw, conn, q.AsText(), params)
	if err != nil {
		return nil, err
	}
	return map[string]lang.Value{"rows": lang.TableValue(t)}, nil
}

// queryConnection runs q with params on the database of conn, within the
// connection's timeout; its errors name no credential.
func queryConnection(ctx context.Context, nw network, conn *Connection, q string, params []any) (*lang.Table, error) {
	host := conn.ConfigText("host")
	if host == "" {
		return nil, &InputError{Message: fmt.Sprintf("the connection %q has no host", conn.Name)}
	}
	timeout, err := timeoutOf(conn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tlsMode := strings.ToLower(conn.ConfigText("tls"))
	if tlsMode == "" {
		tlsMode = "require"
	}
	if tlsMode != "disable" && tlsMode != "require" && tlsMode != "verify" {
		return nil, &InputError{Message: fmt.Sprintf("the connection %q has the tls %q; it must be disable, require or verify", conn.Name, tlsMode)}
	}
	var t *lang.Table
	switch engine := strings.ToLower(conn.ConfigText("engine")); engine {
	case "postgresql", "postgres":
		t, err = queryPostgres(ctx, nw, conn, host, tlsMode, q, params)
	case "mariadb", "mysql":
		t, err = queryMariaDB(ctx, nw, conn, host, tlsMode, q, params)
	default:
		return nil, &InputError{Message: fmt.Sprintf("the connection %q has the engine %q; it must be postgresql or mariadb", conn.Name, engine)}
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("the query took longer than %s", timeout)
		}
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, errors.New(redact(err.Error(), conn))
	}
	return t, nil
}

// databaseTables lists the tables and views of the database of conn (the
// user's schemas on PostgreSQL, the connection's database on MariaDB).
func databaseTables(ctx context.Context, nw network, conn *Connection) ([]Discoverable, error) {
	q := `select table_schema || '.' || table_name, table_type from information_schema.tables
		where table_schema not in ('pg_catalog', 'information_schema') order by 1`
	if e := strings.ToLower(conn.ConfigText("engine")); e == "mariadb" || e == "mysql" {
		q = `select table_name, table_type from information_schema.tables where table_schema = database() order by 1`
	}
	t, err := queryConnection(ctx, nw, conn, q, nil)
	if err != nil {
		return nil, err
	}
	if len(t.Columns) != 2 {
		return nil, errors.New("the database listed its tables in an unexpected shape")
	}
	out := make([]Discoverable, 0, len(t.Columns[0].Values))
	for i, v := range t.Columns[0].Values {
		out = append(out, Discoverable{Name: plainText(v), Description: strings.ToLower(plainText(t.Columns[1].Values[i]))})
	}
	return out, nil
}

func sqlArg(v lang.Value) (any, error) {
	switch v.Kind() {
	case lang.KindNull:
		return nil, nil
	case lang.KindText:
		return v.AsText(), nil
	case lang.KindBool:
		return v.AsBool(), nil
	case lang.KindNumber:
		if i, ok := v.AsNumber().Int64(); ok && v.AsNumber().Scale() <= 0 {
			return i, nil
		}
		return v.AsNumber().String(), nil
	case lang.KindDateTime:
		return v.AsDateTime(), nil
	case lang.KindDate:
		d := v.AsDate()
		return time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC), nil
	}
	return nil, fmt.Errorf("%s cannot be a query parameter", v.Kind())
}

func port(conn *Connection, def int) (string, error) {
	p := conn.ConfigText("port")
	if p == "" {
		return strconv.Itoa(def), nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", &InputError{Message: fmt.Sprintf("the connection %q has the port %s; it must be a whole number from 1 to 65535", conn.Name, p)}
	}
	return p, nil
}

func queryPostgres(ctx context.Context, nw network, conn *Connection, host, tlsMode, q string, params []any) (*lang.Table, error) {
	p, err := port(conn, 5432)
	if err != nil {
		return nil, err
	}
	sslmode := map[string]string{"disable": "disable", "require": "require", "verify": "verify-full"}[tlsMode]
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(host, p), Path: "/" + conn.ConfigText("database"),
		RawQuery: url.Values{"sslmode": {sslmode}, "application_name": {"prose-databases-book"}}.Encode()}
	if user := conn.Credentials["username"]; user != "" {
		u.User = url.UserPassword(user, conn.Credentials["password"])
	}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, &InputError{Message: fmt.Sprintf("the connection %q does not make a PostgreSQL address", conn.Name)}
	}
	cfg.DialFunc = nw.dialContext
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("could not connect to the database: %w", err)
	}
	defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
	rows, err := c.Query(ctx, q, params...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	t := &lang.Table{}
	for _, f := range rows.FieldDescriptions() {
		t.Columns = append(t.Columns, lang.Column{Name: f.Name})
	}
	n := 0
	var size resultBytes
	for rows.Next() {
		if n++; n > MaxQueryRows {
			return nil, &InputError{Message: fmt.Sprintf("the query returned more than %d rows; narrow it (LIMIT)", MaxQueryRows)}
		}
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		if err := size.add(vals); err != nil {
			return nil, err
		}
		for i, v := range vals {
			t.Columns[i].Values = append(t.Columns[i].Values, sqlValue(v, ""))
		}
	}
	return t, rows.Err()
}

func queryMariaDB(ctx context.Context, nw network, conn *Connection, host, tlsMode, q string, params []any) (*lang.Table, error) {
	p, err := port(conn, 3306)
	if err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", net.JoinHostPort(host, p), conn.ConfigText("database")
	cfg.User, cfg.Passwd = conn.Credentials["username"], conn.Credentials["password"]
	cfg.ParseTime, cfg.Loc = true, time.UTC
	cfg.DialFunc = nw.dialContext
	cfg.TLSConfig = map[string]string{"disable": "false", "require": "skip-verify", "verify": "true"}[tlsMode]
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, &InputError{Message: fmt.Sprintf("the connection %q does not make a MariaDB address", conn.Name)}
	}
	db := sql.OpenDB(connector)
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, q, params...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	t := &lang.Table{}
	for _, ct := range types {
		t.Columns = append(t.Columns, lang.Column{Name: ct.Name()})
	}
	n := 0
	var size resultBytes
	for rows.Next() {
		if n++; n > MaxQueryRows {
			return nil, &InputError{Message: fmt.Sprintf("the query returned more than %d rows; narrow it (LIMIT)", MaxQueryRows)}
		}
		vals := make([]any, len(types))
		ptrs := make([]any, len(types))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		if err := size.add(vals); err != nil {
			return nil, err
		}
		for i, v := range vals {
			t.Columns[i].Values = append(t.Columns[i].Values, sqlValue(v, types[i].DatabaseTypeName()))
		}
	}
	return t, rows.Err()
}

var numericTypes = map[string]bool{"DECIMAL": true, "NUMERIC": true, "INT": true, "INTEGER": true, "BIGINT": true,
	"SMALLINT": true, "TINYINT": true, "MEDIUMINT": true, "FLOAT": true, "DOUBLE": true, "UNSIGNED INT": true, "UNSIGNED BIGINT": true,
	"UNSIGNED SMALLINT": true, "UNSIGNED TINYINT": true, "UNSIGNED MEDIUMINT": true, "YEAR": true}

// sqlValue turns a value a driver scanned into a language value; dbType
// (MariaDB's column type) says whether bytes are a number.
func sqlValue(v any, dbType string) lang.Value {
	num := func(s string) lang.Value {
		if n, err := lang.ParseNumber(s); err == nil {
			return lang.Num(n)
		}
		return lang.Text(s)
	}
	switch x := v.(type) {
	case nil:
		return lang.Null()
	case bool:
		return lang.Bool(x)
	case int64:
		return lang.Int(x)
	case int32:
		return lang.Int(int64(x))
	case int16:
		return lang.Int(int64(x))
	case int8:
		return lang.Int(int64(x))
	case uint64:
		return num(strconv.FormatUint(x, 10))
	case uint32:
		return lang.Int(int64(x))
	case float64:
		return num(strconv.FormatFloat(x, 'f', -1, 64))
	case float32:
		return num(strconv.FormatFloat(float64(x), 'f', -1, 32))
	case string:
		return lang.Text(x)
	case time.Time:
		return lang.DateTimeValue(x.UTC())
	case []byte:
		if numericTypes[strings.ToUpper(dbType)] {
			return num(string(x))
		}
		if utf8.Valid(x) {
			return lang.Text(string(x))
		}
		return lang.FileValue(&lang.File{Name: "value.bin", Content: x})
	case [16]byte: // a PostgreSQL uuid
		return lang.Text(fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16]))
	case driver.Valuer: // pgx numerics and the like: their text
		if dv, err := x.Value(); err == nil {
			if s, ok := dv.(string); ok {
				return num(s)
			}
		}
	case fmt.Stringer:
		return lang.Text(x.String())
	}
	// JSON and arrays: their JSON text.
	if b, err := json.Marshal(v); err == nil {
		return lang.Text(string(b))
	}
	return lang.Text(fmt.Sprint(v))
}
