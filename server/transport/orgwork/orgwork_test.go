package orgwork_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/orgwork"
)

// TestCallsCountAsTheirOrganizationsWork: a caller's call is its
// organization's work from before its handler runs until after it has
// returned; a call without a Principal is nobody's.
func TestCallsCountAsTheirOrganizationsWork(t *testing.T) {
	var events []string
	entry := orgwork.Middleware(func(org string) func() {
		events = append(events, "start "+org)
		return func() { events = append(events, "done "+org) }
	})
	if entry.Name != orgwork.Name || entry.Unary == nil || entry.Stream != nil {
		t.Fatalf("entry %+v: want a unary entry only", entry)
	}
	handler := func(context.Context, any) (any, error) {
		events = append(events, "handler")
		return "answer", nil
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/x.v1.S/M"}
	ctx := transport.ContextWithPrincipal(context.Background(), &transport.Principal{UserID: "u", OrganizationID: "acme"})
	out, err := entry.Unary(ctx, nil, info, handler)
	if err != nil || out != "answer" {
		t.Fatalf("answer %v, %v", out, err)
	}
	if want := []string{"start acme", "handler", "done acme"}; !slices.Equal(events, want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	events = nil
	if _, err := entry.Unary(context.Background(), nil, info, handler); err != nil {
		t.Fatal(err)
	}
	if want := []string{"handler"}; !slices.Equal(events, want) {
		t.Fatalf("a call without a principal: events %v, want %v", events, want)
	}
}
