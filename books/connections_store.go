package books

import (
	"errors"

	"github.com/proserun/prose/store"
)

// storeError is a store error that also is the books sentinel of the same
// meaning; its message is the store's.
type storeError struct {
	err, kind error
}

func (e *storeError) Error() string        { return e.err.Error() }
func (e *storeError) Unwrap() error        { return e.err }
func (e *storeError) Is(target error) bool { return target == e.kind }

// fromStore maps the store's sentinels on connections to the books ones.
func fromStore(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return &storeError{err, ErrNotFound}
	case errors.Is(err, store.ErrAlreadyExists):
		return &storeError{err, ErrAlreadyExists}
	case errors.Is(err, store.ErrInvalidArgument):
		return &storeError{err, ErrInvalidArgument}
	}
	return err
}
