package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
)

// ProseID is the id of the built-in agent.
const ProseID = "prose"

// Prose is the built-in agent: it explains a run's pending exception and
// resolves it when a reply gives what it needs, without any model. It is
// deterministic: the same conversation gets the same answer, and a reply it
// cannot read gets an account of what it needs rather than a guess.
type Prose struct{}

// ID implements Agent.
func (Prose) ID() string { return ProseID }

// Respond implements Agent.
func (Prose) Respond(ctx context.Context, c *Conversation, w *Writer) (string, error) {
	if c.Exception == nil || c.Exception.State != store.ExceptionPending {
		msg := fmt.Sprintf("This run is %s and is not waiting for guidance, so there is nothing for me to resolve.", strings.ReplaceAll(string(c.Run.State), "_", " "))
		if c.Exception != nil {
			msg = fmt.Sprintf("The exception %q is %s, so there is nothing for me to resolve.", c.Exception.ID, strings.ToLower(string(c.Exception.State)))
		}
		return w.StreamText(ctx, msg)
	}
	x := c.Details
	if x == nil {
		x = &lang.Exception{}
	}
	r := understand(c.Text(), x)
	var guidance engine.Guidance
	var doing string
	switch r.kind {
	case intentExplain:
		return w.StreamText(ctx, explain(c, x))
	case intentUnknown:
		return w.StreamText(ctx, "I could not read that as guidance. "+needs(x))
	case intentSkip:
		guidance = engine.Guidance{Kind: engine.GuidanceSkip}
		doing = "I will skip the statement" + statementRef(c) + " and let the run go on."
	case intentRetry:
		guidance = engine.Guidance{Kind: engine.GuidanceRetry}
		doing = "I will run the statement" + statementRef(c) + " again."
	case intentReplace:
		if _, err := lang.Parse(r.code); err != nil {
			return w.StreamText(ctx, "That code does not parse: "+err.Error()+". "+needs(x))
		}
		guidance = engine.Guidance{Kind: engine.GuidanceReplaceStep, Code: r.code}
		doing = "I will run your code instead of the statement" + statementRef(c) + "."
	case intentAnswer:
		if _, err := protovalue.ToProto(r.value); err != nil {
			return w.StreamText(ctx, "I could not use that answer: "+err.Error()+". "+needs(x))
		}
		guidance = engine.Guidance{Kind: engine.GuidanceAnswer, Answer: r.value}
		doing = fmt.Sprintf("I will answer %q with %s.", x.Question, plain(r.value))
	case intentValue:
		fact := x.Fact
		if r.fact != "" && (fact == "" || sameFact(r.fact, fact)) {
			if fact == "" {
				fact = r.fact
			}
		} else if r.fact != "" {
			return w.StreamText(ctx, fmt.Sprintf("You gave a value for %s, but the run needs %s. %s", r.fact, x.Fact, needs(x)))
		}
		if fact == "" {
			return w.StreamText(ctx, "I could not tell which fact that value is for. "+needs(x))
		}
		if _, err := protovalue.ToProto(r.value); err != nil {
			return w.StreamText(ctx, "I could not use that value: "+err.Error()+". "+needs(x))
		}
		guidance = engine.Guidance{Kind: engine.GuidanceProvideValues, Values: map[string]lang.Value{fact: r.value}}
		doing = fmt.Sprintf("I will provide %s = %s and let the run go on.", fact, plain(r.value))
	}
	if _, err := w.StreamText(ctx, doing); err != nil {
		return "", err
	}
	_, err := c.Tools.Resolve(ctx, guidance)
	if err != nil {
		var g *engine.GuidanceError
		switch {
		case errors.As(err, &g):
			return w.StreamText(ctx, "That did not fit the exception: "+g.Msg+". "+needs(x))
		case errors.Is(err, store.ErrFailedPrecondition):
			return w.StreamText(ctx, "The exception was resolved or archived meanwhile, so I left it as it is.")
		case ctx.Err() != nil:
			return "", ctx.Err()
		}
		return "", err
	}
	return "Resolved the exception: " + strings.TrimPrefix(strings.TrimPrefix(doing, "I will "), "I "), nil
}

func statementRef(c *Conversation) string {
	if c.Statement == "" {
		return ""
	}
	return fmt.Sprintf(" `%s` (line %d)", c.Statement, c.Line)
}

// explain describes the exception: where, what it needs, how to answer.
func explain(c *Conversation, x *lang.Exception) string {
	var b strings.Builder
	if c.Statement != "" {
		fmt.Fprintf(&b, "The run stopped at line %d, `%s` (bytes %d–%d of step %d). ", c.Line, c.Statement,
			c.Exception.Location.Start, c.Exception.Location.End, c.Exception.Step+1)
	} else {
		b.WriteString("The run stopped and waits for guidance. ")
	}
	msg := c.Exception.Message
	if msg == "" {
		msg = x.Message
	}
	if msg != "" {
		b.WriteString(strings.TrimRight(msg, ".") + ". ")
	}
	if len(x.Failed) > 0 {
		b.WriteString("These checks failed: " + strings.Join(x.Failed, "; ") + ". ")
	}
	if facts, omitted, ok := runFacts(c); ok && len(facts)+omitted > 0 {
		parts := make([]string, 0, len(facts))
		for _, f := range facts {
			parts = append(parts, f.Name+" = "+string(f.Value))
		}
		b.WriteString("The run's facts then: " + strings.Join(parts, "; "))
		if omitted > 0 {
			fmt.Fprintf(&b, " (and %d more, too large to show)", omitted)
		}
		b.WriteString(". ")
	}
	b.WriteString(needs(x))
	return b.String()
}

// needs says what reply resolves the exception.
func needs(x *lang.Exception) string {
	const alt = ` You can also say "skip" to skip the statement, "retry" to run it again, or "replace it with: <code>" to run other Prose code instead.`
	switch {
	case x.Question != "" && len(x.Choices) > 0:
		var cs []string
		for _, c := range x.Choices {
			cs = append(cs, plain(c))
		}
		return fmt.Sprintf("It asks: %s Reply with one of: %s.", ensureStop(x.Question), strings.Join(cs, ", ")) + alt
	case x.Question != "":
		return fmt.Sprintf("It asks: %s Reply with the answer.", ensureStop(x.Question)) + alt
	case x.Fact != "":
		return fmt.Sprintf("It needs a value for %s. Reply with the value, for example \"%s is 120.50\" or just \"120.50\" (numbers are kept exactly; put text in quotes; dates as YYYY-MM-DD).", x.Fact, x.Fact) + alt
	case x.Group == lang.GroupMissingValues:
		return "Reply with the values to use, as \"the <fact> is <value>\"." + alt
	}
	return `Reply "skip" to skip the statement, "retry" to run it again, or "replace it with: <code>" to run other Prose code instead.`
}

func ensureStop(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "?") || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
