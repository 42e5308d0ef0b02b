package gateway_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/gateway"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/transport"
)

// flushRecorder counts the flushes that come after the response body
// started: each is a round trip to the HTTP/2 connection's writer.
type flushRecorder struct {
	*httptest.ResponseRecorder
	wrote        bool
	lateFlushes  int
	earlyFlushes int
}

func (r *flushRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseRecorder.Write(b)
}

func (r *flushRecorder) Flush() {
	if r.wrote {
		r.lateFlushes++
	} else {
		r.earlyFlushes++
	}
	r.ResponseRecorder.Flush()
}

// callShared makes one gRPC call through gateway.Handler (the shared
// port's handler) as net/http's HTTP/2 server hands it over.
func callShared(t *testing.T, h http.Handler, method string, in proto.Message) *flushRecorder {
	t.Helper()
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.WriteByte(0)
	_ = binary.Write(&body, binary.BigEndian, uint32(len(b)))
	body.Write(b)
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, method, &body)
	req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/2.0", 2, 0
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(rec, req)
	return rec
}

func grpcStatusOf(t *testing.T, rec *flushRecorder) codes.Code {
	t.Helper()
	v := rec.Result().Trailer.Get("Grpc-Status")
	if v == "" {
		v = rec.Result().Header.Get("Grpc-Status")
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("grpc-status %q: %v", v, err)
	}
	return codes.Code(n)
}

// A unary call's response on the shared port is written at the end of the
// call, headers, message and trailers together, not flushed after the
// message and again before the status; an error's status and a stream's
// messages are flushed as before.
func TestSharedPortUnaryResponseWrittenOnce(t *testing.T) {
	srv := transport.NewServer(transport.Options{Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry(), InsecureNoAuthorization: true, DisableReflection: true})
	legacyv2.RegisterLegacyServiceServer(srv, &fakeV2{})
	platformv1.RegisterEventServiceServer(srv, fakeEvents{})
	h := gateway.Handler(srv.GRPC, http.NotFoundHandler())

	rec := callShared(t, h, "/prose.legacy.v2.LegacyService/GetRun", &legacyv2.GetRunRequest{Id: "r-7"})
	if c := grpcStatusOf(t, rec); c != codes.OK {
		t.Fatalf("GetRun: %v (%s)", c, rec.Result().Trailer.Get("Grpc-Message"))
	}
	var run legacyv2.Run
	if b := rec.Body.Bytes(); len(b) < 5 || proto.Unmarshal(b[5:], &run) != nil || run.GetId() != "r-7" {
		t.Fatalf("GetRun answered %q", b)
	}
	if rec.lateFlushes != 0 {
		t.Errorf("unary call: %d flushes after its message, want 0 (written once at the end)", rec.lateFlushes)
	}

	rec = callShared(t, h, "/prose.legacy.v2.LegacyService/GetRun", &legacyv2.GetRunRequest{Id: "missing"})
	if c := grpcStatusOf(t, rec); c != codes.NotFound {
		t.Fatalf("GetRun missing: %v", c)
	}
	if rec.earlyFlushes == 0 {
		t.Error("unary error: its headers were not flushed before the status")
	}

	rec = callShared(t, h, "/prose.platform.v1.EventService/StreamEvents", &platformv1.StreamEventsRequest{OrganizationId: "o", WorkspaceId: "w", AutomationId: "a", AgentId: "g", RunId: "r-1"})
	if c := grpcStatusOf(t, rec); c != codes.OK {
		t.Fatalf("StreamEvents: %v", c)
	}
	if rec.lateFlushes < 2 {
		t.Errorf("stream: %d flushes after its first message, want each message flushed", rec.lateFlushes)
	}
}
