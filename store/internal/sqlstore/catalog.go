package sqlstore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/proserun/prose/store"
)

// Catalog search: SQLite keeps the entries in the FTS5 table catalog_fts
// (ranked by bm25, name weighted 10 to text's 1); PostgreSQL in
// catalog_entries with a generated tsvector (name weight A, text B, ranked
// by ts_rank). Both stem English words (porter / 'english'). The rows of a
// book are replaced in the transaction that writes the book and go with it.

// catalogNameWeight is bm25's weight of the name column against text's 1.
const catalogNameWeight = 10.0

// writeCatalog replaces the catalog entries of one workspace book.
func (c conn) writeCatalog(ctx context.Context, d store.Dialect, b store.WorkspaceBook) error {
	table := "catalog_fts"
	if d == store.Postgres {
		table = "catalog_entries"
	}
	if _, err := c.exec(ctx, `DELETE FROM `+table+`
		WHERE organization_id = ? AND workspace_id = ? AND book_name = ? AND book_version = ?`,
		b.OrganizationID, b.WorkspaceID, b.Name, b.Version); err != nil {
		return err
	}
	for _, e := range b.Catalog {
		name, text := e.Name, e.Text
		if d == store.Postgres {
			name, text = tsWords(name), tsWords(text)
		}
		if _, err := c.exec(ctx, `INSERT INTO `+table+`
			(organization_id, workspace_id, book_name, book_version, kind, item, name, text)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			b.OrganizationID, b.WorkspaceID, b.Name, b.Version, string(e.Kind), e.Item, name, text); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) catalogTable() string {
	if db.d == store.Postgres {
		return "catalog_entries"
	}
	return "catalog_fts"
}

// ReplaceBuiltinCatalog implements store.WorkspaceBooks.
func (db *DB) ReplaceBuiltinCatalog(ctx context.Context, books []store.BuiltinCatalog) error {
	return db.tx(ctx, func(c conn) error {
		if _, err := c.exec(ctx, `DELETE FROM `+db.catalogTable()+` WHERE organization_id = '' AND workspace_id = ''`); err != nil {
			return db.mapErr(err, "replace the built-in catalog")
		}
		for _, b := range books {
			if err := c.writeCatalog(ctx, db.d, store.WorkspaceBook{Name: b.Name, Version: b.Version, Catalog: b.Entries}); err != nil {
				return db.mapErr(err, "replace the built-in catalog")
			}
		}
		return nil
	})
}

// tsWords is s as PostgreSQL's text search should read it: the words of
// searchWords, in order, repeats kept. Its parser keeps "test.stamps",
// "ops@acme.test" or "/docs/x" as one token (a host, an e-mail, a path),
// which no query word can match; SQLite's tokenizer splits them already.
func tsWords(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// searchWords returns the words of a free-text query: runs of letters and
// digits, lower-cased, without repeats.
func searchWords(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	seen := map[string]bool{}
	out := words[:0]
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// SearchWorkspaceCatalog implements store.WorkspaceBooks.
func (db *DB) SearchWorkspaceCatalog(ctx context.Context, org, ws string, cq store.CatalogQuery) ([]store.CatalogMatch, error) {
	kind, limit := cq.Kind, cq.Limit
	words := searchWords(cq.Text)
	if len(words) == 0 || limit <= 0 {
		return []store.CatalogMatch{}, nil
	}
	var q string
	var args []any
	// An optional restriction to one book ('' matches every book).
	const oneBook = ` AND (? = '' OR book_name = ? AND book_version = ?)`
	if db.d == store.Postgres {
		// Words are letters and digits only: safe as to_tsquery operands.
		q = `SELECT book_name, book_version, item, ts_rank(doc, q) AS score
			FROM catalog_entries, to_tsquery('english', ?) AS q
			WHERE (organization_id = ? AND workspace_id = ? OR organization_id = '' AND workspace_id = '') AND kind = ? AND doc @@ q` + oneBook + `
			ORDER BY score DESC, book_name, book_version, item LIMIT ?`
		args = []any{strings.Join(words, " | "), org, ws, string(kind), cq.BookName, cq.BookName, cq.BookVersion, limit}
	} else {
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = `"` + w + `"`
		}
		q = fmt.Sprintf(`SELECT book_name, book_version, item, -bm25(catalog_fts, %[1]g, 1.0) AS score
			FROM catalog_fts
			WHERE catalog_fts MATCH ? AND (organization_id = ? AND workspace_id = ? OR organization_id = '' AND workspace_id = '') AND kind = ?`+oneBook+`
			ORDER BY bm25(catalog_fts, %[1]g, 1.0), book_name, book_version, item LIMIT ?`, catalogNameWeight)
		args = []any{strings.Join(quoted, " OR "), org, ws, string(kind), cq.BookName, cq.BookName, cq.BookVersion, limit}
	}
	what := fmt.Sprintf("search of the %ss of workspace %q in organization %q", kind, ws, org)
	if len(cq.Transient) == 0 || org == "" && ws == "" {
		out, err := db.reader().catalogMatches(ctx, kind, q, args)
		return out, db.mapErr(err, what)
	}
	// The transient books' entries are written where the stored ones are
	// (replacing those of a stored book of the same name and version), so
	// that the index ranks them together, in a transaction rolled back
	// after the search. They are written in name and version order, so
	// that concurrent searches take the rows of shadowed books in one
	// order.
	transient := slices.Clone(cq.Transient)
	slices.SortFunc(transient, func(a, b store.BuiltinCatalog) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	var out []store.CatalogMatch
	err := db.tx(ctx, func(c conn) error {
		for _, b := range transient {
			if err := c.writeCatalog(ctx, db.d, store.WorkspaceBook{OrganizationID: org, WorkspaceID: ws,
				Name: b.Name, Version: b.Version, Catalog: b.Entries}); err != nil {
				return err
			}
		}
		var err error
		if out, err = c.catalogMatches(ctx, kind, q, args); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		return nil, db.mapErr(err, what)
	}
	return out, nil
}

// errRollback ends a transaction that must write nothing.
var errRollback = errors.New("rolled back")

// catalogMatches runs a catalog search query.
func (c conn) catalogMatches(ctx context.Context, kind store.CatalogKind, q string, args []any) ([]store.CatalogMatch, error) {
	rows, err := c.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.CatalogMatch{}
	for rows.Next() {
		m := store.CatalogMatch{Kind: kind}
		if err := rows.Scan(&m.BookName, &m.BookVersion, &m.Item, &m.Score); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ListUnindexedWorkspaceBooks implements store.WorkspaceBooks. Every
// indexed book has an entry of kind book, so a book without one has none.
func (db *DB) ListUnindexedWorkspaceBooks(ctx context.Context, after store.WorkspaceBookKey, limit int) ([]store.WorkspaceBook, error) {
	return db.queryWorkspaceBooks(ctx, "books without catalog entries", `SELECT `+workspaceBookCols+` FROM workspace_books b
		WHERE (organization_id, workspace_id, name, version) > (?, ?, ?, ?)
		AND NOT EXISTS (SELECT 1 FROM `+db.catalogTable()+` c
			WHERE c.organization_id = b.organization_id AND c.workspace_id = b.workspace_id
			AND c.book_name = b.name AND c.book_version = b.version AND c.kind = 'book')
		ORDER BY organization_id, workspace_id, name, version LIMIT ?`,
		after.OrganizationID, after.WorkspaceID, after.Name, after.Version, limit)
}

// IndexWorkspaceBook implements store.WorkspaceBooks. On PostgreSQL the
// book's row is locked first: an update of the book waits for this
// transaction (or this one sees its new descriptor and writes nothing), and
// so does another replica indexing the same book (which then finds the
// entries). SQLite runs one write transaction at a time.
func (db *DB) IndexWorkspaceBook(ctx context.Context, b store.WorkspaceBook) (bool, error) {
	what := "index " + workspaceBookWhat(b.OrganizationID, b.WorkspaceID, b.Name, b.Version)
	lock := ""
	if db.d == store.Postgres {
		lock = " FOR UPDATE"
	}
	wrote := false
	err := db.tx(ctx, func(c conn) error {
		var cur []byte
		err := c.queryRow(ctx, `SELECT book FROM workspace_books
			WHERE organization_id = ? AND workspace_id = ? AND name = ? AND version = ?`+lock,
			b.OrganizationID, b.WorkspaceID, b.Name, b.Version).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // deleted since it was listed
		}
		if err != nil {
			return db.mapErr(err, what)
		}
		if !bytes.Equal(cur, b.Book) {
			return nil // updated since it was listed: the update indexed it
		}
		var n int
		if err := c.queryRow(ctx, `SELECT COUNT(*) FROM `+db.catalogTable()+`
			WHERE organization_id = ? AND workspace_id = ? AND book_name = ? AND book_version = ?`,
			b.OrganizationID, b.WorkspaceID, b.Name, b.Version).Scan(&n); err != nil {
			return db.mapErr(err, what)
		}
		if n > 0 {
			return nil
		}
		if err := c.writeCatalog(ctx, db.d, b); err != nil {
			return db.mapErr(err, what)
		}
		wrote = true
		return nil
	})
	return wrote, err
}
