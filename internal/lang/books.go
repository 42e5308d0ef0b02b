package lang

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// BookProcedure is a procedure that a book offers to runs.
type BookProcedure struct {
	// Book and Name identify the procedure; the journal records them.
	Book string
	Name string
	// Signature is its sentence without `to`, with its outputs in
	// parentheses: "send an email to a recipient (the message id)". An input
	// is `a`/`an` and its noun; the interpreter matches call sentences
	// against it as it does for the program's own procedures.
	Signature string
}

func (p BookProcedure) key() string { return p.Book + "/" + p.Name }

// Books gives a run the procedures of its books. The run engine's book
// registry implements it.
type Books interface {
	// Lookup returns the procedures whose signatures may match a sentence
	// (candidates; the interpreter does the matching, in the order given).
	// An error (the books could not be read) raises an internal_error
	// exception at the statement, which a retry runs again; when ctx has
	// ended, the run stops before the statement instead.
	Lookup(ctx context.Context, sentence string) ([]BookProcedure, error)
	// Call runs a procedure with its inputs (by noun: "recipient", and the
	// facts of the call's where/with block, by name without "the") and
	// returns its outputs by name ("message id"). An error becomes a
	// user_system_error exception; the run may retry it.
	Call(ctx context.Context, proc BookProcedure, inputs map[string]Value) (map[string]Value, error)
}

// bookMatch is a book procedure that matches a call's sentence.
type bookMatch struct {
	proc  BookProcedure
	sig   []sigElem
	outs  []string
	binds []binding
	std   *stdProc // a procedure of the standard library (no book)
}

// matchBook finds the first book procedure whose signature matches the
// sentence of the statement's call. An error is the books' lookup failing
// (see Books.Lookup); it is not remembered.
func (m *machine) matchBook(s *stmt) (bookMatch, bool, error) {
	c := s.call
	if c == nil {
		return bookMatch{}, false, nil
	}
	// A run's books do not change while it runs: a sentence is looked up
	// once (a `print` in a loop does not ask the books again and again).
	if bm, ok := m.bookMatches[c]; ok {
		return bm, bm.sig != nil, nil
	}
	var bm bookMatch
	var ok bool
	if m.opts.Books != nil {
		var err error
		if bm, ok, err = m.lookupBook(s); err != nil {
			return bookMatch{}, false, err
		}
	}
	if !ok {
		// a book's procedure wins over the standard library's
		bm, ok = m.matchStd(s)
	}
	if m.bookMatches == nil {
		m.bookMatches = map[*callStmt]bookMatch{}
	}
	m.bookMatches[c] = bm
	return bm, ok, nil
}

func (m *machine) lookupBook(s *stmt) (bookMatch, bool, error) {
	c := s.call
	procs, err := m.opts.Books.Lookup(m.ctx, c.sentence)
	if err != nil {
		if m.ctx.Err() != nil {
			return bookMatch{}, false, errCancelled
		}
		return bookMatch{}, false, internalErr("could not look up the books for %q: %v", c.sentence, err)
	}
	for _, proc := range procs {
		lx := &lexer{src: proc.Signature}
		ln, err := lx.line(0, len(proc.Signature), 1)
		if err != nil || ln == nil {
			continue
		}
		toks := ln.toks
		if len(toks) > 0 && toks[0].is("to") {
			toks = toks[1:]
		}
		sig, outs, err := parseSignature(toks)
		if err != nil {
			continue
		}
		p := &parser{lx: &lexer{src: m.srcOf(s)}, syms: m.syms}
		if binds, ok := matchSignature(p, sig, c.toks, c.args != nil); ok {
			return bookMatch{proc: proc, sig: sig, outs: outs, binds: binds}, true, nil
		}
	}
	if c.bare != nil {
		// `run send the report`: the book procedure of the rest
		bare := &stmt{op: s.op, span: s.span, text: s.text, call: &callStmt{toks: c.bare, sentence: tokText(c.bare), args: c.args, run: c.run}}
		return m.lookupBook(bare)
	}
	return bookMatch{}, false, nil
}

// tokText is the words of tokens as written, one space apart.
func tokText(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.raw
	}
	return strings.Join(parts, " ")
}

// bookCall matches a sentence against the books and calls the procedure,
// or takes its result from the journal when the run already made the call.
func (m *machine) bookCall(s *stmt, hasArgs bool) error {
	c := s.call
	bm, ok, err := m.matchBook(s)
	if err != nil {
		return err
	}
	if !ok {
		return m.unknown(s)
	}
	inputs, err := m.callInputs(c, bm, hasArgs)
	if err != nil {
		return err
	}
	var result Value
	if bm.std != nil {
		if result, err = bm.std.fn(m, inputs); err != nil {
			return err
		}
		if bm.std.keepsInput {
			if t, ok := inputs["text"]; ok && isInput(t) {
				// the parts of an input's text came from outside too
				result = inputText(result)
			}
		}
	} else if result, err = m.bookResult(bm, inputs, c.sentence); err != nil {
		return err
	}
	if hasArgs {
		m.pop()
	}
	if bm.std != nil {
		if err := m.writeBack(bm, result); err != nil {
			return err
		}
	}
	return m.deliver(result)
}

// callInputs are the inputs of a call to a book or standard procedure:
// the facts of its argument block (the top frame, when hasArgs) and the
// values the sentence binds to the signature's inputs.
func (m *machine) callInputs(c *callStmt, bm bookMatch, hasArgs bool) (map[string]Value, error) {
	var err error
	sig, binds := bm.sig, bm.binds
	inputs := map[string]Value{}
	if hasArgs {
		for slot, v := range m.cur.vals {
			if slot == aboveSlot || v.k == kindUnset {
				continue
			}
			name := m.syms.name(slot)
			if c.run && name == "procedure" {
				continue // what a started run runs, not its input
			}
			if v.k == kindAlias {
				if v, err = m.deref(v, name); err != nil {
					continue
				}
			}
			if inputs[name], err = m.clone(v); err != nil {
				return nil, err
			}
		}
	}
	for _, b := range binds {
		v, err := b.x.eval(m)
		if err != nil {
			if (b.soft || bm.std != nil && bm.std.mutates == strings.Join(sig[b.elem].param, " ")) && isMissing(err) {
				continue
			}
			return nil, err
		}
		if inputs[strings.Join(sig[b.elem].param, " ")], err = m.clone(v); err != nil {
			return nil, err
		}
	}
	return inputs, nil
}

// bookResult calls a book procedure (or reads its result from the
// journal) and makes its outputs one value: the output, or a dictionary
// of them.
func (m *machine) bookResult(bm bookMatch, inputs map[string]Value, sentence string) (Value, error) {
	outs := bm.outs
	outputs, err := m.callJournaled(bm.proc, inputs, sentence)
	if err != nil {
		return Value{}, err
	}
	var result Value
	switch {
	case len(outs) == 1:
		result = outputs[outs[0]]
		if !result.IsValid() && len(outputs) == 1 {
			for _, v := range outputs {
				result = v
			}
		}
	case len(outputs) == 1 && len(outs) == 0:
		for _, v := range outputs {
			result = v
		}
	case len(outputs) > 0:
		d := NewDictionary()
		names := outs
		if len(names) == 0 {
			for k := range outputs {
				names = append(names, k)
			}
			slices.Sort(names)
		}
		for _, k := range names {
			if v, ok := outputs[k]; ok && v.IsValid() {
				d.SetText(k, v)
			}
		}
		result = DictValue(d)
	}
	if !result.IsValid() {
		result = Null()
	}
	return result, nil
}

// errCancelled is returned by a statement that could not go on because the
// run's context ended while it waited: the run stops before the statement,
// as it does between statements.
var errCancelled = errors.New("the run's context ended")

// srcOf is the source text a statement's tokens point into.
func (m *machine) srcOf(s *stmt) string {
	for i := len(m.frames) - 1; i >= 0; i-- {
		f := &m.frames[i]
		if f.src >= 0 && f.src < len(m.patches) {
			return m.patches[f.src].code
		}
		if f.src < 0 {
			return m.prog.src
		}
	}
	return m.prog.src
}

func (m *machine) callJournaled(proc BookProcedure, inputs map[string]Value, sentence string) (map[string]Value, error) {
	return m.journaled(proc.key(), func(ctx context.Context) (map[string]Value, error) {
		return m.opts.Books.Call(ctx, proc, inputs)
	}, sentence)
}

// journaled makes an observation that a replay must not make again (a book
// call, a run started): the journal's entry when the run already made it,
// else do's outputs, journaled under key and checkpointed.
func (m *machine) journaled(key string, do func(ctx context.Context) (map[string]Value, error), sentence string) (map[string]Value, error) {
	if m.cursor < len(m.journal) {
		e := m.journal[m.cursor]
		if e.kind != "book" || e.proc != key {
			return nil, internalErr("the journal holds %s where the run calls %s", e.proc, key)
		}
		m.cursor++
		return e.outputs, nil
	}
	if err := m.journalOK(); err != nil {
		return nil, err
	}
	ctx := context.WithValue(context.WithValue(m.ctx, journalIndexKey{}, len(m.journal)), callSpanKey{}, m.currentSpan())
	if len(m.bookAnswers) > 0 {
		ctx = context.WithValue(ctx, bookAnswersKey{}, maps.Clone(m.bookAnswers))
	}
	outputs, err := do(ctx)
	var q *BookQuestion
	if errors.As(err, &q) {
		if q.ID == "" || q.Prompt == "" {
			return nil, userErr("Could not %s: the book asked a question without an id or a prompt", sentence)
		}
		return nil, &raise{group: GroupMissingValues, msg: q.Prompt, question: q.Prompt, choices: q.Choices, answerType: q.Type, bookQuestion: q.ID}
	}
	if err != nil {
		return nil, userErr("Could not %s: %v", sentence, err)
	}
	m.bookAnswers = nil
	clean := make(map[string]Value, len(outputs))
	for k, v := range outputs {
		if v.IsValid() {
			clean[FactName(k)] = v
		}
	}
	entry := journalEntry{kind: "book", proc: key, outputs: clean}
	m.journal = append(m.journal, entry)
	m.journalBytes += journalSize(entry)
	m.cursor++
	m.called = true
	if m.opts.Checkpoint != nil {
		// The state as it stood before this step, with the new journal
		// entry still to be consumed: resuming from it replays the step
		// and takes the result from the journal.
		saved := m.cursor
		m.cursor = m.stepCursor
		state, err := m.encode(nil)
		m.cursor = saved
		if err != nil {
			return nil, internalErr("%v", err)
		}
		if err := m.opts.Checkpoint(state); err != nil {
			return nil, internalErr("could not save a checkpoint: %v", err)
		}
	}
	return clean, nil
}

type journalIndexKey struct{}

type bookAnswersKey struct{}

// BookQuestion is the error Books.Call returns when the book needs an
// answer from a person or an agent before it can answer the call (the
// external book protocol's question, docs/book-protocol.md). The run raises a
// missing_values exception that asks Prompt (with Choices, if any); an
// answer to it makes the run call the book again at the same statement,
// with BookAnswers(ctx) holding the answers given so far by question ID.
type BookQuestion struct {
	// ID names the question for the book (unique among the questions of
	// one call); Prompt is what the person is asked.
	ID     string
	Prompt string
	// Choices, when given, are the only answers accepted.
	Choices []Value
	// Type, when set, is the type the answer must have ("text", "number",
	// "boolean", "date", "datetime", "time").
	Type string
}

func (q *BookQuestion) Error() string { return "the book asks: " + q.Prompt }

// BookAnswers returns, inside Books.Call, the answers given to the
// questions the book asked at this call (see BookQuestion), by question
// id; nil when none was given.
func BookAnswers(ctx context.Context) map[string]Value {
	a, _ := ctx.Value(bookAnswersKey{}).(map[string]Value)
	return a
}

type callSpanKey struct{}

// CallSpan returns, inside Books.Call (and Runs.Start), the span of the
// statement that makes the call, in the step's code (see Options.SayAt).
func CallSpan(ctx context.Context) (Span, bool) {
	s, ok := ctx.Value(callSpanKey{}).(Span)
	return s, ok
}

// JournalIndex returns, inside Books.Call, the position of the call in the
// run's journal. It is the same when a recovered run repeats a call whose
// result was not journaled, so that, with the run's identity, it names the
// call for an external book's deduplication.
func JournalIndex(ctx context.Context) (int, bool) {
	i, ok := ctx.Value(journalIndexKey{}).(int)
	return i, ok
}

// answerKinds are the value kinds of the answer types of a BookQuestion.
var answerKinds = map[string]Kind{"text": KindText, "number": KindNumber, "boolean": KindBool,
	"date": KindDate, "datetime": KindDateTime, "time": KindTimeOfDay}

// IsAnswerType reports whether typ is an answer type of BookQuestion ("" is
// any value).
func IsAnswerType(typ string) bool {
	_, ok := answerKinds[typ]
	return ok || typ == ""
}

// ExpectedAnswerType is the answer type an answer to e must have: its
// AnswerType (a book's question), else the type every one of its choices
// has ("text", "number", "boolean", "date", "datetime", "time"), else ""
// (the interpreter does not know: any value, as for a missing fact).
func ExpectedAnswerType(e *Exception) string {
	if e == nil {
		return ""
	}
	if e.AnswerType != "" || len(e.Choices) == 0 {
		return e.AnswerType
	}
	k := e.Choices[0].k
	for _, c := range e.Choices[1:] {
		if c.k != k {
			return ""
		}
	}
	for typ, kind := range answerKinds {
		if kind == k {
			return typ
		}
	}
	return ""
}

// CheckAnswer reports whether v fits the answer type typ of a question; an
// error says what was wanted. A date, datetime or time may also be given
// as text (its plain JSON form), which the book reads.
func CheckAnswer(typ string, v Value) error {
	want, ok := answerKinds[typ]
	if !ok || v.k == want || want >= KindDate && v.k == KindText {
		return nil
	}
	return fmt.Errorf("the answer must be %s, not %s", want.article(), v.k.article())
}

// writeBack sets the fact a standard procedure changes (its mutates
// input, when the sentence named it by a fact) to the result.
func (m *machine) writeBack(bm bookMatch, result Value) error {
	if bm.std.mutates == "" {
		return nil
	}
	for _, b := range bm.binds {
		if strings.Join(bm.sig[b.elem].param, " ") != bm.std.mutates {
			continue
		}
		if ref, ok := b.x.(*refExpr); ok && ref.name != "above" {
			return m.update(ref, result)
		}
	}
	return nil
}

// CheckQuestionAnswer reports whether v answers the question of e: it fits
// its answer type (ExpectedAnswerType, CheckAnswer) and, when e has
// choices, equals one of them. The server's guidance and the local `prose
// run` both check answers with it, so that both refuse the same ones.
func CheckQuestionAnswer(e *Exception, v Value) error {
	if err := CheckAnswer(ExpectedAnswerType(e), v); err != nil {
		return err
	}
	if e == nil || len(e.Choices) == 0 {
		return nil
	}
	var cs []string
	for _, c := range e.Choices {
		if Equal(c, v) {
			return nil
		}
		b, _ := AppendPlain(nil, c)
		cs = append(cs, string(b))
	}
	return errors.New("the answer must be one of " + strings.Join(cs, ", "))
}

// ReadAnswer reads a person's typed answer to the question of e as the
// value its answer type wants ("yes" for a yes/no question is true, "12"
// for numbers is 12); other text stays text.
func ReadAnswer(e *Exception, text string) Value {
	t := Value{k: KindText, s: text, i: 1}
	switch ExpectedAnswerType(e) {
	case "boolean":
		if v, ok := readAs(t, KindBool); ok {
			return v
		}
	case "number":
		if v, ok := readAs(t, KindNumber); ok {
			return v
		}
	}
	return Text(text)
}
