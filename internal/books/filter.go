package books

import (
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	expr "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// FilterFields are the fields a book list filter (AIP-160) may use: the
// strings name, version, display_name, author and endpoint, the boolean
// hidden, and the list tags. `=` and `!=` compare exactly; `:` on a string
// tests for a substring (case-insensitive), on tags for a member; AND, OR, NOT
// and parentheses combine.
var FilterFields = []string{"name", "version", "display_name", "author", "endpoint", "hidden", "tags"}

var bookFields = filterFields[*bookv1.Book]{
	strings: map[string]func(*bookv1.Book) string{
		"name":         (*bookv1.Book).GetName,
		"version":      (*bookv1.Book).GetVersion,
		"display_name": (*bookv1.Book).GetDisplayName,
		"author":       (*bookv1.Book).GetAuthor,
		"endpoint":     (*bookv1.Book).GetEndpoint,
	},
	bools: map[string]func(*bookv1.Book) bool{"hidden": (*bookv1.Book).GetHidden},
	lists: map[string]func(*bookv1.Book) []string{"tags": (*bookv1.Book).GetTags},
}

var filterDecls = bookFields.declarations()

// Filter is a parsed, type-checked book filter. The zero Filter matches
// every book.
type Filter struct{ e *expr.Expr }

// ParseFilter parses and checks an AIP-160 filter over FilterFields. Errors
// wrap ErrInvalidArgument.
func ParseFilter(s string) (Filter, error) {
	e, err := parseFilter(bookFields, filterDecls, s, &bookv1.Book{})
	return Filter{e: e}, err
}

// Match reports whether b passes the filter.
func (f Filter) Match(b *bookv1.Book) bool { return bookFields.match(f.e, b) }
