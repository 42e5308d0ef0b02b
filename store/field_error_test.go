package store_test

import (
	"errors"
	"testing"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
	"github.com/proserun/prose/store/sqlfilter"
)

// TestFieldErrors: the list parameters' errors are ErrInvalidArgument and
// name their field as a *store.FieldError, so that the server chooses the
// reason by field, never by the message's words.
func TestFieldErrors(t *testing.T) {
	_, sizeErr := pagination.PageSize(-1)
	_, tokenErr := pagination.Decode("not base64!", pagination.Bind("x"), 1)
	_, orderErr := store.ParseOrderBy("colour", store.RunOrdering)
	_, filterErr := sqlfilter.Runs.Parse(`colour = "red"`)
	// A filter that mentions page_token is still a filter error.
	_, filterTokenErr := sqlfilter.Runs.Parse(`page_token = "x"`)
	for want, err := range map[string]error{
		"page_size": sizeErr, "page_token": tokenErr, "order_by": orderErr, "filter": filterErr,
	} {
		var fe *store.FieldError
		if !errors.Is(err, store.ErrInvalidArgument) || !errors.As(err, &fe) || fe.Field != want {
			t.Errorf("%s: %v (%T), want a FieldError of %s", want, err, err, want)
		}
	}
	var fe *store.FieldError
	if !errors.As(filterTokenErr, &fe) || fe.Field != "filter" {
		t.Errorf("filter naming page_token: %v", filterTokenErr)
	}
	if got := store.InvalidField("page_token", "page_token is malformed").Error(); got != "invalid argument: page_token is malformed" {
		t.Errorf("Error() = %q", got)
	}
}
