package books

import (
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	expr "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// ConnectionFilterFields are the fields a connection list filter (AIP-160)
// may use, all strings: `=` and `!=` compare exactly, `:` tests for a
// substring (case-insensitive); AND, OR, NOT and parentheses combine.
var ConnectionFilterFields = map[string]func(*bookv1.BookConnectionDescriptor) string{
	"book_name":       (*bookv1.BookConnectionDescriptor).GetBookName,
	"book_version":    (*bookv1.BookConnectionDescriptor).GetBookVersion,
	"connection_name": (*bookv1.BookConnectionDescriptor).GetConnectionName,
	"connection_id":   (*bookv1.BookConnectionDescriptor).GetConnectionId,
}

var connFields = filterFields[*bookv1.BookConnectionDescriptor]{strings: ConnectionFilterFields}

var connFilterDecls = connFields.declarations()

// ConnectionFilter is a parsed, type-checked connection filter; the zero
// one matches every connection.
type ConnectionFilter struct{ e *expr.Expr }

// ParseConnectionFilter parses and checks an AIP-160 filter over
// ConnectionFilterFields. Errors wrap ErrInvalidArgument.
func ParseConnectionFilter(s string) (ConnectionFilter, error) {
	e, err := parseFilter(connFields, connFilterDecls, s, &bookv1.BookConnectionDescriptor{})
	return ConnectionFilter{e: e}, err
}

// Match reports whether d passes the filter.
func (f ConnectionFilter) Match(d *bookv1.BookConnectionDescriptor) bool {
	return connFields.match(f.e, d)
}
