package agent

import (
	"encoding/json"
	"strings"

	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
)

// MaxExplainFactsBytes bounds the run's facts an explanation gives (the
// explain_exception tool's "facts", the built-in agent's explanation): the
// facts' names and values as JSON, at most this many bytes; facts that do
// not fit (a large table, many facts) are left out and counted in
// "facts_omitted".
const MaxExplainFactsBytes = 8 << 10

// namedFact is one fact of the run as an explanation gives it: its name
// and its value as plain JSON.
type namedFact struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// runFacts returns the facts the run held when it raised the
// conversation's exception, read from its saved state (only while the
// exception waits for guidance: the state is then the one at the
// exception), within MaxExplainFactsBytes, and how many were left out. ok
// is false when they cannot be told (no pending exception, no state, a
// state of another program).
func runFacts(c *Conversation) (facts []namedFact, omitted int, ok bool) {
	x, r := c.Exception, c.Run
	if x == nil || x.State != store.ExceptionPending || x.RunID != r.ID || r.ExceptionID != x.ID || len(r.Checkpoint) == 0 || r.Step != x.Step {
		return nil, 0, false
	}
	code, found := codec.StepCode(r, x.Step)
	if !found {
		return nil, 0, false
	}
	prog, err := lang.Parse(code)
	if err != nil {
		return nil, 0, false
	}
	all, err := lang.StateFacts(prog, r.Checkpoint)
	if err != nil {
		return nil, 0, false
	}
	size := 2 // []
	facts = []namedFact{}
	for _, f := range all {
		v, err := lang.AppendPlain(nil, f.Value)
		if err != nil {
			continue // not a value a person gives (a procedure's, a book's handle)
		}
		name := strings.ReplaceAll(strings.TrimSpace(f.Name), "_", " ")
		if !strings.HasPrefix(strings.ToLower(name), "the ") {
			name = "the " + name
		}
		nf := namedFact{Name: name, Value: v}
		b, _ := json.Marshal(nf)
		if size+len(b)+1 > MaxExplainFactsBytes {
			omitted++
			continue
		}
		size += len(b) + 1
		facts = append(facts, nf)
	}
	return facts, omitted, true
}
