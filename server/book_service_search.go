package server

import (
	"context"
	"errors"
	"math"
	"strings"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/transport"
)

// Limits of the catalog search (README "Limits").
const (
	// DefaultSearchTopK is the number of results when top_k is 0.
	DefaultSearchTopK = 10
	// MaxSearchTopK is the most results one search returns (larger top_k
	// values are coerced to it).
	MaxSearchTopK = 100
	// MaxSearchQueryBytes is the longest query accepted.
	MaxSearchQueryBytes = 1024
)

type searchRequest interface {
	GetQuery() string
	GetTopK() int64
	GetMaxDistance() float32
}

// searchArgs checks the workspace, query, top_k and max_distance of a
// search request.
func searchArgs(req searchRequest) (books.Workspace, string, int, error) {
	var ws books.Workspace
	if wr, ok := req.(workspaceRequest); ok {
		var err error
		if ws, err = workspaceOf(wr); err != nil {
			return ws, "", 0, err
		}
	}
	q := req.GetQuery()
	if strings.TrimSpace(q) == "" {
		return ws, "", 0, requireFields(map[string]string{"query": ""})
	}
	if len(q) > MaxSearchQueryBytes {
		return ws, "", 0, transport.InvalidArgument(transport.ReasonInvalidRequest, "query is too long",
			transport.Violation("query", "must be at most 1024 bytes"))
	}
	if d := req.GetMaxDistance(); math.IsNaN(float64(d)) || d < 0 || d > 1 {
		return ws, "", 0, transport.InvalidArgument(transport.ReasonInvalidRequest, "max_distance must be between 0 and 1",
			transport.Violation("max_distance", "must be between 0 and 1 (0: no threshold)"))
	}
	k := req.GetTopK()
	switch {
	case k < 0:
		return ws, "", 0, transport.InvalidArgument(transport.ReasonInvalidRequest, "top_k must not be negative",
			transport.Violation("top_k", "must not be negative"))
	case k == 0:
		k = DefaultSearchTopK
	case k > MaxSearchTopK:
		k = MaxSearchTopK
	}
	return ws, q, int(k), nil
}

// within returns how many of scores (best first) are within maxDistance of
// the best: a result's distance is 1 - score/best, 0 for the best result and
// approaching 1 for the weakest matches. maxDistance 0 (the default) keeps
// every result.
func within(maxDistance float32, n int, score func(i int) float64) int {
	if maxDistance == 0 || n == 0 {
		return n
	}
	best := score(0)
	if best <= 0 {
		return n
	}
	for i := range n {
		if 1-score(i)/best > float64(maxDistance) {
			return i
		}
	}
	return n
}

func searchError(err error) error {
	if errors.Is(err, books.ErrSearchUnavailable) {
		return transport.Unimplemented(ReasonStoreUnavailable, err.Error())
	}
	return err
}

// SearchWorkspaceBooks ranks the books registered in the workspace.
func (s *BookService) SearchWorkspaceBooks(ctx context.Context, req *bookv1.SearchWorkspaceBooksRequest) (*bookv1.SearchWorkspaceBooksResponse, error) {
	ws, q, k, err := searchArgs(req)
	if err != nil {
		return nil, err
	}
	if err := knownWorkspace(ctx, s.Workspaces, ws); err != nil {
		return nil, err
	}
	hits, err := s.reg.SearchBooks(ctx, ws, q, k)
	if err != nil {
		return nil, searchError(err)
	}
	hits = hits[:within(req.GetMaxDistance(), len(hits), func(i int) float64 { return hits[i].Score })]
	out := &bookv1.SearchWorkspaceBooksResponse{Results: make([]*bookv1.SearchBookMatch, len(hits))}
	for i, h := range hits {
		out.Results[i] = &bookv1.SearchBookMatch{Book: h.Book, Score: h.Score}
	}
	return out, nil
}

// SearchWorkspaceBookProcedures ranks the procedures of the books registered
// in the workspace.
func (s *BookService) SearchWorkspaceBookProcedures(ctx context.Context, req *bookv1.SearchWorkspaceBookProceduresRequest) (*bookv1.SearchWorkspaceBookProceduresResponse, error) {
	ws, q, k, err := searchArgs(req)
	if err != nil {
		return nil, err
	}
	if err := knownWorkspace(ctx, s.Workspaces, ws); err != nil {
		return nil, err
	}
	hits, err := s.reg.SearchProcedures(ctx, ws, q, k)
	if err != nil {
		return nil, searchError(err)
	}
	hits = hits[:within(req.GetMaxDistance(), len(hits), func(i int) float64 { return hits[i].Score })]
	out := &bookv1.SearchWorkspaceBookProceduresResponse{Results: make([]*bookv1.SearchWorkspaceBookProcedureMatch, len(hits))}
	for i, h := range hits {
		out.Results[i] = &bookv1.SearchWorkspaceBookProcedureMatch{
			BookName: h.BookName, BookVersion: h.BookVersion, Procedure: h.Procedure, Score: h.Score,
			OrganizationId: ws.OrganizationID, WorkspaceId: ws.WorkspaceID,
		}
	}
	return out, nil
}

// SearchBooks ranks the built-in books.
func (s *BookService) SearchBooks(ctx context.Context, req *bookv1.SearchBooksRequest) (*bookv1.SearchBooksResponse, error) {
	_, q, k, err := searchArgs(req)
	if err != nil {
		return nil, err
	}
	hits, err := s.reg.SearchBooks(ctx, books.Workspace{}, q, k)
	if err != nil {
		return nil, searchError(err)
	}
	hits = hits[:within(req.GetMaxDistance(), len(hits), func(i int) float64 { return hits[i].Score })]
	out := &bookv1.SearchBooksResponse{Results: make([]*bookv1.SearchBookMatch, len(hits))}
	for i, h := range hits {
		out.Results[i] = &bookv1.SearchBookMatch{Book: h.Book, Score: h.Score}
	}
	return out, nil
}

// SearchBookProcedures ranks the procedures of the built-in books.
func (s *BookService) SearchBookProcedures(ctx context.Context, req *bookv1.SearchBookProceduresRequest) (*bookv1.SearchBookProceduresResponse, error) {
	_, q, k, err := searchArgs(req)
	if err != nil {
		return nil, err
	}
	hits, err := s.reg.SearchProcedures(ctx, books.Workspace{}, q, k)
	if err != nil {
		return nil, searchError(err)
	}
	hits = hits[:within(req.GetMaxDistance(), len(hits), func(i int) float64 { return hits[i].Score })]
	out := &bookv1.SearchBookProceduresResponse{Results: make([]*bookv1.SearchBookProcedureMatch, len(hits))}
	for i, h := range hits {
		out.Results[i] = &bookv1.SearchBookProcedureMatch{BookName: h.BookName, BookVersion: h.BookVersion, Procedure: h.Procedure, Score: h.Score}
	}
	return out, nil
}

// SearchWorkspaceBookConnectionProcedures ranks the procedures of a
// connection's book version.
func (s *ConnectionService) SearchWorkspaceBookConnectionProcedures(ctx context.Context, req *bookv1.SearchWorkspaceBookConnectionProceduresRequest) (*bookv1.SearchWorkspaceBookProceduresResponse, error) {
	ws, q, k, err := searchArgs(req)
	if err != nil {
		return nil, err
	}
	if err := requireFields(map[string]string{"connection_id": req.GetConnectionId()}); err != nil {
		return nil, err
	}
	hits, err := s.conns.SearchProcedures(ctx, ws, req.GetConnectionId(), q, k)
	if errors.Is(err, books.ErrSearchUnavailable) {
		return nil, searchError(err)
	}
	if err != nil {
		return nil, connectionError(err, ws, "", "", req.GetConnectionId())
	}
	hits = hits[:within(req.GetMaxDistance(), len(hits), func(i int) float64 { return hits[i].Score })]
	out := &bookv1.SearchWorkspaceBookProceduresResponse{Results: make([]*bookv1.SearchWorkspaceBookProcedureMatch, len(hits))}
	for i, h := range hits {
		out.Results[i] = &bookv1.SearchWorkspaceBookProcedureMatch{
			BookName: h.BookName, BookVersion: h.BookVersion, Procedure: h.Procedure, Score: h.Score,
			OrganizationId: ws.OrganizationID, WorkspaceId: ws.WorkspaceID, ConnectionId: req.GetConnectionId(),
		}
	}
	return out, nil
}

func conceptResults(hits []books.ConceptHit) *bookv1.SearchBookConceptsResponse {
	out := &bookv1.SearchBookConceptsResponse{Results: make([]*bookv1.SearchBookConceptMatch, len(hits))}
	for i, h := range hits {
		out.Results[i] = &bookv1.SearchBookConceptMatch{BookName: h.BookName, BookVersion: h.BookVersion, Concept: h.Concept, Score: h.Score}
	}
	return out
}

// SearchBookConcepts ranks the concepts of the built-in books.
func (s *BookService) SearchBookConcepts(ctx context.Context, req *bookv1.SearchBookConceptsRequest) (*bookv1.SearchBookConceptsResponse, error) {
	_, q, k, err := searchArgs(req)
	if err != nil {
		return nil, err
	}
	hits, err := s.reg.SearchConcepts(ctx, books.Workspace{}, q, k)
	if err != nil {
		return nil, searchError(err)
	}
	hits = hits[:within(req.GetMaxDistance(), len(hits), func(i int) float64 { return hits[i].Score })]
	return conceptResults(hits), nil
}

// SearchWorkspaceBookConcepts ranks the concepts of the books a workspace
// sees.
func (s *BookService) SearchWorkspaceBookConcepts(ctx context.Context, req *bookv1.SearchWorkspaceBookConceptsRequest) (*bookv1.SearchBookConceptsResponse, error) {
	ws, q, k, err := searchArgs(req)
	if err != nil {
		return nil, err
	}
	if err := knownWorkspace(ctx, s.Workspaces, ws); err != nil {
		return nil, err
	}
	hits, err := s.reg.SearchConcepts(ctx, ws, q, k)
	if err != nil {
		return nil, searchError(err)
	}
	hits = hits[:within(req.GetMaxDistance(), len(hits), func(i int) float64 { return hits[i].Score })]
	return conceptResults(hits), nil
}
