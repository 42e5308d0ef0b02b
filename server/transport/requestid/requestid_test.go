package requestid_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/requestid"
)

// TestRequestIDEntry: a caller's valid x-request-id is the call's id; a
// missing or invalid one is replaced by a new valid id.
func TestRequestIDEntry(t *testing.T) {
	entry := requestid.Middleware()
	if entry.Name != requestid.Name || entry.Unary == nil || entry.Stream == nil {
		t.Fatalf("entry %+v", entry)
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/x.v1.S/M"}
	for name, tc := range map[string]struct {
		incoming []string
		keep     bool
	}{
		"valid":    {[]string{"req-42"}, true},
		"invalid":  {[]string{"not a request id!"}, false},
		"missing":  {nil, false},
		"too long": {[]string{string(make([]byte, 129))}, false},
	} {
		ctx := context.Background()
		if tc.incoming != nil {
			ctx = metadata.NewIncomingContext(ctx, metadata.MD{transport.RequestIDHeader: tc.incoming})
		}
		var got string
		_, err := entry.Unary(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
			got = transport.RequestID(ctx)
			return nil, nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !requestid.Valid(got) || tc.keep && got != tc.incoming[0] || !tc.keep && tc.incoming != nil && got == tc.incoming[0] {
			t.Errorf("%s: request id %q (incoming %q)", name, got, tc.incoming)
		}
	}
}

// A request id is 1 to 128 of [A-Za-z0-9._:-]; a made one is accepted.
func TestRequestIDs(t *testing.T) {
	for id, want := range map[string]bool{
		"":                       false,
		"abc-DEF_1.2:3":          true,
		strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false,
		"has space":              false,
		"slash/no":               false,
		"é":                      false,
	} {
		if got := requestid.Valid(id); got != want {
			t.Errorf("Valid(%q) = %v, want %v", id, got, want)
		}
	}
	if id := requestid.New(); len(id) != 32 || !requestid.Valid(id) {
		t.Errorf("New() = %q", id)
	}
}
