package store

import "context"

// RunBatches writes several runs in one transaction (or one statement):
// the engine creates the runs of concurrent invokes and writes the
// outcomes of several workers with them, instead of one writer transaction
// per run. Every backend implements it (store/storetest covers it).
type RunBatches interface {
	// CreateRuns creates runs as CreateRun would, in order (a request id
	// already used, even by an earlier run of the batch, gives that run back
	// with created false). runs[i], created[i] and errs[i] are the result of
	// in[i]; errs[i] is an error of that run alone (ErrNotFound: its
	// automation does not exist; ErrStageChanged) and the others are still
	// created. A non-nil err means nothing was written: create them one by
	// one with CreateRun to get each result.
	CreateRuns(ctx context.Context, in []Run) (runs []Run, created []bool, errs []error, err error)
	// FinishRuns finishes runs leased to owner with completed or failed
	// outcomes, as FinishRun would, without reading them back. errs[i] is the
	// result of runIDs[i]: nil, ErrConflict when the run is not leased to
	// owner (the others are still finished), ErrInvalidArgument for an
	// outcome other than completed or failed (not written). A non-nil err
	// means nothing was written (ErrInvalidArgument when the lengths differ).
	// Unlike FinishRun it does not wake a waiting parent of a run it
	// finishes (ClaimRuns' recovery does): the engine finishes child runs
	// with FinishRun.
	FinishRuns(ctx context.Context, owner string, runIDs []string, outcomes []RunOutcome) (errs []error, err error)
	// SingleWriter reports whether the database has one writer connection
	// (SQLite): batches then queue behind each other anyway, so one is
	// written at a time, and a batch of one is written with CreateRun or
	// FinishRun. Otherwise (PostgreSQL) several batches are written at once.
	SingleWriter() bool
}

// Notifier carries wake-up notices between the engines sharing a database:
// an engine that made work (created, guided or continued a run) calls
// Notify, and the engines listening claim it at once instead of at their
// next poll. Notices carry nothing and are best effort (engines also poll).
type Notifier interface {
	// Notify tells every listener of the database that there is work,
	// including this store's own listeners. It does not fail: a notice
	// that cannot be sent is dropped.
	Notify(ctx context.Context)
	// Listen delivers a value on the returned channel after each Notify
	// (coalesced: at most one value waits), until ctx is cancelled. On
	// PostgreSQL the notices of every replica arrive (LISTEN/NOTIFY), and
	// listening also moves AuthGeneration on when another replica changes
	// what authentication reads; on SQLite, a single-process database, those
	// of this store's Notify.
	Listen(ctx context.Context) <-chan struct{}
	// OnEventChange makes the listener of Listen call fn (on its goroutine:
	// fn must not block) for every event write another replica announces,
	// with the thread's key (Thread.Key) and the event's new offset, and
	// with ("", 0) whenever it (re)connects, since notices may have been
	// missed. It takes effect while Listen runs. A single-process database
	// (SQLite) has no other replica: fn is not called (the process that
	// writes an event tells its own streams).
	OnEventChange(fn func(threadKey string, offset int64))
	// OnRunPause makes the listener of Listen call fn (on its goroutine:
	// fn must not block) for every pause of an executing run (the run now
	// stopping) that any replica commits, with the run's id, and with ""
	// whenever it (re)connects, since notices may have been missed. The
	// replica executing the run stops it at its next statement at once
	// instead of at its next lease renewal. It takes effect while Listen
	// runs. A single-process database (SQLite) has no other replica: fn is
	// not called (the engine that pauses the run executes it).
	OnRunPause(fn func(runID string))
	// NotifyChanges tells the other replicas that runs or exceptions of
	// the workspaces keys ("{organization}/{workspace}") changed, on behalf
	// of origin (an id of the sender, so that it can ignore its own
	// notice). Best effort; it does not fail. A single-process database
	// (SQLite) has no other replica: it does nothing.
	NotifyChanges(ctx context.Context, origin string, keys []string)
	// OnChanges makes the listener of Listen call fn (on its goroutine: fn
	// must not block) for every NotifyChanges of any replica, and with
	// ("", nil) whenever it (re)connects, since notices may have been
	// missed. It takes effect while Listen runs. A single-process database
	// (SQLite): fn is not called.
	OnChanges(fn func(origin string, keys []string))
}

// AuthGenerations lets a cache of what authentication reads (API keys and
// the permissions of roles and memberships) know when to drop it.
type AuthGenerations interface {
	// AuthGeneration is a number that moves on whenever what authentication
	// reads may have changed: an API key updated or deleted, a role updated
	// or deleted, a membership or its roles changed, an organization, user
	// or workspace deleted, a user or workspace updated (GetWorkspace's
	// cache goes by it too), a console session deleted (through this store, or, on PostgreSQL, through a
	// replica while this store listens: see Notifier.Listen). A cache keeps
	// an entry only while the generation it was read under is the current
	// one; read the generation before the data.
	AuthGeneration() uint64
}
