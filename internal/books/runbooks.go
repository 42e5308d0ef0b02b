package books

import (
	"context"
	"fmt"
	"slices"
	"strings"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/lang"
)

// RunBooks is the books of one workspace as a run sees them. It implements
// lang.Books, the interface the interpreter calls books through.
type RunBooks struct {
	r  *Registry
	ws Workspace
	// CallID, when set, names each call for the external book's
	// deduplication (see README.md). lang.Books.Call carries no step
	// identity, so the engine supplies one if it has it.
	CallID func(proc lang.BookProcedure, inputs map[string]lang.Value) string
}

var _ lang.Books = (*RunBooks)(nil)

// ForWorkspace returns the books visible in ws, for a run.
func (r *Registry) ForWorkspace(ws Workspace) *RunBooks { return &RunBooks{r: r, ws: ws} }

// BookProcedure describes a procedure for the interpreter: Book is
// "name@version", Name the procedure id, Signature its English with the
// outputs in parentheses.
func BookProcedure(b *bookv1.Book, p *bookv1.Procedure) lang.BookProcedure {
	sig := p.GetSignature().GetEnglish()
	if !strings.Contains(sig, "(") && len(p.GetSignature().GetOutputs()) > 0 {
		var outs []string
		for _, o := range p.GetSignature().GetOutputs() {
			if nps := o.GetNounPhrases(); len(nps) > 0 {
				outs = append(outs, "the "+PhraseText(nps[0]))
			}
		}
		sig += " (" + strings.Join(outs, ", ") + ")"
	}
	return lang.BookProcedure{Book: b.GetName() + "@" + b.GetVersion(), Name: p.GetId(), Signature: sig}
}

// Lookup returns candidate procedures for a call sentence: those whose verb
// is the sentence's first word, best matches (by Match's scoring) first.
// Only the latest version of each book takes part. The interpreter does the
// exact matching. A failure to read the workspace's books is an error (not
// the built-in books alone: which books exist decides what a sentence
// means).
func (rb *RunBooks) Lookup(ctx context.Context, sentence string) ([]lang.BookProcedure, error) {
	s := ParseSentence(sentence)
	if len(s.Verbs) == 0 {
		return nil, nil
	}
	all, err := rb.r.WorkspaceBooks(ctx, rb.ws)
	if err != nil {
		return nil, fmt.Errorf("books of workspace %s: %w", rb.ws.WorkspaceID, err)
	}
	type cand struct {
		p     lang.BookProcedure
		score int
	}
	var cs []cand
	for _, b := range Latest(all) {
		for _, p := range b.GetProcedures() {
			if !equalFold(s.Verbs, p.GetSignature().GetVerbs()) || isLanguageProcedure(b, p) {
				continue
			}
			cs = append(cs, cand{BookProcedure(b, p), matchScore(s, p)})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return b.score - a.score })
	out := make([]lang.BookProcedure, len(cs))
	for i, c := range cs {
		out[i] = c.p
	}
	return out, nil
}

// Call calls the procedure with inputs keyed by concept name.
func (rb *RunBooks) Call(ctx context.Context, proc lang.BookProcedure, inputs map[string]lang.Value) (map[string]lang.Value, error) {
	name, version, ok := strings.Cut(proc.Book, "@")
	if !ok {
		return nil, fmt.Errorf("book %q: %w", proc.Book, ErrNotFound)
	}
	callID := ""
	if rb.CallID != nil {
		callID = rb.CallID(proc, inputs)
	}
	return rb.r.Call(ctx, rb.ws, ProcedureRef{Book: name, Version: version, Procedure: proc.Name}, callID, inputs)
}
