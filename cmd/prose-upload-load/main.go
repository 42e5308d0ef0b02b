// Command prose-upload-load measures what concurrent file uploads cost a
// prose serve process: it sends --concurrency uploads of --size bytes at
// once to POST /api/v1/organizations/{o}/files:upload, counts the answers
// by HTTP status, and reports the server's peak resident memory (VmHWM of
// /proc/{pid}/status, Linux) before and after.
//
//	prose init --json --data /tmp/u > /tmp/u.json
//	prose serve --data /tmp/u --addr 127.0.0.1:8090 & echo $! > /tmp/u.pid
//	prose-upload-load --addr 127.0.0.1:8090 --init /tmp/u.json --pid $(cat /tmp/u.pid) \
//	    --concurrency 70 --size 33554432
//
// The bodies are generated while they are sent (the load generator holds
// no copy of them), with a Content-Length.
//
// With --grpc the uploads are native gRPC calls of
// prose.platform.v1.FileService/UploadFile on --conns connections (the
// request is encoded once and its bytes shared by every call), counted by
// gRPC code and ErrorInfo reason. --grpc-method update-workspace sends
// WorkspaceService/UpdateWorkspace calls with a title of --size bytes
// instead (a method that is not an upload).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "host:port of prose serve")
	initFile := flag.String("init", "", "the output of `prose init --json` (api_key and organization)")
	pid := flag.Int("pid", 0, "process id of prose serve, to read its peak memory (0: not reported)")
	conc := flag.Int("concurrency", 70, "uploads sent at once")
	rounds := flag.Int("rounds", 1, "how many times to send --concurrency uploads")
	size := flag.Int64("size", 32<<20, "bytes per upload")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	useGRPC := flag.Bool("grpc", false, "send native gRPC UploadFile calls instead of HTTP uploads")
	conns := flag.Int("conns", 10, "gRPC connections the calls are spread over (--grpc)")
	grpcMethod := flag.String("grpc-method", "upload", "with --grpc: upload (FileService/UploadFile) or update-workspace (WorkspaceService/UpdateWorkspace with a title of --size bytes: a flood of large messages to a method that is not an upload)")
	flag.Parse()
	if *initFile == "" {
		fatal(errors.New("give --init"))
	}
	data, err := os.ReadFile(*initFile)
	if err != nil {
		fatal(err)
	}
	var ini struct {
		APIKey       string `json:"api_key"`
		Organization string `json:"organization"`
		Workspace    string `json:"workspace"`
	}
	if err := json.Unmarshal(data, &ini); err != nil {
		fatal(fmt.Errorf("%s: %w", *initFile, err))
	}
	url := "http://" + *addr + "/api/v1/" + ini.Organization + "/files:upload?filename=load.bin"
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}}
	send := func() string { return upload(ctx, hc, url, ini.APIKey, *size) }
	if *useGRPC {
		g, err := newGRPCUploader(*addr, ini.APIKey, ini.Organization, ini.Workspace, *grpcMethod, *size, *conns)
		if err != nil {
			fatal(err)
		}
		defer g.close()
		var next atomic.Int64
		send = func() string { return g.upload(ctx, int(next.Add(1))) }
	}

	before := peakRSS(*pid)
	start := time.Now()
	var mu sync.Mutex
	statuses := map[string]int{}
	for range *rounds {
		var wg sync.WaitGroup
		for range *conc {
			wg.Go(func() {
				st := send()
				mu.Lock()
				statuses[st]++
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	after := peakRSS(*pid)

	keys := make([]string, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("uploads: %d × %d rounds of %d MiB in %s\n", *conc, *rounds, *size>>20, elapsed.Round(time.Millisecond))
	for _, k := range keys {
		fmt.Printf("  %s: %d\n", k, statuses[k])
	}
	if *pid != 0 {
		fmt.Printf("server peak RSS (VmHWM): before %d MiB, after %d MiB\n", before>>20, after>>20)
	}
}

func upload(ctx context.Context, hc *http.Client, url, key string, size int64) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, io.LimitReader(pattern{}, size))
	if err != nil {
		return "error: " + err.Error()
	}
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return "transport error"
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		return fmt.Sprintf("HTTP %d (Retry-After %s)", resp.StatusCode, ra)
	}
	return fmt.Sprintf("HTTP %d", resp.StatusCode)
}

// pattern is an endless reader of non-zero bytes.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	return len(p), nil
}

// peakRSS reads VmHWM (bytes) of a process; 0 when unknown.
func peakRSS(pid int) int64 {
	if pid == 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "prose-upload-load:", err)
	os.Exit(1)
}
