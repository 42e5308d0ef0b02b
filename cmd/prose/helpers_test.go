package main

import "testing"

// testServeConfig is a serve configuration on a fresh data directory.
func testServeConfig(t *testing.T) serveConfig {
	t.Helper()
	return serveConfig{addr: "127.0.0.1:0", data: t.TempDir(), logLevel: "error"}
}

