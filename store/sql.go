package store

// Dialect names the SQL dialect of a backend (store/sqlite, store/postgres).
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
