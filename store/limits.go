package store

import (
	"errors"
	"fmt"
)

// The default sizes Prose accepts, decided once: the server refuses larger
// writes with INVALID_ARGUMENT and a BadRequest violation naming the field,
// and every transport is configured so that whatever was accepted can be
// read back (README, "Limits"). `prose serve` can change each (Sizes).
const (
	// MaxTitleBytes bounds a title or display name (workspaces,
	// automations, API keys, v2 run names), in UTF-8 bytes.
	MaxTitleBytes = 1024
	// MaxTextBytes bounds a free text a request gives: a description (of an
	// automation, a book, a procedure) or a pause reason.
	MaxTextBytes = 64 << 10
	// MaxConnectionsPerWorkspace bounds the book connections of one workspace.
	MaxConnectionsPerWorkspace = 500
	// MaxWebhooksPerWorkspace bounds the outbound webhooks of one
	// workspace: every change of a run or exception of the workspace writes
	// one delivery per webhook in its own transaction.
	MaxWebhooksPerWorkspace = 25
	// MaxTriggerInstancesPerWorkspace bounds the trigger instances of one
	// workspace: each message trigger is a broker subscription on every
	// replica.
	MaxTriggerInstancesPerWorkspace = 100
	// MaxCodeBytes bounds an automation's english_code.
	MaxCodeBytes = 1 << 20
	// MaxInputBytes bounds the inputs of one run (the protobuf size of
	// inputs, v1 parameters or v2 inputs): what one run is given to start.
	MaxInputBytes = 1 << 20
	// MaxEventBytes bounds one event written through the API (its protobuf
	// size).
	MaxEventBytes = 256 << 10
	// MaxPageBytes is a list page's byte budget: a page stops before the
	// item that would take it past the budget (never before its first
	// item) and carries a next_page_token. 3 MiB keeps every page under
	// gRPC's default 4 MiB receive limit, so that a stock gRPC client can
	// page through anything.
	MaxPageBytes = 3 << 20
)

// Sizes are the sizes a server accepts (`prose serve --max-title-bytes`
// and the others); a zero field is its default (the constants above).
type Sizes struct {
	TitleBytes int // MaxTitleBytes
	TextBytes  int // MaxTextBytes
	CodeBytes  int // MaxCodeBytes
	InputBytes int // MaxInputBytes
	EventBytes int // MaxEventBytes
	PageBytes  int // MaxPageBytes
}

// SizeBound is the range a Sizes field may be set to, and its flag.
type SizeBound struct {
	Flag     string
	Min, Max int
	field    func(*Sizes) *int
}

// MaxSettableBytes is the most a title, text, code, inputs or event may be
// set to: half the HTTP side's JSON body bound (8 MiB), so that whatever
// the server accepts can also be sent as JSON, escaped.
const MaxSettableBytes = 4 << 20

// MaxStoredEventBytes bounds the stored payload of any event, whatever its
// writer: the largest event that may be allowed (MaxSettableBytes) and
// what the server adds to a client's (its user and exception names). The
// writers cap events well below it (Sizes.EventBytes); the store refuses
// more with ErrInvalidArgument, so nothing it holds is unreadable.
const MaxStoredEventBytes = MaxSettableBytes + 64<<10

// SizeBounds are the ranges of the Sizes fields, in flag order.
var SizeBounds = []SizeBound{
	{"max-title-bytes", 64, 64 << 10, func(s *Sizes) *int { return &s.TitleBytes }},
	{"max-description-bytes", 1 << 10, 1 << 20, func(s *Sizes) *int { return &s.TextBytes }},
	{"max-code-bytes", 1 << 10, MaxSettableBytes, func(s *Sizes) *int { return &s.CodeBytes }},
	{"max-input-bytes", 1 << 10, MaxSettableBytes, func(s *Sizes) *int { return &s.InputBytes }},
	{"max-event-bytes", 1 << 10, MaxSettableBytes, func(s *Sizes) *int { return &s.EventBytes }},
	// A page over 4 MiB needs a gRPC client receive limit above gRPC's
	// default (4 MiB).
	{"max-page-bytes", 64 << 10, 64 << 20, func(s *Sizes) *int { return &s.PageBytes }},
}

// Field is the field of s the bound is about.
func (b SizeBound) Field(s *Sizes) *int { return b.field(s) }

// DefaultSizes are the defaults.
var DefaultSizes = Sizes{MaxTitleBytes, MaxTextBytes, MaxCodeBytes, MaxInputBytes, MaxEventBytes, MaxPageBytes}

// WithDefaults fills the zero fields with their defaults.
func (s Sizes) WithDefaults() Sizes {
	d := DefaultSizes
	for _, b := range SizeBounds {
		if p := b.field(&s); *p == 0 {
			*p = *b.field(&d)
		}
	}
	return s
}

// Validate checks that every field set is within its bound; the error
// names the flag.
func (s Sizes) Validate() error {
	var errs []error
	for _, b := range SizeBounds {
		if v := *b.field(&s); v != 0 && (v < b.Min || v > b.Max) {
			errs = append(errs, fmt.Errorf("--%s %d: must be between %d and %d bytes", b.Flag, v, b.Min, b.Max))
		}
	}
	return errors.Join(errs...)
}

// Sized is a stored record that knows about how many bytes it takes on
// the wire; list pages count it against MaxPageBytes.
type Sized interface {
	// WireBytes is an estimate (the sum of the record's variable-length
	// fields plus a fixed overhead), not an exact protobuf size.
	WireBytes() int
}

// recordOverhead is what the fixed-size fields of a record (ids, times,
// states) add to its variable-length ones.
const recordOverhead = 256

// WireBytes implements Sized.
func (a Automation) WireBytes() int {
	return recordOverhead + len(a.DisplayName) + len(a.Description) + len(a.Code) + len(a.Details) +
		len(a.PublishedCode) + len(a.PublishedDetails)
}

// WireBytes implements Sized.
func (r Run) WireBytes() int {
	return recordOverhead + len(r.Name) + len(r.Steps) + len(r.UserInputs) + len(r.InvocationDetails) +
		len(r.Reason) + len(r.Description) + len(r.Outputs) + 64*len(r.FileIDs)
}

// WireBytes implements Sized.
func (e Event) WireBytes() int { return recordOverhead + len(e.Payload) }

// WireBytes implements Sized.
func (w Workspace) WireBytes() int {
	return recordOverhead + len(w.Title) + len(w.Icon) + len(w.CreatorDisplayName) + len(w.CreatorEmail)
}

// WireBytes implements Sized.
func (e Exception) WireBytes() int {
	n := recordOverhead + len(e.Message) + len(e.Description) + len(e.Details)
	for k, v := range e.Extra {
		n += len(k) + len(v)
	}
	return n
}

// PageItems returns how many of items (at most max) fit in one page: it
// stops before the item that would take the page past budget bytes (0:
// MaxPageBytes), but always keeps the first. Items that are not Sized
// count nothing.
func PageItems[T any](items []T, max, budget int) int {
	if budget <= 0 {
		budget = MaxPageBytes
	}
	if len(items) < max {
		max = len(items)
	}
	total := 0
	for i := 0; i < max; i++ {
		if s, ok := any(items[i]).(Sized); ok {
			total += s.WireBytes()
		}
		if i > 0 && total > budget {
			return i
		}
	}
	return max
}
