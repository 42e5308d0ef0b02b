package sqlstore

import (
	"testing"

	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// TestGuidanceOfVersion13: every kind of guidance kept as the platform's
// ResolveExceptionRequest becomes the same persist.v1.Guidance, and the
// down migration gives the old bytes back (ids, cleared when kept, aside).
func TestGuidanceOfVersion13(t *testing.T) {
	num := &platformv1.Value{Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: 1250, Flags: 2 << 16}}}
	pnum := &persistv1.Value{Kind: &persistv1.Value_Number{Number: &persistv1.Number{Lo: 1250, Flags: 2 << 16}}}
	list := &platformv1.Value{Kind: &platformv1.Value_List{List: &platformv1.List{Items: []*platformv1.Value{num, {Kind: &platformv1.Value_Text{Text: "a"}}}}}}
	plist := &persistv1.Value{Kind: &persistv1.Value_List{List: &persistv1.List{Items: []*persistv1.Value{pnum, {Kind: &persistv1.Value_Text{Text: "a"}}}}}}
	for name, tc := range map[string]struct {
		old  *platformv1.ResolveExceptionRequest
		want *persistv1.Guidance
	}{
		"provide_values": {
			&platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_ProvideValues{ProvideValues: &platformv1.ProvideValues{
				Values: map[string]*platformv1.Value{"the total": num, "the items": list}}}},
			&persistv1.Guidance{Kind: &persistv1.Guidance_ProvideValues{ProvideValues: &persistv1.Values{
				Values: map[string]*persistv1.Value{"the total": pnum, "the items": plist}}}},
		},
		"skip":  {&platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_Skip{Skip: &platformv1.Skip{}}}, &persistv1.Guidance{Kind: &persistv1.Guidance_Skip{Skip: true}}},
		"retry": {&platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_Retry{Retry: &platformv1.Retry{}}}, &persistv1.Guidance{Kind: &persistv1.Guidance_Retry{Retry: true}}},
		"replace_step": {
			&platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_ReplaceStep{ReplaceStep: &platformv1.ReplaceStep{Code: "the x is 1"}}},
			&persistv1.Guidance{Kind: &persistv1.Guidance_ReplaceStep{ReplaceStep: "the x is 1"}},
		},
		"answer": {
			&platformv1.ResolveExceptionRequest{Guidance: &platformv1.ResolveExceptionRequest_Answer{Answer: &platformv1.Answer{Value: num}}},
			&persistv1.Guidance{Kind: &persistv1.Guidance_Answer{Answer: pnum}},
		},
		"ids kept by an older writer": {
			&platformv1.ResolveExceptionRequest{OrganizationId: "o", WorkspaceId: "w", ExceptionId: "x",
				Guidance: &platformv1.ResolveExceptionRequest_Skip{Skip: &platformv1.Skip{}}},
			&persistv1.Guidance{Kind: &persistv1.Guidance_Skip{Skip: true}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			det := proto.MarshalOptions{Deterministic: true}
			old, err := det.Marshal(tc.old)
			if err != nil {
				t.Fatal(err)
			}
			b, err := GuidanceFromV13(old)
			if err != nil {
				t.Fatal(err)
			}
			got := &persistv1.Guidance{}
			if err := proto.Unmarshal(b, got); err != nil || !proto.Equal(got, tc.want) {
				t.Fatalf("got %v (%v), want %v", got, err, tc.want)
			}
			back, err := GuidanceToV13(b)
			if err != nil {
				t.Fatal(err)
			}
			again := &platformv1.ResolveExceptionRequest{}
			if err := proto.Unmarshal(back, again); err != nil {
				t.Fatal(err)
			}
			want := proto.CloneOf(tc.old)
			want.OrganizationId, want.WorkspaceId, want.ExceptionId = "", "", ""
			if !proto.Equal(again, want) {
				t.Fatalf("down: %v, want %v", again, want)
			}
		})
	}
	for name, b := range map[string][]byte{
		"no guidance":  nil,
		"not protobuf": {0xff, 0xff, 0xff},
		"a bad value":  {0x42, 0x03, 0x0a, 0x01, 0xff}, // answer{value: truncated}
		"only the ids": {0x0a, 0x01, 'o'},
	} {
		if _, err := GuidanceFromV13(b); err == nil {
			t.Errorf("%s: converted", name)
		}
	}
}
