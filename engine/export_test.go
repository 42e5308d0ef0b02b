package engine

// Draining reports whether Run's context ended and the engine hands its
// runs in flight back (tests wait for it instead of sleeping).
func (e *Engine) Draining() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.draining
}
