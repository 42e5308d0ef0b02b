package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/proserun/prose/gen/openapi"
	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport/chain"
	"github.com/proserun/prose/store"
)

// grpcOnlyOptions are the gRPC-only server's own options (nil: no
// --grpc-addr): the ports' TLS as its transport credentials.
func grpcOnlyOptions(cfg Config) *chain.GRPCOnlyOptions {
	if cfg.GRPCAddr == "" {
		return nil
	}
	o := &chain.GRPCOnlyOptions{HandshakeTimeout: cfg.GRPCHandshakeTimeout}
	if cfg.TLSConfig != nil {
		o.ServerOptions = append(o.ServerOptions, grpc.Creds(credentials.NewTLS(cfg.TLSConfig)))
	}
	return o
}

// tracerOf is the engine's tracer of tp (nil: tracing off).
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer("github.com/proserun/prose/internal/engine")
}

// callIDBooks gives each external book call the engine's call id (see
// engine.CallID), so a book can recognise a call repeated after a crash.
type callIDBooks struct{ *books.RunBooks }

func (b callIDBooks) Call(ctx context.Context, p lang.BookProcedure, in map[string]lang.Value) (map[string]lang.Value, error) {
	rb := *b.RunBooks
	id := engine.CallID(ctx)
	rb.CallID = func(lang.BookProcedure, map[string]lang.Value) string { return id }
	return rb.Call(ctx, p, in)
}

// registerBookFile registers the books of a --books file, each in the
// workspace its entry names.
func registerBookFile(ctx context.Context, reg *books.Registry, path string) error {
	return RegisterBooks(ctx, reg, path, func(name string) (books.Workspace, error) {
		org, ws, ok := names.ParseWorkspace(name)
		if !ok {
			return books.Workspace{}, fmt.Errorf("workspace %q is not organizations/{o}/workspaces/{w}", name)
		}
		return books.Workspace{OrganizationID: org, WorkspaceID: ws}, nil
	})
}

// RegisterBooks registers the books of a JSON file of entries
// [{"workspace": …, "book": {…}}] (the format of serve's --books, which
// prose run reads too), each in the workspace where returns for the
// entry's workspace.
func RegisterBooks(ctx context.Context, reg *books.Registry, path string, where func(string) (books.Workspace, error)) error {
	data, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the file on the command line
	if err != nil {
		return err
	}
	var entries []struct {
		Workspace string          `json:"workspace"`
		Book      json.RawMessage `json:"book"`
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		return err
	}
	for i, e := range entries {
		ws, err := where(e.Workspace)
		if err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		b := &bookv1.Book{}
		if err := protojson.Unmarshal(e.Book, b); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if _, err := reg.Register(ctx, ws, b, ""); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}

// secretKeyring returns the keys that seal connection credentials: those of
// the file, else of $PROSE_SECRET_KEYS, else the key the store keeps (made
// now if this is the database's first start).
func secretKeyring(ctx context.Context, file string, st store.SecretKeys) (*books.Keyring, error) {
	src := os.Getenv("PROSE_SECRET_KEYS")
	if file != "" {
		b, err := os.ReadFile(file) //nolint:gosec // G304: the operator names the file on the command line
		if err != nil {
			return nil, err
		}
		src = strings.ReplaceAll(string(b), "\n", ",")
	}
	if strings.TrimSpace(src) != "" {
		keys, err := books.ParseSecretKeys(src)
		if err != nil {
			return nil, err
		}
		return books.NewKeyring(keys...)
	}
	candidate, err := books.NewSecretKey()
	if err != nil {
		return nil, err
	}
	key, err := st.EnsureSecretKey(ctx, candidate)
	if err != nil {
		return nil, err
	}
	return books.NewKeyring(key)
}

// constrainedOpenAPI is the generated OpenAPI document with the protos'
// protovalidate rules written in (openapi.WithConstraints) and the fields
// beyond the reference marked (openapi.WithExtensions), made once.
var constrainedOpenAPI = sync.OnceValues(func() ([]byte, error) {
	doc, _, err := openapi.WithConstraints(openapi.JSON, protoregistry.GlobalFiles)
	if err != nil {
		return nil, err
	}
	return openapi.WithExtensions(doc)
})
