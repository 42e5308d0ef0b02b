package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
)

// keyKind is the type of a sort key column.
type keyKind int

const (
	keyText keyKind = iota
	keyTime
	keyInt
)

// sortCol maps a public order_by field to a column expression.
type sortCol struct {
	Field string
	Col   string
	Kind  keyKind
}

// keyset describes the sort of one list query: the order_by fields, then the
// id tiebreaker.
type keyset struct {
	cols []sortCol
	desc []bool
}

// newKeyset resolves an order_by against the columns of a resource and
// appends idCol as tiebreaker in the direction of the last field.
func newKeyset(ob store.OrderBy, def store.OrderBy, cols map[string]sortCol, idCol string) (keyset, error) {
	if len(ob) == 0 {
		ob = def
	}
	var k keyset
	for _, f := range ob {
		c, ok := cols[f.Field]
		if !ok {
			return keyset{}, store.InvalidField("order_by", "order_by: unsupported field %q", f.Field)
		}
		k.cols = append(k.cols, c)
		k.desc = append(k.desc, f.Desc)
	}
	last := false
	if n := len(k.desc); n > 0 {
		last = k.desc[n-1]
	}
	k.cols = append(k.cols, sortCol{Field: "id", Col: idCol, Kind: keyText})
	k.desc = append(k.desc, last)
	return k, nil
}

// orderBy renders the ORDER BY clause body.
func (k keyset) orderBy() string {
	parts := make([]string, len(k.cols))
	for i, c := range k.cols {
		parts[i] = c.Col
		if k.desc[i] {
			parts[i] += " DESC"
		} else {
			parts[i] += " ASC"
		}
	}
	return strings.Join(parts, ", ")
}

func (k keyset) value(i int, s string) (any, error) {
	switch k.cols[i].Kind {
	case keyTime:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, store.InvalidField("page_token", "page_token is malformed")
		}
		return time.UnixMicro(n).UTC(), nil
	case keyInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, store.InvalidField("page_token", "page_token is malformed")
		}
		return n, nil
	}
	return s, nil
}

// after renders the condition selecting rows strictly after the row whose
// sort key is keys. With one direction it is a row-value comparison (which
// both engines turn into an index range); with mixed directions the
// expanded OR form.
func (k keyset) after(a *Args, keys []string) (string, error) {
	vals := make([]any, len(keys))
	for i, s := range keys {
		v, err := k.value(i, s)
		if err != nil {
			return "", err
		}
		vals[i] = v
	}
	same := true
	for _, d := range k.desc {
		same = same && d == k.desc[0]
	}
	if same {
		op := ">"
		if k.desc[0] {
			op = "<"
		}
		cols := make([]string, len(k.cols))
		ph := make([]string, len(k.cols))
		for i, c := range k.cols {
			cols[i] = c.Col
			ph[i] = a.Add(vals[i])
		}
		return fmt.Sprintf("(%s) %s (%s)", strings.Join(cols, ", "), op, strings.Join(ph, ", ")), nil
	}
	var ors []string
	for i := range k.cols {
		var ands []string
		for j := 0; j < i; j++ {
			ands = append(ands, fmt.Sprintf("%s = %s", k.cols[j].Col, a.Add(vals[j])))
		}
		op := ">"
		if k.desc[i] {
			op = "<"
		}
		ands = append(ands, fmt.Sprintf("%s %s %s", k.cols[i].Col, op, a.Add(vals[i])))
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return "(" + strings.Join(ors, " OR ") + ")", nil
}

// binding is the canonical text of the order_by, bound into tokens.
func (k keyset) binding() string {
	parts := make([]string, len(k.cols))
	for i, c := range k.cols {
		parts[i] = c.Field
		if k.desc[i] {
			parts[i] += " desc"
		}
	}
	return strings.Join(parts, ",")
}

func timeKey(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// listQuery assembles a keyset-paged SELECT.
type listQuery struct {
	a       *Args
	selects string // "SELECT ... FROM ... "
	where   []string
	ks      keyset
	bind    pagination.Binding
	size    int
	groupBy string // optional GROUP BY body
	offset  int    // optional OFFSET (AIP-158 skip)
}

// newList starts a list query: it decodes the token (bound to parts plus the
// filter and the ordering), adds the filter (rendered with the list's
// fields) and the keyset condition.
func newList(d store.Dialect, ks keyset, fs fields, f store.Filter, token string, size int, selects string, parts ...string) (*listQuery, error) {
	return newListKeyed(d, ks, fs, f, store.FilterKey(f), token, size, selects, parts...)
}

// newListKeyed is newList with the filter's part of the binding given
// (filterKey instead of store.FilterKey(f)).
func newListKeyed(d store.Dialect, ks keyset, fs fields, f store.Filter, filterKey, token string, size int, selects string, parts ...string) (*listQuery, error) {
	parts = append(parts, "filter="+filterKey, "order_by="+ks.binding())
	lq := &listQuery{a: NewArgs(d), selects: selects, ks: ks, bind: pagination.Bind(parts...), size: pagination.Normalize(size)}
	keys, err := pagination.Decode(token, lq.bind, len(ks.cols))
	if err != nil {
		return nil, err
	}
	if f != nil {
		cond, err := fs.where(lq.a, f)
		if err != nil {
			return nil, err
		}
		lq.where = append(lq.where, cond)
	}
	if keys != nil {
		cond, err := ks.after(lq.a, keys)
		if err != nil {
			return nil, err
		}
		lq.where = append(lq.where, cond)
	}
	return lq, nil
}

// cond adds a condition; args must be added through lq.a by the caller.
func (lq *listQuery) cond(c string) { lq.where = append(lq.where, c) }

// sql renders the query fetching one row more than the page, to know
// whether a next page exists.
func (lq *listQuery) sql() string {
	var b strings.Builder
	b.WriteString(lq.selects)
	if len(lq.where) > 0 {
		b.WriteString(" WHERE ")
		b.WriteString(strings.Join(lq.where, " AND "))
	}
	if lq.groupBy != "" {
		b.WriteString(" GROUP BY ")
		b.WriteString(lq.groupBy)
	}
	b.WriteString(" ORDER BY ")
	b.WriteString(lq.ks.orderBy())
	b.WriteString(" LIMIT ")
	b.WriteString(lq.a.Add(lq.size + 1))
	if lq.offset > 0 {
		b.WriteString(" OFFSET ")
		b.WriteString(lq.a.Add(lq.offset))
	}
	return b.String()
}

// page trims items to the page size and the page byte budget
// (DB.SetPageBytes) and makes the next token from the last item's keys.
func page[T any](lq *listQuery, items []T, keys func(T) []string, budget int) store.Page[T] {
	n := store.PageItems(items, lq.size, budget)
	if n == len(items) {
		return store.Page[T]{Items: items}
	}
	items = items[:n]
	return store.Page[T]{Items: items, NextPageToken: pagination.Encode(lq.bind, keys(items[len(items)-1]))}
}

// pageBytes counts the bytes of the rows a list has scanned, so that it
// stops reading rows once the page is past its budget.
type pageBytes int

// full adds v's bytes and reports whether the page is past the budget with
// at least two rows scanned (page then cuts before the last one and makes a
// next token; with a single row it cannot tell whether more exist).
func (b *pageBytes) full(v any, rows, budget int) bool {
	if s, ok := v.(store.Sized); ok {
		*b += pageBytes(s.WireBytes())
	}
	return rows >= 2 && int(*b) > budget
}

// scanPage runs lq, scans its rows with scan (stopping early once the page
// is past the byte budget: see pageBytes) and returns the page with keys
// making the next token. what names the list in a query error.
func scanPage[T any](ctx context.Context, db *DB, lq *listQuery, what string, scan func(interface{ Scan(...any) error }) (T, error), keys func(T) []string) (store.Page[T], error) {
	rows, err := db.reader().queryArgs(ctx, lq.sql(), lq.a)
	if err != nil {
		return store.Page[T]{}, db.mapErr(err, what)
	}
	defer rows.Close()
	var items []T
	var used pageBytes
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return store.Page[T]{}, err
		}
		items = append(items, v)
		if used.full(v, len(items), int(db.pageBytes.Load())) {
			break // the page is full: the next token starts at the row past it
		}
	}
	if err := rows.Err(); err != nil {
		return store.Page[T]{}, err
	}
	return page(lq, items, keys, int(db.pageBytes.Load())), nil
}
