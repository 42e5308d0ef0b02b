package admission_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/server/transport/admission"
	"github.com/proserun/prose/server/transport/limits"
)

// TestAdmission: a bound of one admits one large request at a time, refuses
// the next at once with UPLOADS_BUSY, frees the slot when the first call's
// context ends, and lets every other method through; a nil Admission (no
// bound) admits everything.
func TestAdmission(t *testing.T) {
	a := admission.New(1)
	upload := &tap.Info{FullMethodName: limits.LargeRequestMethods[0]}
	first, cancel := context.WithCancel(context.Background())
	if _, err := a.Tap(first, upload); err != nil {
		t.Fatalf("first upload: %v", err)
	}
	_, err := a.Tap(context.Background(), upload)
	if status.Code(err) != codes.ResourceExhausted || transport.ReasonOf(err) != transport.ReasonUploadsBusy {
		t.Fatalf("second upload: %v, want RESOURCE_EXHAUSTED UPLOADS_BUSY", err)
	}
	if _, err := a.Tap(context.Background(), &tap.Info{FullMethodName: "/prose.platform.v1.FileService/GetFile"}); err != nil {
		t.Errorf("another method: %v", err)
	}
	cancel()
	// The slot is freed by context.AfterFunc, on its own goroutine: wait
	// for it by trying again until admitted (no sleep, no timed assertion).
	for {
		ctx, done := context.WithCancel(context.Background())
		_, err := a.Tap(ctx, upload)
		done()
		if err == nil {
			break
		}
		runtime.Gosched()
	}
	var none *admission.Admission
	if _, err := none.Tap(context.Background(), upload); err != nil || len(none.ServerOptions()) != 0 || admission.New(-1) != nil {
		t.Errorf("no bound: %v", err)
	}
}

// TestAdmissionPerTenant: with 3 slots and a share of 2, tenant a's third
// call is refused while a slot of the server is free, and tenant b's call
// is admitted; once the server's slots are all taken, b's next is refused
// too. An ended call frees its tenant's slot and the server's.
func TestAdmissionPerTenant(t *testing.T) {
	a := admission.New(3).WithTenants(2, func(_ context.Context, md metadata.MD) string {
		return strings.Join(md.Get("tenant"), "")
	})
	upload := func(tenant string) (context.CancelFunc, error) {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := a.Tap(ctx, &tap.Info{FullMethodName: limits.LargeRequestMethods[0], Header: metadata.Pairs("tenant", tenant)})
		if err != nil {
			cancel()
		}
		return cancel, err
	}
	busy := func(err error) bool {
		return status.Code(err) == codes.ResourceExhausted && transport.ReasonOf(err) == transport.ReasonUploadsBusy
	}
	a1, err := upload("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := upload("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := upload("a"); !busy(err) || !strings.Contains(status.Convert(err).Message(), "share") {
		t.Fatalf("a's third call: %v, want UPLOADS_BUSY (its share)", err)
	}
	if _, err := upload("b"); err != nil {
		t.Fatalf("b's call while a holds its share: %v", err)
	}
	if _, err := upload("b"); !busy(err) {
		t.Fatalf("b's call while the server's slots are taken: %v", err)
	}
	a1()
	for { // freed by context.AfterFunc, on its own goroutine
		if _, err := upload("a"); err == nil {
			break
		}
		runtime.Gosched()
	}
	if admission.New(-1).WithTenants(1, func(context.Context, metadata.MD) string { return "" }) != nil {
		t.Error("no bound with tenants is still no bound")
	}
}
