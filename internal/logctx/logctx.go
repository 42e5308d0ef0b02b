// Package logctx carries the identifiers of a request or a run (request id,
// organization, run, …) in a context, and a slog.Handler that adds them to
// every line logged with that context: a line of a request or of a run says
// which without each caller passing them. It also makes Prose's handlers:
// text on a terminal, JSON otherwise, durations in milliseconds.
//
// It imports nothing of ours, so any package may use it.
package logctx

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Keys of the fields Prose puts in contexts.
const (
	RequestID    = "request_id"
	Organization = "organization"
	Workspace    = "workspace"
	Run          = "run"
	Method       = "method"
)

// fields are a context's fields. A context gets its own set from With; Set
// changes the set in place, so that an outer frame holding the same context
// (the logging interceptor, which logs after the call) sees what an inner
// one learnt (the organization the auth entry found).
type fields struct {
	mu    sync.Mutex
	attrs []slog.Attr
}

type key struct{}

// withRoom is how many fields past its own With leaves room for.
const withRoom = 2

func from(ctx context.Context) *fields {
	f, _ := ctx.Value(key{}).(*fields)
	return f
}

// With returns a context whose fields are ctx's with kv (key, value pairs)
// set over them; ctx's own set is unchanged.
func With(ctx context.Context, kv ...string) context.Context {
	// Room for ctx's fields, kv's and the two a request's fields usually
	// get later (Set: organization, workspace): one allocation, not one
	// per append that outgrows the slice.
	f := &fields{}
	if p := from(ctx); p != nil {
		p.mu.Lock()
		f.attrs = append(make([]slog.Attr, 0, len(p.attrs)+len(kv)/2+withRoom), p.attrs...)
		p.mu.Unlock()
	} else {
		f.attrs = make([]slog.Attr, 0, len(kv)/2+withRoom)
	}
	f.set(kv)
	return context.WithValue(ctx, key{}, f)
}

// Set sets kv (key, value pairs) in ctx's fields in place (a context
// without fields gets some: the returned context).
func Set(ctx context.Context, kv ...string) context.Context {
	f := from(ctx)
	if f == nil {
		return With(ctx, kv...)
	}
	f.set(kv)
	return ctx
}

// Get returns the value of key in ctx's fields, or "".
func Get(ctx context.Context, k string) string {
	f := from(ctx)
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.attrs {
		if a.Key == k {
			return a.Value.String()
		}
	}
	return ""
}

func (f *fields) set(kv []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
next:
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		for j := range f.attrs {
			if f.attrs[j].Key == kv[i] {
				f.attrs[j].Value = slog.StringValue(kv[i+1])
				continue next
			}
		}
		f.attrs = append(f.attrs, slog.String(kv[i], kv[i+1]))
	}
}

func (f *fields) snapshot() []slog.Attr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]slog.Attr(nil), f.attrs...)
}

// Handler adds the context's fields to each record (those the record does
// not set itself) before its inner handler.
type Handler struct{ inner slog.Handler }

// NewHandler wraps inner.
func NewHandler(inner slog.Handler) *Handler { return &Handler{inner: inner} }

// Enabled is the inner handler's.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle adds the fields of ctx and calls the inner handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if f := from(ctx); f != nil {
		attrs := f.snapshot()
		if len(attrs) > 0 {
			have := map[string]bool{}
			r.Attrs(func(a slog.Attr) bool { have[a.Key] = true; return true })
			r = r.Clone()
			for _, a := range attrs {
				if !have[a.Key] {
					r.AddAttrs(a)
				}
			}
		}
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs is the inner handler's, wrapped.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup is the inner handler's, wrapped.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name)}
}

// Formats of New.
const (
	FormatAuto = "auto" // text on a terminal, JSON otherwise
	FormatText = "text"
	FormatJSON = "json"
)

// ValidFormat reports whether format is one New takes.
func ValidFormat(format string) bool {
	switch format {
	case FormatAuto, FormatText, FormatJSON, "":
		return true
	}
	return false
}

// New returns Prose's logger writing to w: JSON lines, or text for
// FormatText and for FormatAuto when w is a terminal; every duration is
// written in milliseconds under its key with "_ms" appended; each line
// carries its context's fields (Handler).
func New(w io.Writer, format string, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: millis}
	text := format == FormatText
	if format == FormatAuto || format == "" {
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) { //nolint:gosec // G115: a file descriptor fits an int
			text = true
		}
	}
	var h slog.Handler
	if text {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(NewHandler(h))
}

// millis writes a duration as a number of milliseconds (fractional), its
// key ending in "_ms".
func millis(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	k := a.Key
	if !strings.HasSuffix(k, "_ms") {
		k += "_ms"
	}
	return slog.Float64(k, float64(a.Value.Duration())/float64(time.Millisecond))
}
