package store

import (
	"strconv"
	"strings"
	"time"
)

// Dialect names the SQL dialect a query is rendered for.
type Dialect int

const (
	// SQLite uses '?' placeholders and stores timestamps as integer unix
	// microseconds.
	SQLite Dialect = iota + 1
	// Postgres uses '$n' placeholders and timestamptz columns.
	Postgres
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "unknown"
}

// Args collects the values of a parameterised SQL statement. Add returns the
// placeholder to put in the SQL text, so no value ever enters the text.
type Args struct {
	Dialect Dialect
	Values  []any
}

// NewArgs returns an empty argument list for d.
func NewArgs(d Dialect) *Args { return &Args{Dialect: d} }

// Add appends v and returns its placeholder. time.Time values are converted
// to the dialect's stored form (unix microseconds for SQLite, UTC
// microsecond-truncated time for PostgreSQL).
func (a *Args) Add(v any) string {
	if t, ok := v.(time.Time); ok {
		v = a.TimeValue(t)
	}
	a.Values = append(a.Values, v)
	if a.Dialect == Postgres {
		return "$" + strconv.Itoa(len(a.Values))
	}
	return "?"
}

// TimeValue converts t to the value stored for a timestamp column.
func (a *Args) TimeValue(t time.Time) any {
	t = Time(t)
	if a.Dialect == Postgres {
		return t
	}
	return t.UnixMicro()
}

// ILike returns the case-insensitive LIKE operator of the dialect. Patterns
// are used with ESCAPE '\' (see LikeEscape).
func (a *Args) ILike() string {
	if a.Dialect == Postgres {
		return "ILIKE"
	}
	return "LIKE" // SQLite's LIKE is case-insensitive for ASCII by default.
}

// LikeEscape escapes '\', '%' and '_' in s so that it matches literally in a
// LIKE pattern declared with ESCAPE '\'.
func LikeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// Filter is a checked list filter (AIP-160) ready to be rendered as SQL. The
// store/sqlfilter package builds them; backends render them. Column names in
// the rendered SQL use the table aliases documented on each list request.
type Filter interface {
	// SQL renders a parenthesised boolean SQL expression, adding every value
	// to args.
	SQL(args *Args) (string, error)
	// String is the filter text the filter was built from; page tokens are
	// bound to it.
	String() string
}

func filterString(f Filter) string {
	if f == nil {
		return ""
	}
	return f.String()
}

// FilterKey returns the text that binds a page token to f ("" for no filter).
func FilterKey(f Filter) string { return filterString(f) }
