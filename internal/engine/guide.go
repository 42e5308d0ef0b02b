package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/proserun/prose/internal/codec"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
)

// Guide entries: what a person taught an automation about an exception.
// An approved entry is applied by the engine as the exception is raised,
// before anybody is asked: the exception is written RESOLVED by
// guideEntries/{entry}, and the run goes on at once. An entry matches an
// exception when they have the same automation, the same statement (by its
// text: an entry made before the statement was edited never applies to the
// edited one), the same group and the same fact or question. The lookup is
// one range of an index (automation, hash of the statement's text).

// DefaultMaxGuidedPerRun is the default of Options.MaxGuidedPerRun.
const DefaultMaxGuidedPerRun = 100

// StatementHash is the key guide entries are looked up by: the SHA-256 of
// the statement's text.
func StatementHash(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// statementText is the text of the statement an exception was raised at
// ("" when the location is not within the code).
func statementText(code string, loc store.Location) string {
	if loc.Start < 0 || loc.End <= loc.Start || loc.End > int64(len(code)) {
		return ""
	}
	return code[loc.Start:loc.End]
}

// NewGuideEntry makes the guide entry that remembers guidance g for
// exception x: its match (x's statement, group and fact or question), its
// guidance and the Prose that tells what it does (ResolutionCode). The
// caller sets the text fields and stores it. A *GuidanceError (an
// ErrInvalidArgument) when g does not fit x or cannot be remembered
// (retry: it would raise the same exception again); ErrFailedPrecondition
// when x has no statement an entry could match.
func (e *Engine) NewGuideEntry(ctx context.Context, x store.Exception, g Guidance) (store.GuideEntry, error) {
	if g.Kind == GuidanceRetry {
		return store.GuideEntry{}, &GuidanceError{Field: "retry", Msg: "retry cannot be remembered: it would meet the same exception again"}
	}
	details, err := decodeException(x.Details)
	if err != nil {
		return store.GuideEntry{}, err
	}
	if err := CheckGuidance(details, g); err != nil {
		return store.GuideEntry{}, err
	}
	r, err := e.st.GetRunByID(ctx, x.RunID)
	if err != nil {
		return store.GuideEntry{}, err
	}
	code, _ := codec.StepCode(r, x.Step)
	text := statementText(code, x.Location)
	if strings.TrimSpace(text) == "" {
		return store.GuideEntry{}, fmt.Errorf("exception %q has no statement a guide entry could match: %w", x.ID, store.ErrFailedPrecondition)
	}
	data, err := encodeGuidance(g)
	if err != nil {
		return store.GuideEntry{}, err
	}
	return store.GuideEntry{
		OrganizationID: x.OrganizationID, WorkspaceID: x.WorkspaceID, AutomationID: x.AutomationID,
		SourceException: x.ID, SourceRun: x.RunID,
		Statement: text, StatementHash: StatementHash(text),
		Group: x.Group, Fact: lang.FactName(details.Fact), Question: details.Question,
		Guidance:       data,
		ResolutionCode: guidanceCode(g),
		State:          store.GuidePendingApproval,
		VersionMinor:   1,
	}, nil
}

// GuideEntrySteps is the default resolution_steps of an entry: what it
// does, for a person.
func GuideEntrySteps(en store.GuideEntry) string {
	var what string
	switch {
	case en.Question != "":
		what = "When the automation asks " + quote(en.Question)
	case en.Fact != "":
		what = "When the automation needs " + factPhrase(en.Fact)
	default:
		what = "When the statement cannot go on"
	}
	return what + " at `" + oneLine(en.Statement) + "`, apply:\n\n```\n" + en.ResolutionCode + "\n```"
}

// GuideEntryTitle is the default title of an entry.
func GuideEntryTitle(en store.GuideEntry) string {
	switch {
	case en.Question != "":
		return "Answer " + quote(en.Question)
	case en.Fact != "":
		return "Provide " + factPhrase(en.Fact)
	}
	return "Handle `" + oneLine(en.Statement) + "`"
}

func quote(s string) string { return `"` + s + `"` }

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return strings.TrimSpace(s)
}

// guidanceCode writes guidance as Prose: `skip`, `answer: <value>`,
// `the <fact> is <expression or value>` (one line per fact), or the
// replacement code.
func guidanceCode(g Guidance) string {
	switch g.Kind {
	case GuidanceSkip:
		return "skip"
	case GuidanceReplaceStep:
		return g.Code
	case GuidanceAnswer:
		return "answer: " + plain(g.Answer)
	case GuidanceProvideValues:
		var lines []string
		for name, src := range g.Expressions {
			lines = append(lines, factPhrase(name)+" is "+src)
		}
		for name, v := range g.Values {
			lines = append(lines, factPhrase(name)+" is "+plain(v))
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	return ""
}

func factPhrase(name string) string {
	n := strings.TrimSpace(name)
	if !strings.HasPrefix(strings.ToLower(n), "the ") {
		n = "the " + strings.ReplaceAll(n, "_", " ")
	}
	return n
}

func plain(v lang.Value) string {
	b, err := lang.AppendPlain(nil, v)
	if err != nil {
		return "(a value)"
	}
	return string(b)
}

// guide applies the first approved guide entry that matches the exception
// res was suspended on, and goes on: the exception is written resolved by
// the entry, and the run's next result returned. ok is false when no entry
// applies (none matches, its guidance does not apply to this run's facts,
// or the run has used up Options.MaxGuidedPerRun): the exception then waits
// for a person as usual; note says why an entry that matched did not
// apply.
func (e *Engine) guide(ctx, soft context.Context, r store.Run, step int, code string, prog *lang.Program, res *lang.Result, opts lang.Options) (next *lang.Result, ok bool, note string, err error) {
	if e.opts.MaxGuidedPerRun < 0 {
		return nil, false, "", nil
	}
	x := res.Exception
	text := statementText(code, store.Location{Start: int64(x.Span.Start), End: int64(x.Span.End)})
	if text == "" {
		return nil, false, "", nil
	}
	entries, err := e.st.MatchGuideEntries(ctx, store.GuideMatch{
		OrganizationID: r.OrganizationID, WorkspaceID: r.WorkspaceID, AutomationID: r.AutomationID, StatementHash: StatementHash(text),
	})
	if err != nil || len(entries) == 0 {
		return nil, false, "", err
	}
	fact := lang.FactName(x.Fact)
	for _, en := range entries {
		if en.Statement != text || en.Group != string(x.Group) || en.Fact != fact || en.Question != x.Question {
			continue
		}
		resolution, err := decodeGuidance(en.Guidance)
		if err != nil {
			e.log.Warn("guide entry unreadable", "entry", en.ID, "err", err)
			continue
		}
		resumed, err := lang.PrepareResume(soft, prog, res.State, resolution, opts)
		if err != nil {
			// Its guidance does not apply to this run (an expression over a
			// fact this run has no value for, …): a person decides.
			note = fmt.Sprintf("%s matched but did not apply: %v.", capitalized(entryName(en)), err)
			continue
		}
		details, err := encodeException(x)
		if err != nil {
			return nil, false, "", err
		}
		_, err = e.guided.Record(ctx, store.GuidedException{
			Exception: store.Exception{
				OrganizationID: r.OrganizationID, WorkspaceID: r.WorkspaceID, RunID: r.ID, AutomationID: r.AutomationID, Stage: r.Stage,
				Step: step, Group: string(x.Group), Message: x.Message, Details: details,
				Location:    store.Location{Start: int64(x.Span.Start), End: int64(x.Span.End)},
				Description: describe(x) + " Resolved by " + entryName(en) + ".",
			},
			Entry: en.ID, MaxPerRun: e.opts.MaxGuidedPerRun,
		})
		if errors.Is(err, store.ErrResourceExhausted) {
			return nil, false, fmt.Sprintf("%s matched, but learnings have resolved %d exceptions of this run, the most they may.", capitalized(entryName(en)), e.opts.MaxGuidedPerRun), nil
		}
		if err != nil {
			return nil, false, "", err
		}
		e.Changed(r.OrganizationID, r.WorkspaceID)
		return resumed.Run(), true, "", nil
	}
	return nil, false, note, nil
}

// guidedWriter writes the exceptions guide entries resolve, several per
// transaction while the engine runs (as completer does for finishes):
// each is written before its run goes on, and runs meeting remembered gaps
// at once share a commit.
type guidedWriter struct {
	st      store.Store
	writers int

	mu    sync.RWMutex
	queue chan *guidedReq // nil: not started
	stop  chan struct{}
	wg    sync.WaitGroup
}

type guidedReq struct {
	ctx  context.Context
	g    store.GuidedException
	x    store.Exception
	err  error
	done chan struct{}
}

// Start starts the writers.
func (w *guidedWriter) Start(ctx context.Context, queued int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	queue, stop := make(chan *guidedReq, queued), make(chan struct{})
	w.queue, w.stop = queue, stop
	for range w.writers {
		w.wg.Go(func() { w.loop(ctx, queue, stop) })
	}
}

// Stop stops the writers once no Record waits.
func (w *guidedWriter) Stop() {
	w.mu.Lock()
	if w.queue != nil {
		close(w.stop)
		w.queue, w.stop = nil, nil
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// Record writes g (see store.GuideEntries.RecordGuidedException).
func (w *guidedWriter) Record(ctx context.Context, g store.GuidedException) (store.Exception, error) {
	w.mu.RLock()
	q := w.queue
	w.mu.RUnlock()
	if q == nil {
		return w.st.RecordGuidedException(ctx, g)
	}
	r := &guidedReq{ctx: ctx, g: g, done: make(chan struct{})}
	select {
	case q <- r:
	case <-ctx.Done():
		return store.Exception{}, ctx.Err()
	}
	<-r.done // the writers always answer
	return r.x, r.err
}

func (w *guidedWriter) loop(ctx context.Context, queue chan *guidedReq, stop <-chan struct{}) {
	batchLoop(queue, stop, func(batch []*guidedReq) { w.write(ctx, batch) })
}

func (w *guidedWriter) write(ctx context.Context, batch []*guidedReq) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	if len(batch) == 1 {
		r := batch[0]
		r.x, r.err = w.st.RecordGuidedException(r.ctx, r.g)
		return
	}
	gs := make([]store.GuidedException, len(batch))
	for i, r := range batch {
		gs[i] = r.g
	}
	xs, errs, err := w.st.RecordGuidedExceptions(ctx, gs)
	if err != nil {
		// Nothing was written: one by one.
		for _, r := range batch {
			r.x, r.err = w.st.RecordGuidedException(r.ctx, r.g)
		}
		return
	}
	for i, r := range batch {
		r.x, r.err = xs[i], errs[i]
	}
}

// GuideEntryText is what a person (or an agent) writes about an entry.
type GuideEntryText struct {
	Title, RootCause, ResolutionSteps, ResolutionNotes string
}

// CreateGuideEntry makes the entry that remembers guidance g for exception x
// (NewGuideEntry) with the texts given (the defaults, GuideEntryTitle and
// GuideEntrySteps, where they are blank) and stores it, pending approval.
// It is the one path that makes entries: `remember` on :resolve,
// CreateGuideEntry, and an agent's proposal. Errors are NewGuideEntry's and
// the store's.
func (e *Engine) CreateGuideEntry(ctx context.Context, x store.Exception, g Guidance, txt GuideEntryText) (store.GuideEntry, error) {
	en, err := e.NewGuideEntry(ctx, x, g)
	if err != nil {
		return store.GuideEntry{}, err
	}
	en.Title, en.RootCause, en.ResolutionSteps, en.ResolutionNotes = txt.Title, txt.RootCause, txt.ResolutionSteps, txt.ResolutionNotes
	if strings.TrimSpace(en.Title) == "" {
		en.Title = GuideEntryTitle(en)
	}
	if strings.TrimSpace(en.ResolutionSteps) == "" {
		en.ResolutionSteps = GuideEntrySteps(en)
	}
	return e.st.CreateGuideEntry(ctx, en)
}

// entryName is what a person reads for a guide entry: the learning by its
// title (its id only when it has none).
func entryName(en store.GuideEntry) string {
	if en.Title == "" {
		return "the learning " + en.ID
	}
	return "the learning “" + en.Title + "”"
}

// capitalized is s with its first letter upper case (s starts with ASCII).
func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
