package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
)

// The server the examples talk to: `prose serve` built from this module and
// started by TestMain on a fresh data directory (it prints its address, the
// first API key and the first workspace).
var (
	address   string
	apiKey    string
	workspace string
)

func TestMain(m *testing.M) {
	os.Exit(runWithServer(m))
}

var (
	keyRE       = regexp.MustCompile(`api key:\s+(prose_\S+)`)
	workspaceRE = regexp.MustCompile(`workspace:\s+(organizations/\S+)`)
)

func runWithServer(m *testing.M) int {
	dir, err := os.MkdirTemp("", "prose-client-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "prose")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/prose").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build prose: %v\n%s", err, out)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--log-level", "info")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if m := keyRE.FindStringSubmatch(line); m != nil {
				apiKey = m[1]
			}
			if m := workspaceRE.FindStringSubmatch(line); m != nil && workspace == "" {
				workspace = m[1]
			}
			var rec struct{ Msg, Addr string }
			if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" {
				address = rec.Addr
				ready <- nil
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		select {
		case ready <- fmt.Errorf("prose serve ended before serving: %w", sc.Err()):
		default:
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case <-time.After(testtime.Limit(testtime.Wait)):
		fmt.Fprintf(os.Stderr, "prose serve did not start within %v\n", testtime.Limit(testtime.Wait))
		return 1
	}
	if apiKey == "" || workspace == "" {
		fmt.Fprintln(os.Stderr, "prose serve printed no key or workspace")
		return 1
	}
	return m.Run()
}
