package codec_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
)

func value(t *testing.T, v lang.Value) *platformv1.Value {
	t.Helper()
	p, err := protovalue.ToProto(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Guidance read from a resolve request is the guidance kept for the run
// and shown in its history, and renders back as the same request.
func TestGuidanceRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *platformv1.ResolveExceptionRequest
		view string
	}{
		{"values", &platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_ProvideValues{ProvideValues: &platformv1.ProvideValues{
			Values: map[string]*platformv1.Value{"the total": value(t, lang.Int(12)), "the note": value(t, lang.Text("paid"))},
		}}}, "provide_values"},
		{"skip", &platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_Skip{Skip: &platformv1.Skip{}}}, "skip"},
		{"retry", &platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_Retry{Retry: &platformv1.Retry{}}}, "retry"},
		{"replace", &platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_ReplaceStep{ReplaceStep: &platformv1.ReplaceStep{Code: "say 1"}}}, "replace_step"},
		{"answer", &platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_Answer{Answer: &platformv1.Answer{Value: value(t, lang.Text("yes"))}}}, "answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := codec.ResolveGuidance(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := codec.EncodeGuidance(res)
			if err != nil {
				t.Fatal(err)
			}
			kept, err := codec.DecodeGuidance(b)
			if err != nil {
				t.Fatal(err)
			}
			back, err := codec.ResolveRequest(kept)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, tc.req) {
				t.Fatalf("kept and rendered back as %v, want %v", back, tc.req)
			}
			view, err := codec.DecodeGuidanceView(b)
			if err != nil {
				t.Fatal(err)
			}
			if view.Kind != tc.view {
				t.Fatalf("shown as %q, want %q", view.Kind, tc.view)
			}
			if want := tc.req.GetProvideValues().GetValues(); want != nil && !proto.Equal(&platformv1.ProvideValues{Values: view.Values}, &platformv1.ProvideValues{Values: want}) {
				t.Fatalf("shown values %v, want %v", view.Values, want)
			}
		})
	}
}

// A guide entry's guidance reads as a resolve request's does, expressions
// included; guidance without a kind, or with a value the language cannot
// hold, is an error (the engine reports it as unreadable).
func TestGuideEntryGuidance(t *testing.T) {
	res, err := codec.GuideEntryGuidance(&platformv1.GuideEntryGuidance{Kind: &platformv1.GuideEntryGuidance_ProvideExpressions{
		ProvideExpressions: &platformv1.ProvideExpressions{Expressions: map[string]string{"the total": "the subtotal + 1"}},
	}})
	if err != nil || res.Kind != lang.ProvideValues || res.Expressions["the total"] != "the subtotal + 1" {
		t.Fatalf("read %+v, %v", res, err)
	}
	b, err := codec.EncodeGuidance(res)
	if err != nil {
		t.Fatal(err)
	}
	if kept, err := codec.DecodeGuidance(b); err != nil || kept.Expressions["the total"] != "the subtotal + 1" {
		t.Fatalf("kept %+v, %v", kept, err)
	}
	if _, err := codec.GuideEntryGuidance(&platformv1.GuideEntryGuidance{}); err == nil {
		t.Fatal("guidance without a kind read")
	}
	if _, err := codec.ResolveGuidance(&platformv1.ResolveExceptionRequest{}); err == nil {
		t.Fatal("a resolve request without guidance read")
	}
	bad := &platformv1.Value{Kind: &platformv1.Value_Number{Number: &platformv1.Number{Flags: 1}}}
	if _, err := codec.ResolveGuidance(&platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_Answer{Answer: &platformv1.Answer{Value: bad}}}); err == nil {
		t.Fatal("a number with stray flag bits read")
	}
}
