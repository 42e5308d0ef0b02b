package engine_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
)

// GuidanceOf takes the codec's reading of API guidance into the engine's
// Guidance, and Resolution gives it back: every kind survives the trip,
// and a reading that failed is unreadable guidance.
func TestGuidanceOfAndBack(t *testing.T) {
	for _, res := range []lang.Resolution{
		{Kind: lang.ProvideValues, Values: map[string]lang.Value{"the total": lang.Int(3)}},
		{Kind: lang.ProvideValues, Expressions: map[string]string{"the total": "1 + 2"}},
		{Kind: lang.Skip},
		{Kind: lang.Retry},
		{Kind: lang.ReplaceStep, Code: "say 1"},
		{Kind: lang.Answer, Answer: lang.Text("yes")},
	} {
		back, err := engine.GuidanceOf(res, nil).Resolution()
		if err != nil || !reflect.DeepEqual(back, res) {
			t.Errorf("%+v came back as %+v, %v", res, back, err)
		}
	}
	why := errors.New("a value the language cannot hold")
	g := engine.GuidanceOf(lang.Resolution{Kind: lang.Skip}, why)
	if !errors.Is(g.Unreadable, why) || g.Kind != engine.GuidanceNone {
		t.Fatalf("a failed reading made %+v", g)
	}
	if _, err := g.Resolution(); !errors.Is(err, why) {
		t.Fatalf("unreadable guidance resolved: %v", err)
	}
}
