package store

import "time"

// Options configure a backend.
type Options struct {
	// Now is the clock used for create/update times; nil means time.Now.
	Now func() time.Time
	// SkipMigrations opens the database without applying migrations.
	SkipMigrations bool
	// MaxLostLeases is how many times in a row a run's worker may lose its
	// lease while executing it, without the run making progress, before the
	// run fails with an internal error instead of going back to the queue (a
	// poison run: one that kills its worker). 0: DefaultMaxLostLeases.
	MaxLostLeases int
	// PageBytes is a list page's byte budget (Sizes.PageBytes); 0:
	// MaxPageBytes.
	PageBytes int
}

// WithPageBytes sets Options.PageBytes.
func WithPageBytes(n int) Option { return func(o *Options) { o.PageBytes = n } }

// DefaultMaxLostLeases is the default of Options.MaxLostLeases.
const DefaultMaxLostLeases = 3

// WithMaxLostLeases sets Options.MaxLostLeases.
func WithMaxLostLeases(n int) Option { return func(o *Options) { o.MaxLostLeases = n } }

// Option changes Options.
type Option func(*Options)

// WithClock sets the clock.
func WithClock(now func() time.Time) Option { return func(o *Options) { o.Now = now } }

// WithoutMigrations opens without migrating (for read-only tools).
func WithoutMigrations() Option { return func(o *Options) { o.SkipMigrations = true } }

// ApplyOptions folds opts into Options.
func ApplyOptions(opts []Option) Options {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	return o
}
