package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/store"
)

// limitFlags are the flags that set a run's limits (lang.Limits), shared by
// serve and run. A size takes bytes or a unit ("4MiB", "64 MB"); 0 keeps the
// default, -1 removes the limit.
type limitFlags struct{ l lang.Limits }

type sizeFlag struct{ p *int64 }

func (s sizeFlag) String() string {
	if s.p == nil || *s.p == 0 {
		return "0"
	}
	return strconv.FormatInt(*s.p, 10)
}

func (s sizeFlag) Set(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		*s.p = n
		return nil
	}
	n, err := humanize.ParseBytes(v)
	if err != nil || n > math.MaxInt64/2 {
		return fmt.Errorf("not a size: %q (write bytes, or a number and a unit: 4MiB)", v)
	}
	*s.p = int64(n)
	return nil
}

// Type names the value in help (pflag).
func (s sizeFlag) Type() string { return "size" }

type intFlag struct{ p *int }

// Type names the value in help (pflag).
func (s intFlag) Type() string { return "int" }

func (s intFlag) String() string {
	if s.p == nil {
		return "0"
	}
	return strconv.Itoa(*s.p)
}

func (s intFlag) Set(v string) error {
	var n int64
	if err := (sizeFlag{&n}).Set(v); err != nil {
		return err
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("%q is too large", v)
	}
	*s.p = int(n)
	return nil
}

// register adds the limit flags to fs.
func (lf *limitFlags) register(fs *pflag.FlagSet) { registerLimitFlags(fs, &lf.l) }

// registerLimitFlags adds the flags of a run's limits to fs, into l.
func registerLimitFlags(fs *pflag.FlagSet, l *lang.Limits) {
	d := lang.DefaultLimits
	fs.Var(intFlag{&l.MaxTextBytes}, "max-text-bytes", fmt.Sprintf("longest text a run may make (default %s; -1: no limit)", humanize.IBytes(uint64(d.MaxTextBytes))))
	fs.Var(intFlag{&l.MaxItems}, "max-items", fmt.Sprintf("most items of one list, set or dictionary, or rows of one table, a run may make (default %d)", d.MaxItems))
	fs.Var(sizeFlag{&l.MaxFactsBytes}, "max-facts-bytes", fmt.Sprintf("memory a run's facts may take together (default %s)", humanize.IBytes(uint64(d.MaxFactsBytes))))
	fs.Var(sizeFlag{&l.MaxJournalBytes}, "max-journal-bytes", fmt.Sprintf("size of a run's journal of book results and clock readings (default %s)", humanize.IBytes(uint64(d.MaxJournalBytes))))
	fs.Var(intFlag{&l.MaxStateBytes}, "max-state-bytes", fmt.Sprintf("size of a run's saved state; a run whose state is larger fails (default %s)", humanize.IBytes(uint64(d.MaxStateBytes))))
	fs.Int64Var(&l.MaxSteps, "max-steps", 0, fmt.Sprintf("statements a run may execute (from its start or its last guidance) before it raises an exception to retry with a fresh budget or skip (default %d)", d.MaxSteps))
	fs.Var(intFlag{&l.MaxChildRuns}, "max-child-runs", fmt.Sprintf("runs one run may start with `start a run`; the next start raises an exception (default %d; -1: no limit)", d.MaxChildRuns))
	fs.Var(intFlag{&l.MaxRunDepth}, "max-run-depth", fmt.Sprintf("how deep child runs nest: a child run this deep starting a run raises an exception (default %d)", d.MaxRunDepth))
	fs.DurationVar(&l.MaxDuration, "max-run-time", 0, fmt.Sprintf("wall time a run may execute (from its start or its last guidance) before it raises an exception to retry with a fresh budget or skip (default %s)", d.MaxDuration))
}

// registerSizeFlags adds the flags of the sizes the server accepts
// (store.SizeBounds): bytes or a unit ("2MiB"), 0 the default; newApp
// validates them (store.Sizes.Validate).
func registerSizeFlags(fs *pflag.FlagSet, sz *store.Sizes) {
	d := store.DefaultSizes
	what := map[string]string{
		"max-title-bytes":       "largest title or display name (workspaces, automations, API keys, v2 run names)",
		"max-description-bytes": "largest description (automations, books, procedures) or pause reason",
		"max-code-bytes":        "largest english_code of an automation",
		"max-input-bytes":       "largest inputs of one run (:invoke inputs, v2 inputs, v1 parameters; protobuf size)",
		"max-event-bytes":       "largest event (CreateEvent's event, and any event an agent writes; protobuf size)",
		"max-page-bytes":        "byte budget of a list page (a page stops before the item that would take it past; above 4 MiB a gRPC client needs a receive limit above its default)",
	}
	for _, b := range store.SizeBounds {
		fs.Var(intFlag{b.Field(sz)}, b.Flag, fmt.Sprintf("%s, in bytes (default %s; %s to %s)", what[b.Flag],
			humanize.IBytes(uint64(*b.Field(&d))), humanize.IBytes(uint64(b.Min)), humanize.IBytes(uint64(b.Max))))
	}
}
