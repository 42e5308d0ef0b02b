package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
)

// TestModelToolArgs reads the five kinds of guidance the model may give,
// and refuses what does not make guidance with a reason for the model.
func TestModelToolArgs(t *testing.T) {
	for _, c := range []struct {
		args    string
		kind    engine.GuidanceKind
		check   func(engine.Guidance) bool
		wantErr string
	}{
		{args: `{"kind":"provide_values","values":{"the invoice total":120.50}}`, kind: engine.GuidanceProvideValues,
			check: func(g engine.Guidance) bool { return plain(g.Values["the invoice total"]) == "120.50" }},
		{args: `{"kind":"answer","answer":"approve"}`, kind: engine.GuidanceAnswer,
			check: func(g engine.Guidance) bool { return lang.Equal(g.Answer, lang.Text("approve")) }},
		{args: `{"kind":"skip"}`, kind: engine.GuidanceSkip},
		{args: `{"kind":"retry"}`, kind: engine.GuidanceRetry},
		{args: `{"kind":"replace_step","code":"the invoice total is 10"}`, kind: engine.GuidanceReplaceStep,
			check: func(g engine.Guidance) bool { return g.Code == "the invoice total is 10" }},
		{args: `{"kind":"replace_step","code":"the the the ("}`, wantErr: "does not parse"},
		{args: `{"kind":"replace_step"}`, wantErr: "needs code"},
		{args: `{"kind":"answer"}`, wantErr: "needs answer"},
		{args: `{"kind":"provide_values"}`, wantErr: "needs values"},
		{args: `{"kind":"delete"}`, wantErr: "kind must be one of"},
		{args: `{}`, wantErr: "kind must be one of"},
	} {
		var a toolArgs
		if err := json.Unmarshal([]byte(c.args), &a); err != nil {
			t.Fatal(err)
		}
		g, err := a.guidance()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil || g.Kind != c.kind || (c.check != nil && !c.check(g)) {
			t.Errorf("%s: %+v %v", c.args, g, err)
		}
	}
}

// TestNewModel: the URL and the model are required; the defaults apply.
func TestNewModel(t *testing.T) {
	if _, err := NewModel(ModelOptions{URL: "http://x/v1"}); err == nil {
		t.Error("no model accepted")
	}
	m, err := NewModel(ModelOptions{URL: "http://x/v1", Model: "m"})
	if err != nil || m.ID() != DefaultModelID || m.o.MaxToolRounds != DefaultModelToolRounds || m.o.MaxStreamBytes != DefaultModelStreamBytes || m.o.RequestTimeout != DefaultModelRequestTimeout {
		t.Errorf("%v %+v", err, m)
	}
}
