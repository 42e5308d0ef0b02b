package engine

// Draining reports whether Run's context ended and the engine hands its
// runs in flight back (tests wait for it instead of sleeping).
func (e *Engine) Draining() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.draining
}

// Running reports whether Run has started claiming (an invoke before it
// never executes inline: tests that count on the inline path wait for it).
func (e *Engine) Running() bool { return e.running.Load() }
