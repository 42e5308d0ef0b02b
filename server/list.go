package server

import (
	"context"

	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/sqlfilter"
)

// The list skeleton (AIP-132/158/160): every list RPC checks page_size,
// then filter, then order_by, each against its own allow-list, and maps the
// page's items to their protos. parseList and mapItems are that skeleton,
// written once.

// pageRequest is what every paged list request carries.
type pageRequest interface {
	GetPageSize() int32
	GetPageToken() string
}

// filterRequest is a list request with an AIP-160 filter.
type filterRequest interface {
	pageRequest
	GetFilter() string
}

// orderedRequest is a list request with an AIP-132 order_by.
type orderedRequest interface {
	filterRequest
	GetOrderBy() string
}

// listParams are a list request's checked parameters, ready for the store.
type listParams struct {
	Size    int
	Token   string
	Filter  store.Filter
	OrderBy store.OrderBy
}

// parsePage checks a list request without filter or order_by.
func parsePage(req pageRequest) (listParams, error) {
	size, err := checkedPageSize(req.GetPageSize())
	if err != nil {
		return listParams{}, err
	}
	return listParams{Size: size, Token: req.GetPageToken()}, nil
}

// parseFiltered checks page_size, then the filter against filters.
func parseFiltered(req filterRequest, filters *sqlfilter.Resource) (listParams, error) {
	p, err := parsePage(req)
	if err != nil {
		return p, err
	}
	if p.Filter, err = filters.Parse(req.GetFilter()); err != nil {
		return listParams{}, invalidFromStore(err)
	}
	return p, nil
}

// parseList checks page_size, then the filter against filters, then
// order_by against ordering.
func parseList(req orderedRequest, filters *sqlfilter.Resource, ordering store.Ordering) (listParams, error) {
	p, err := parseFiltered(req, filters)
	if err != nil {
		return p, err
	}
	if p.OrderBy, err = store.ParseOrderBy(req.GetOrderBy(), ordering); err != nil {
		return listParams{}, invalidFromStore(err)
	}
	return p, nil
}

// mapItems converts a page's items to their protos; the first error stops it.
func mapItems[T, P any](items []T, conv func(T) (P, error)) ([]P, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := make([]P, 0, len(items))
	for _, it := range items {
		p, err := conv(it)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// mapAll converts a page's items with a conversion that cannot fail.
func mapAll[T, P any](items []T, conv func(T) P) []P {
	if len(items) == 0 {
		return nil
	}
	out := make([]P, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	return out
}

// orgStatus maps a store error about organization org to its status.
func orgStatus(err error, org string) error {
	return storeStatus(err, ReasonOrganizationNotFound, ReasonOrganizationNotFound, names.Organization(org))
}

// listInOrganization lists one page of org's items after checking that org
// exists: a list of an unknown organization is NOT_FOUND, never empty.
func listInOrganization[T any](ctx context.Context, st store.Organizations, org string, list func() (store.Page[T], error)) (store.Page[T], error) {
	if _, err := st.GetOrganization(ctx, org); err != nil {
		return store.Page[T]{}, orgStatus(err, org)
	}
	page, err := list()
	if err != nil {
		return store.Page[T]{}, orgStatus(err, org)
	}
	return page, nil
}
