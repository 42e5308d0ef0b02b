package server

import (
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// excParseFilter parses an exception filter against its allow-list
// (sqlfilter.Exceptions: state with the ordered comparisons, automation,
// run, group, create_time); errors are INVALID_ARGUMENT naming the problem
// with a violation on "filter".
func excParseFilter(text string) (store.Filter, error) {
	f, err := sqlfilter.Exceptions.Parse(text)
	if err != nil {
		return nil, invalidFromStore(err)
	}
	return f, nil
}
