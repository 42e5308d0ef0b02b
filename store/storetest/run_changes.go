package storetest

import "github.com/proserun/prose/store"

// The checks the suite pauses and continues runs with. The engine gives
// its own (engine/transitions.go: which states may be paused or
// continued); the suite's only read the locked row the way a check must
// (executing → stopping, else stopped; awaiting_guidance when an exception
// is pending, else pending) and refuse nothing, so what the store refuses
// by itself (store.Runs.ChangeRun) shows.
func pause(reason string) store.RunCheck {
	return func(r store.Run, _ string) (store.RunChange, error) {
		to := store.RunStopped
		if r.State == store.RunExecuting {
			to = store.RunStopping
		}
		return store.RunChange{State: to, Reason: reason, Actor: suiteActor}, nil
	}
}

func resume(_ store.Run, pending string) (store.RunChange, error) {
	if pending != "" {
		return store.RunChange{State: store.RunAwaitingGuidance, ExceptionID: pending, Actor: suiteActor}, nil
	}
	return store.RunChange{State: store.RunPending, Actor: suiteActor}, nil
}

// to is a check that moves a run to state whatever it is.
func to(state store.RunState) store.RunCheck {
	return func(store.Run, string) (store.RunChange, error) { return store.RunChange{State: state}, nil }
}

// suiteActor is who the suite's changes name.
const suiteActor = "users/suite"
