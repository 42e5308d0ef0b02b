package testenv

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/proserun/prose/gateway"
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/server/app"
)

// StampBook is the counting test book's descriptor: `stamp a ticket (the
// stamp)`, answered at endpoint.
func StampBook(endpoint string) *bookv1.Book {
	text := &bookv1.ConceptType{Kind: &bookv1.ConceptType_ScalarType{ScalarType: bookv1.ConceptScalarType_ConceptScalarTypeText}}
	return &bookv1.Book{
		Name: "test.stamps", Version: "1.0.0", Endpoint: endpoint,
		Procedures: []*bookv1.Procedure{{
			Id:        "stamp",
			Signature: books.Signature("stamp a ticket (the stamp)"),
			Inputs: []*bookv1.Concept{{
				NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformv1.NounPhrase{books.Phrase("ticket")}},
				Type:        text,
			}},
			IsMutation: true,
		}},
	}
}

// HeldBook answers `stamp a ticket (the stamp)` with "S:" and the ticket,
// holding the first call until Release is closed.
type HeldBook struct {
	Srv     *httptest.Server
	Held    chan struct{} // closed when the first call arrived
	Release chan struct{}

	mu    sync.Mutex
	calls map[string]int // by ticket
}

// NewHeldBook serves a HeldBook until t ends.
func NewHeldBook(t *testing.T) *HeldBook {
	b := &HeldBook{Held: make(chan struct{}), Release: make(chan struct{}), calls: map[string]int{}}
	b.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Inputs struct{ Ticket string } `json:"inputs"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.calls[req.Inputs.Ticket]++
		first := len(b.calls) == 1 && b.calls[req.Inputs.Ticket] == 1
		b.mu.Unlock()
		if first {
			close(b.Held)
			select {
			case <-b.Release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]string{"stamp": "S:" + req.Inputs.Ticket}})
	}))
	t.Cleanup(b.Srv.Close)
	return b
}

// Calls are the calls the book received so far, by ticket.
func (b *HeldBook) Calls() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.calls)
}

// WithKey is ctx with key as the bearer token of outgoing gRPC calls.
func WithKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
}

// WithGRPCOnly is an app.Config edit giving the app a gRPC-only server
// (--grpc-addr).
func WithGRPCOnly(c *app.Config) { c.GRPCAddr = "127.0.0.1:0" }

// ServeGRPCOnly serves the app as `prose serve --grpc-addr` does
// (gateway.Serve with the gRPC-only server on a listener of its own,
// wrapped by wrap when not nil) and returns a connection to the gRPC-only
// port. The app must have been made with WithGRPCOnly.
func (e *Env) ServeGRPCOnly(t *testing.T, wrap func(net.Listener) net.Listener) *grpc.ClientConn {
	t.Helper()
	if e.App.GRPCOnly == nil {
		t.Fatal("the app has no gRPC-only server (WithGRPCOnly)")
	}
	httpLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var grpcLis net.Listener
	if grpcLis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	target := grpcLis.Addr().String()
	if wrap != nil {
		grpcLis = wrap(grpcLis)
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gateway.Serve(sctx, httpLis, e.App.GRPC, e.App.HTTP, Discard(), append(e.App.ServeOptions(), gateway.WithNativeGRPC(grpcLis, e.App.GRPCOnly))...)
	}()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); stop(); <-done })
	return conn
}
