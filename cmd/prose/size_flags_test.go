package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestServeRefusesSizeOutOfRange: a size flag out of its range stops
// prose serve at start, naming the flag and the range (the sizes
// themselves are tested in server/sizes_test.go).
func TestServeRefusesSizeOutOfRange(t *testing.T) {
	var stderr strings.Builder
	if code := serveCmd(context.Background(), []string{"--data", t.TempDir(), "--max-title-bytes", "1MiB"}, nil, io.Discard, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "--max-title-bytes 1048576: must be between 64 and 65536 bytes") {
		t.Errorf("serve --max-title-bytes 1MiB: %d %s", code, stderr.String())
	}
}
