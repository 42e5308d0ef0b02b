package store

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// OrderField is one field of an AIP-132 order_by.
type OrderField struct {
	Field string
	Desc  bool
}

// OrderBy is a parsed, allow-listed order_by. The backends always append the
// record id as the last tiebreaker (in the direction of the last field).
type OrderBy []OrderField

// String renders o canonically ("title, create_time desc").
func (o OrderBy) String() string {
	parts := make([]string, len(o))
	for i, f := range o {
		parts[i] = f.Field
		if f.Desc {
			parts[i] += " desc"
		}
	}
	return strings.Join(parts, ", ")
}

// Ordering is the order_by allow-list of one list method.
type Ordering struct {
	Fields  []string
	Default OrderBy
}

// Orderings of the list methods.
var (
	WorkspaceOrdering = Ordering{
		Fields:  []string{"title", "create_time", "update_time"},
		Default: OrderBy{{Field: "create_time", Desc: true}},
	}
	WorkspaceUserOrdering = Ordering{
		Fields:  []string{"display_name", "email", "created_time", "updated_time"},
		Default: OrderBy{{Field: "created_time", Desc: true}},
	}
	ExceptionOrdering = Ordering{
		Fields:  []string{"create_time", "update_time"},
		Default: OrderBy{{Field: "create_time", Desc: true}},
	}
)

// ParseOrderBy parses an AIP-132 order_by ("a, b desc") and checks every field
// against the allow-list. An empty string yields the default ordering. Errors
// wrap ErrInvalidArgument. A field may appear once.
func ParseOrderBy(s string, allowed Ordering) (OrderBy, error) {
	if strings.TrimSpace(s) == "" {
		return slices.Clone(allowed.Default), nil
	}
	var out OrderBy
	for part := range strings.SplitSeq(s, ",") {
		words := strings.Fields(part)
		var f OrderField
		switch {
		case len(words) == 1:
			f.Field = words[0]
		case len(words) == 2 && (words[1] == "desc" || words[1] == "asc"):
			f.Field, f.Desc = words[0], words[1] == "desc"
		case len(words) == 0:
			return nil, InvalidField("order_by", "order_by %q: empty field", s)
		default:
			return nil, InvalidField("order_by", "order_by %q: %q is not \"field\" or \"field desc\"", s, strings.TrimSpace(part))
		}
		if !slices.Contains(allowed.Fields, f.Field) {
			return nil, InvalidField("order_by", "order_by: unsupported field %q (allowed: %s)", f.Field, strings.Join(allowed.Fields, ", "))
		}
		if slices.ContainsFunc(out, func(o OrderField) bool { return o.Field == f.Field }) {
			return nil, InvalidField("order_by", "order_by: field %q given twice", f.Field)
		}
		out = append(out, f)
	}
	return out, nil
}

// TitleSortKey is the key order_by=title sorts on, stored beside the title
// (workspaces.title_key) and compared byte by byte on both backends (the
// column is COLLATE "C" on PostgreSQL, BINARY on SQLite): the title as a
// person reads it, without regard to case or accents. It is decomposed
// (NFD), its combining marks are dropped (É → E), it is case-folded the
// Unicode way (golang.org/x/text/cases: ß → ss, Σ/ς → σ) and recomposed
// (NFC). Titles with equal keys ("Émile", "EMILE") are ordered by id.
// Migration 00013 recomputes the key of the rows written before (00010 kept
// the title with ASCII letters lower-cased).
func TitleSortKey(title string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), cases.Fold(), norm.NFC)
	key, _, err := transform.String(t, title)
	if err != nil { // invalid UTF-8 cannot be stored; keep the bytes
		return title
	}
	return key
}
