package limits_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/limits"
)

// TestRequestSizeError: each method's bound (file uploads above the
// others) answers RESOURCE_EXHAUSTED REQUEST_TOO_LARGE with both sizes in
// its metadata; within it, nothing.
func TestRequestSizeError(t *testing.T) {
	upload, other := limits.LargeRequestMethods[0], "/prose.platform.v1.WorkspaceService/UpdateWorkspace"
	if limits.MaxRequestBytesOf(upload) != limits.MaxRequestBytes || limits.MaxRequestBytesOf(other) != limits.MaxMessageBytes {
		t.Fatalf("bounds %d %d", limits.MaxRequestBytesOf(upload), limits.MaxRequestBytesOf(other))
	}
	if err := limits.RequestSizeError(other, limits.MaxMessageBytes); err != nil {
		t.Errorf("at the bound: %v", err)
	}
	if err := limits.RequestSizeError(upload, limits.MaxMessageBytes+1); err != nil {
		t.Errorf("an upload over the general bound: %v", err)
	}
	err := limits.RequestSizeError(other, limits.MaxMessageBytes+1)
	if status.Code(err) != codes.ResourceExhausted || transport.ReasonOf(err) != transport.ReasonRequestTooLarge {
		t.Errorf("over the bound: %v", err)
	}
}

// TestValidText: no NUL, valid UTF-8.
func TestValidText(t *testing.T) {
	for s, want := range map[string]bool{"plain": true, "": true, "a\x00b": false, "\xff": false, "é": true} {
		if limits.ValidText(s) != want {
			t.Errorf("ValidText(%q) = %v", s, !want)
		}
	}
}
