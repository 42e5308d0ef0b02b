package codec_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// mirrors checks that b mirrors a member by member (numbers, names,
// kinds, nesting, enum values), and returns how many messages it compared.
func mirrors(t *testing.T, a, b protoreflect.MessageDescriptor) int {
	t.Helper()
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
			if fb == nil || !sameField(fa, fb) {
				t.Errorf("%s: field %d (%s) is not mirrored in %s", a.FullName(), fa.Number(), fa.Name(), b.FullName())
				continue
			}
			if fa.IsMap() {
				fa, fb = fa.MapValue(), fb.MapValue()
			}
			if fa.Message() != nil {
				same(fa.Message(), fb.Message())
			}
			if fa.Enum() != nil && fb.Enum() != nil {
				sameEnum(t, fa.Enum(), fb.Enum())
			}
		}
	}
	same(a, b)
	return len(seen)
}

// sameField: the same name, kind and shape; an enum of the platform may be
// kept as its number (int32), which has the same encoding.
func sameField(fa, fb protoreflect.FieldDescriptor) bool {
	kind := fa.Kind() == fb.Kind() || fa.Kind() == protoreflect.EnumKind && fb.Kind() == protoreflect.Int32Kind
	return fa.Name() == fb.Name() && kind && fa.Cardinality() == fb.Cardinality() &&
		fa.IsMap() == fb.IsMap() && (fa.ContainingOneof() == nil) == (fb.ContainingOneof() == nil)
}

func sameEnum(t *testing.T, a, b protoreflect.EnumDescriptor) {
	t.Helper()
	if a.FullName() == b.FullName() {
		return
	}
	if a.Values().Len() != b.Values().Len() {
		t.Errorf("%s and %s differ in value count", a.FullName(), b.FullName())
		return
	}
	for i := range a.Values().Len() {
		va := a.Values().Get(i)
		if vb := b.Values().ByNumber(va.Number()); vb == nil || vb.Name() != va.Name() {
			t.Errorf("%s: value %s is not mirrored in %s", a.FullName(), va.Name(), b.FullName())
		}
	}
}

// TestPersistValueMirrorsPlatformValue: the codec keeps the values clients
// give as persist.v1.Value (and the scheduler schedules as
// persist.v1.ScheduleConfig) by re-reading the platform's encoding, so
// the two must agree member by member (numbers, names, kinds, nesting). A
// change to the public Value that breaks this needs a persist.v2 and a
// migration, not a silent change of what is stored.
func TestPersistValueMirrorsPlatformValue(t *testing.T) {
	if n := mirrors(t, (&platformv1.Value{}).ProtoReflect().Descriptor(), (&persistv1.Value{}).ProtoReflect().Descriptor()); n < 10 {
		t.Fatalf("compared %d messages: the walk stopped early", n)
	}
	// Schedules are kept as persist.v1.ScheduleConfig (schedule.EncodeConfig).
	if n := mirrors(t, (&platformv1.ScheduleConfig{}).ProtoReflect().Descriptor(), (&persistv1.ScheduleConfig{}).ProtoReflect().Descriptor()); n < 9 {
		t.Fatalf("compared %d schedule messages: the walk stopped early", n)
	}
}

// TestPersistMirrorsPlatform: the codec converts an event's
// payload member, an automation's details and a trigger's
// configurations, by re-reading the member's encoding (as for Value), so
// each member of persist.v1.Event, AutomationDetails and TriggerConfig has
// a platform field of the same name (in Event, Automation and
// TriggerInstance) whose type it mirrors.
func TestPersistMirrorsPlatform(t *testing.T) {
	for _, tc := range []struct {
		platform, persist protoreflect.MessageDescriptor
		min               int
	}{
		{(&platformv1.Event{}).ProtoReflect().Descriptor(), (&persistv1.Event{}).ProtoReflect().Descriptor(), 11},
		{(&platformv1.Automation{}).ProtoReflect().Descriptor(), (&persistv1.AutomationDetails{}).ProtoReflect().Descriptor(), 20},
		{(&platformv1.TriggerInstance{}).ProtoReflect().Descriptor(), (&persistv1.TriggerConfig{}).ProtoReflect().Descriptor(), 15},
	} {
		n := 0
		for i := range tc.persist.Fields().Len() {
			fb := tc.persist.Fields().Get(i)
			fa := tc.platform.Fields().ByName(fb.Name())
			if fa == nil || !sameField(fa, fb) {
				t.Errorf("%s: %s has no like field in %s", tc.persist.FullName(), fb.Name(), tc.platform.FullName())
				continue
			}
			if fa.IsMap() {
				fa, fb = fa.MapValue(), fb.MapValue()
			}
			if fa.Message() != nil {
				n += mirrors(t, fa.Message(), fb.Message())
			}
			if fa.Enum() != nil && fb.Enum() != nil {
				sameEnum(t, fa.Enum(), fb.Enum())
			}
		}
		if n < tc.min {
			t.Errorf("%s: compared %d messages, want at least %d", tc.persist.FullName(), n, tc.min)
		}
	}
}
