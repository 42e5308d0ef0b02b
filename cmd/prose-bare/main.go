// Command prose-bare serves the physical references of the transport
// benchmarks (BENCHMARKS.md, "Issue 13: the transport path"): what the
// machine does when a server does nothing but check the caller's
// authorization header and answer the same bytes as prose serve.
//
//   - over HTTP (--http): a bare net/http handler that refuses a request
//     without "Authorization: Bearer <key>" (401) and answers the JSON file
//     given with --workspace (as served by GET /api/v1/.../workspaces/{w});
//
//   - over gRPC (--grpc): a bare grpc-go server (no interceptor) whose
//     prose.platform.v1.WorkspaceService/GetWorkspace refuses a call without
//     that authorization metadata (UNAUTHENTICATED) and answers the same
//     workspace, decoded from the file once.
//
//     curl -s -H "Authorization: Bearer $KEY" http://127.0.0.1:18081/api/v1/organizations/$ORG/workspaces/$WSID > /tmp/ws.json
//     prose-bare --workspace /tmp/ws.json --key "$KEY" --http 127.0.0.1:18082 --grpc 127.0.0.1:18083
//
//   - with --automation and --invoke (HTTP only): also prose-load's calls,
//     answered with the bodies prose serve gave (bare.InvokeHandler): the
//     floor of `prose-load` runs/s on this machine with no database and no
//     engine (BENCHMARKS.md, "SQLite runs/s: last pass and the ceiling").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/encoding/protojson"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/bare"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "prose-bare:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("prose-bare", flag.ContinueOnError)
	file := fs.String("workspace", "", "JSON body of GET .../workspaces/{w} (required)")
	key := fs.String("key", "", "the API key callers must send as Bearer (required)")
	httpAddr := fs.String("http", "", "serve the bare HTTP handler on this address")
	grpcAddr := fs.String("grpc", "", "serve the bare gRPC server on this address")
	autoFile := fs.String("automation", "", "JSON body of POST .../automations (with --invoke: answer prose-load's calls)")
	invokeFile := fs.String("invoke", "", "JSON body of POST .../automations/{a}:invoke")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || *key == "" || (*httpAddr == "" && *grpcAddr == "") {
		return errors.New("--workspace, --key and at least one of --http, --grpc are required")
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	if (*autoFile == "") != (*invokeFile == "") {
		return errors.New("--automation and --invoke go together")
	}
	handler := bare.HTTPHandler(body, *key)
	if *invokeFile != "" {
		auto, err := os.ReadFile(*autoFile)
		if err != nil {
			return err
		}
		inv, err := os.ReadFile(*invokeFile)
		if err != nil {
			return err
		}
		handler = bare.InvokeHandler(body, auto, inv, *key)
	}
	ws := &platformv1.Workspace{}
	if err := protojson.Unmarshal(body, ws); err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 2)
	if *httpAddr != "" {
		srv := &http.Server{Addr: *httpAddr, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- srv.ListenAndServe() }()
		defer func() { _ = srv.Close() }()
	}
	if *grpcAddr != "" {
		lis, err := net.Listen("tcp", *grpcAddr)
		if err != nil {
			return err
		}
		gs := grpc.NewServer()
		bare.RegisterWorkspaces(gs, ws, *key)
		reflection.Register(gs) // for ghz; not on the measured path
		go func() { errc <- gs.Serve(lis) }()
		defer gs.Stop()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}
