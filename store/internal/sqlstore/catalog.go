package sqlstore

import (
	"context"
	"fmt"
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
		if _, err := c.exec(ctx, `INSERT INTO `+table+`
			(organization_id, workspace_id, book_name, book_version, kind, item, name, text)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			b.OrganizationID, b.WorkspaceID, b.Name, b.Version, string(e.Kind), e.Item, e.Name, e.Text); err != nil {
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
	rows, err := db.reader().query(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr(err, what)
	}
	defer rows.Close()
	out := []store.CatalogMatch{}
	for rows.Next() {
		m := store.CatalogMatch{Kind: kind}
		if err := rows.Scan(&m.BookName, &m.BookVersion, &m.Item, &m.Score); err != nil {
			return nil, db.mapErr(err, what)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(err, what)
	}
	return out, nil
}
