package engine

import (
	"context"
	"slices"
	"time"

	"github.com/proserun/prose/store"
)

// Each organization's share of the workers (Options.OrgWorkers). Time
// slices share the workers between organizations only when every worker
// is busy, and a run gives its worker up at most every half slice: a
// saturating organization made another's trivial run wait hundreds of
// milliseconds (issue 26). So an organization's runs hold at most
// OrgWorkers slots of this engine; the others are kept for the other
// organizations. The claims skip the organizations holding their share
// (store.FairClaimer.ClaimRunsSkipping), the inline path and the runs
// created leased take one of the organization's slots too, and an
// organization holding its share with runs waiting gives workers up for
// turns among its own runs as a full engine does. See docs/fairness.md.

// parkedRun is a run claimed while its organization held its share.
type parkedRun struct {
	f *flight
	r store.Run
}

// orgWorkers is the share of one organization given Workers and the
// option (see Options.OrgWorkers).
func orgWorkers(workers, opt int) int {
	switch {
	case opt < 0 || opt >= workers:
		return workers
	case opt > 0:
		return opt
	case workers < 4:
		return workers
	}
	return workers - max(1, workers/8)
}

// holdOrg takes one of the organization's slots: false when it holds its
// share.
func (e *Engine) holdOrg(org string) bool {
	e.orgMu.Lock()
	defer e.orgMu.Unlock()
	if e.orgHeld[org] >= e.opts.OrgWorkers {
		return false
	}
	e.orgHeld[org]++
	return true
}

// holdFree is holdOrg for a run executed at its creation or created
// leased: false also when runs of the organization are known to wait in
// the queue (queued), which such a run must not go before.
func (e *Engine) holdFree(org string) bool {
	e.orgMu.Lock()
	defer e.orgMu.Unlock()
	if e.queued[org] || e.orgHeld[org] >= e.opts.OrgWorkers {
		return false
	}
	e.orgHeld[org]++
	return true
}

// setQueued notes that runs of the organization wait in the queue.
func (e *Engine) setQueued(org string) {
	e.orgMu.Lock()
	e.queued[org] = true
	e.orgMu.Unlock()
}

// unqueue forgets the runs known to wait of every organization but those
// in skip: a claim skipping those found the queue empty.
func (e *Engine) unqueue(skip []string) {
	e.orgMu.Lock()
	defer e.orgMu.Unlock()
	if len(skip) == 0 {
		clear(e.queued)
		return
	}
	for org := range e.queued {
		if !slices.Contains(skip, org) {
			delete(e.queued, org)
		}
	}
}

// saturated reports whether every worker is busy while runs wait for one
// (contended): no run is executed at its creation or created leased then,
// whatever its organization.
func (e *Engine) saturated() bool {
	return e.contended.Load() && e.busy.Load() >= int64(e.opts.Workers)
}

// dropOrg gives back a slot holdOrg took; Run is woken when a run of the
// organization is parked (only then: each wake is a claim, a writer
// transaction on SQLite, that the creations wait for).
func (e *Engine) dropOrg(org string) {
	e.orgMu.Lock()
	if e.orgHeld[org]--; e.orgHeld[org] <= 0 {
		delete(e.orgHeld, org)
	}
	wake := false
	for _, p := range e.parked {
		if p.r.OrganizationID == org {
			wake = true
			break
		}
	}
	e.orgMu.Unlock()
	if wake {
		e.Wake()
	}
}

// orgFull reports whether the organization holds its share.
func (e *Engine) orgFull(org string) bool {
	e.orgMu.Lock()
	defer e.orgMu.Unlock()
	return e.orgHeld[org] >= e.opts.OrgWorkers
}

// anyOrgFull reports whether an organization holds its share (never when
// there is no bound).
func (e *Engine) anyOrgFull() bool {
	if e.opts.OrgWorkers >= e.opts.Workers {
		return false
	}
	e.orgMu.Lock()
	defer e.orgMu.Unlock()
	for _, n := range e.orgHeld {
		if n >= e.opts.OrgWorkers {
			return true
		}
	}
	return false
}

// skipOrgs lists the organizations a claim skips: those holding their
// share.
func (e *Engine) skipOrgs() []string {
	if e.opts.OrgWorkers >= e.opts.Workers {
		return nil
	}
	e.orgMu.Lock()
	defer e.orgMu.Unlock()
	var out []string
	for org, n := range e.orgHeld {
		if n >= e.opts.OrgWorkers {
			out = append(out, org)
		}
	}
	return out
}

// park keeps a claimed run, registered as f, until its organization holds
// fewer slots than its share.
func (e *Engine) park(f *flight, r store.Run) {
	e.orgMu.Lock()
	e.parked = append(e.parked, parkedRun{f: f, r: r})
	e.orgMu.Unlock()
}

// startParked starts, oldest parked first, the parked runs whose
// organization holds fewer slots than its share, on the free slots of
// pool (it does not wait for one). It returns how many stay parked.
func (e *Engine) startParked(ctx context.Context, pool *workerPool) int {
	e.orgMu.Lock()
	if len(e.parked) == 0 {
		e.orgMu.Unlock()
		return 0
	}
	var start []parkedRun
	keep := e.parked[:0]
	for _, p := range e.parked {
		if ctx.Err() == nil && e.orgHeld[p.r.OrganizationID] < e.opts.OrgWorkers {
			select {
			case pool.slots <- struct{}{}:
				e.orgHeld[p.r.OrganizationID]++
				start = append(start, p)
				continue
			default:
			}
		}
		keep = append(keep, p)
	}
	clear(e.parked[len(keep):])
	e.parked = keep
	n := len(keep)
	e.orgMu.Unlock()
	for _, p := range start {
		e.startFlight(pool, p.f, p.r)
	}
	return n
}

// releaseParked hands the parked runs back to the queue when Run stops
// (see release).
func (e *Engine) releaseParked(ctx context.Context, grace time.Duration) {
	e.orgMu.Lock()
	parked := e.parked
	e.parked = nil
	e.orgMu.Unlock()
	if len(parked) == 0 {
		return
	}
	flights, runs := make([]*flight, len(parked)), make([]store.Run, len(parked))
	for i, p := range parked {
		flights[i], runs[i] = p.f, p.r
	}
	e.release(ctx, flights, runs, grace)
}

// BusyByOrganization is the number of worker slots each organization's
// runs hold now (organizations holding none are absent); each is at most
// OrgWorkers.
func (e *Engine) BusyByOrganization() map[string]int {
	e.orgMu.Lock()
	defer e.orgMu.Unlock()
	out := make(map[string]int, len(e.orgHeld))
	for org, n := range e.orgHeld {
		out[org] = n
	}
	return out
}

// OrgWorkers is the share of the workers one organization's runs hold at
// most (Options.OrgWorkers).
func (e *Engine) OrgWorkers() int { return e.opts.OrgWorkers }
