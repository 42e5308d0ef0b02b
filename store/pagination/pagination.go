// Package pagination implements AIP-158 list paging for the store: page size
// rules and opaque keyset page tokens bound to the request that made them.
//
// The server layer calls PageSize on the request's page_size and passes the
// result and the raw page_token to a store List method; the store decodes the
// token with Decode (binding it to the request's other parameters) and makes
// the next one with Encode.
package pagination

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc64"
	"strings"

	"github.com/proserun/prose/store"
)

const (
	// DefaultPageSize is used when page_size is 0.
	DefaultPageSize = 50
	// MaxPageSize is the largest page: larger values are coerced to it.
	MaxPageSize = 1000
)

// PageSize applies the list rules: 0 → 50, above 1000 → 1000, negative →
// error wrapping store.ErrInvalidArgument.
func PageSize(n int32) (int, error) {
	switch {
	case n < 0:
		return 0, store.InvalidField("page_size", "page_size must not be negative, got %d", n)
	case n == 0:
		return DefaultPageSize, nil
	case n > MaxPageSize:
		return MaxPageSize, nil
	}
	return int(n), nil
}

// Normalize is PageSize for values already validated: 0 or negative → 50,
// above 1000 → 1000. Store backends use it.
func Normalize(n int) int {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}

// Binding identifies the parameters of a list request other than page size
// and token: the method, the parent, the filter, the order_by, and anything
// else that changes the result set. Build it with Bind.
type Binding uint64

var crcTable = crc64.MakeTable(crc64.ECMA)

// Bind computes the binding of a request's parameters. The order of parts
// matters; each part is length-prefixed so ("a","bc") ≠ ("ab","c").
func Bind(parts ...string) Binding {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%d:%s;", len(p), p)
	}
	return Binding(crc64.Checksum([]byte(b.String()), crcTable))
}

type token struct {
	V int      `json:"v"`
	C uint64   `json:"c"`
	K []string `json:"k"`
}

const version = 1

// Encode makes a page token that carries keys (the sort key of the last row
// of the page, id last) and the binding.
func Encode(b Binding, keys []string) string {
	raw, _ := json.Marshal(token{V: version, C: uint64(b), K: keys}) // cannot fail for these types
	return base64.RawURLEncoding.EncodeToString(raw)
}

// Decode returns the keys carried by tok, checking it was made for a request
// with binding b and carries exactly n keys. An empty tok returns nil keys
// (first page). Errors wrap store.ErrInvalidArgument.
func Decode(tok string, b Binding, n int) ([]string, error) {
	if tok == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, store.InvalidField("page_token", "page_token is malformed")
	}
	var t token
	if err := json.Unmarshal(raw, &t); err != nil || t.V != version {
		return nil, store.InvalidField("page_token", "page_token is malformed")
	}
	if t.C != uint64(b) {
		return nil, store.InvalidField("page_token", "page_token was issued for a request with other parameters (filter, order_by, parent, ...)")
	}
	if len(t.K) != n {
		return nil, store.InvalidField("page_token", "page_token is malformed")
	}
	return t.K, nil
}
