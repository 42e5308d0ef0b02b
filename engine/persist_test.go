package engine_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	persistv1 "github.com/proserun/prose/gen/prose/persist/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// TestPersistValueMirrorsPlatformValue: the engine keeps the values clients
// give as persist.v1.Value by re-reading the platform Value's encoding, so
// the two must agree member by member (numbers, names, kinds, nesting). A
// change to the public Value that breaks this needs a persist.v2 and a
// migration, not a silent change of what is stored.
func TestPersistValueMirrorsPlatformValue(t *testing.T) {
	seen := map[protoreflect.FullName]bool{}
	var same func(a, b protoreflect.MessageDescriptor)
	same = func(a, b protoreflect.MessageDescriptor) {
		if a.FullName() == b.FullName() || seen[a.FullName()] {
			return // a shared well-known type, or done
		}
		seen[a.FullName()] = true
		if a.Name() != b.Name() || a.Fields().Len() != b.Fields().Len() {
			t.Errorf("%s and %s differ in name or field count", a.FullName(), b.FullName())
			return
		}
		for i := range a.Fields().Len() {
			fa := a.Fields().Get(i)
			fb := b.Fields().ByNumber(fa.Number())
			if fb == nil || fa.Name() != fb.Name() || fa.Kind() != fb.Kind() || fa.Cardinality() != fb.Cardinality() ||
				fa.IsMap() != fb.IsMap() || (fa.ContainingOneof() == nil) != (fb.ContainingOneof() == nil) {
				t.Errorf("%s: field %d (%s) is not mirrored in %s", a.FullName(), fa.Number(), fa.Name(), b.FullName())
				continue
			}
			if fa.Message() != nil {
				same(fa.Message(), fb.Message())
			}
		}
	}
	same((&platformv1.Value{}).ProtoReflect().Descriptor(), (&persistv1.Value{}).ProtoReflect().Descriptor())
	if len(seen) < 10 {
		t.Fatalf("compared %d messages: the walk stopped early", len(seen))
	}
}
