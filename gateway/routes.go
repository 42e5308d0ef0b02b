package gateway

import (
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
)

// The route index.
//
// runtime.ServeMux tries every pattern registered for the request's method
// in turn (Pattern.MatchAndEscape, two allocations each), then, to choose
// between 404 and 405, every pattern of the other methods: with ~120
// routes, a GET of a workspace tried ~100 patterns before its own (8–10 %
// of the CPU of that request and a quarter of its allocated bytes). The
// library has no index and does not expose its table.
//
// routeIndex puts one in front of it without changing what it answers. A
// pattern without "**" matches only paths of exactly as many components
// as it has segments (MatchAndEscape fails otherwise), so for each count n
// the index holds a runtime.ServeMux with, for every method, the routes of
// the full mux that can match n components (those of n segments and every
// "**" route), in the full mux's order, with the same handlers (bound to
// the full mux: annotation, marshalling and errors are its) and the same
// routing options. For a path of n components that sub-mux finds the same
// first route of the method, the same routes of the other methods (405
// with Allow, computed on the full mux as before, or the POST→GET
// fallback) and otherwise 404, because no route left out can match the
// path. What the index cannot decide is left to the full mux: a path not
// starting with "/", a last component starting with ":" (the full mux
// answers 404 there as soon as it meets a route with that verb), a count
// longer than any route's, or a mux whose table or options are not what
// the index reads (see newRouteIndex).
//
// The table is read from runtime.ServeMux's unexported field (the library
// has no accessor); newRouteIndex checks its layout by reflection and
// returns nil (no index: the full mux alone, as before) when it differs,
// which TestRouteIndexIsUsed turns into a failure. Routes added to the full
// mux after the index was built (HandlePath on the mux that Mux returns)
// are seen: the index is rebuilt when the table's route count changes.
type routeIndex struct {
	full    *runtime.ServeMux
	table   *map[string][]muxRoute // the full mux's table, read only
	subOpts []runtime.ServeMuxOption

	mu  sync.Mutex
	cur atomic.Pointer[routeGroups]
}

// muxRoute has the layout of runtime.ServeMux's handler (checked).
type muxRoute struct {
	pat runtime.Pattern
	h   runtime.HandlerFunc
}

// routeGroups is one build of the index.
type routeGroups struct {
	routes  int          // the full mux's route count it was built from
	byCount []*routeSlot // by number of path components; nil: the full mux
}

// routeSlot holds the routes that can match a path of one number of
// components. When the routes have literals at a component that is not the
// last (pos ≥ 0), they are split by it: byLiteral holds, for each literal,
// the routes with it there and those with a variable there; other the
// latter alone (a path with another literal there).
type routeSlot struct {
	pos       int
	byLiteral map[string]*runtime.ServeMux
	other     *runtime.ServeMux
}

// newRouteIndex returns the index of full, or nil when full's table or
// options are not what the index knows how to read. subOpts are the
// routing options of full (error handlers, marshaler), without middlewares
// (the table's handlers are already wrapped) and without endpoints (the
// table has them).
func newRouteIndex(full *runtime.ServeMux, subOpts ...runtime.ServeMuxOption) *routeIndex {
	v := reflect.ValueOf(full).Elem()
	f := v.FieldByName("handlers")
	if !f.IsValid() || f.Kind() != reflect.Map || f.Type().Key().Kind() != reflect.String ||
		f.Type().Elem().Kind() != reflect.Slice || !sameLayout(f.Type().Elem().Elem(), reflect.TypeFor[muxRoute]()) {
		return nil
	}
	// Components are split from r.URL.Path as is only in the legacy
	// unescaping mode (the default); other modes split the raw path.
	if u := v.FieldByName("unescapingMode"); !u.IsValid() || u.Kind() != reflect.Int || u.Int() != int64(runtime.UnescapingModeLegacy) {
		return nil
	}
	opts := append([]runtime.ServeMuxOption{}, subOpts...)
	for name, opt := range map[string]runtime.ServeMuxOption{
		"disablePathLengthFallback": runtime.WithDisablePathLengthFallback(),
		"disableHTTPMethodOverride": runtime.WithDisableHTTPMethodOverride(),
	} {
		b := v.FieldByName(name)
		if !b.IsValid() || b.Kind() != reflect.Bool {
			return nil
		}
		if b.Bool() {
			opts = append(opts, opt)
		}
	}
	return &routeIndex{
		full:    full,
		table:   (*map[string][]muxRoute)(unsafe.Pointer(f.UnsafeAddr())), //nolint:gosec // G103: layout checked above
		subOpts: opts,
	}
}

// sameLayout reports whether a and b are structs with the same fields
// (names, types, offsets) and size.
func sameLayout(a, b reflect.Type) bool {
	if a.Kind() != reflect.Struct || b.Kind() != reflect.Struct || a.NumField() != b.NumField() ||
		a.Size() != b.Size() || a.Align() != b.Align() {
		return false
	}
	for i := range a.NumField() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Type != fb.Type || fa.Offset != fb.Offset {
			return false
		}
	}
	return true
}

func (x *routeIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if mux := x.pick(r.URL.Path); mux != nil {
		mux.ServeHTTP(w, r)
		return
	}
	x.full.ServeHTTP(w, r)
}

// pick returns the sub-mux for path, or nil for the full mux.
func (x *routeIndex) pick(path string) *runtime.ServeMux {
	if !strings.HasPrefix(path, "/") {
		return nil
	}
	if strings.HasPrefix(path[strings.LastIndexByte(path, '/')+1:], ":") {
		return nil
	}
	g := x.groups()
	n := strings.Count(path, "/") // len(strings.Split(path[1:], "/")), as the mux splits it
	if n >= len(g.byCount) || g.byCount[n] == nil {
		return nil
	}
	slot := g.byCount[n]
	if slot.pos < 0 {
		return slot.other
	}
	if mux, ok := slot.byLiteral[component(path, slot.pos)]; ok {
		return mux
	}
	return slot.other
}

// component returns the i-th component of path ("/a/b/c": 0 is "a").
func component(path string, i int) string {
	rest := path[1:]
	for ; i > 0; i-- {
		rest = rest[strings.IndexByte(rest, '/')+1:]
	}
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		return rest[:j]
	}
	return rest
}

// routeCount is the number of routes in the full mux's table.
func (x *routeIndex) routeCount() int {
	n := 0
	for _, rs := range *x.table {
		n += len(rs)
	}
	return n
}

// groups returns the index of the full mux's current table.
func (x *routeIndex) groups() *routeGroups {
	total := x.routeCount()
	if g := x.cur.Load(); g != nil && g.routes == total {
		return g
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	total = x.routeCount()
	if g := x.cur.Load(); g != nil && g.routes == total {
		return g
	}
	g := x.build(total)
	x.cur.Store(g)
	return g
}

// routeShape is what the index knows of a pattern: its segments (a
// literal, or "" for a variable's), and whether it has a "**" (which
// matches any number of components, so its literals have no fixed place).
type routeShape struct {
	segments []string
	deep     bool
}

func shapeOf(p runtime.Pattern) routeShape {
	s := p.String() // "/a/{b=*}/{c=d/*}:verb": one "/" per segment
	if v := p.Verb(); v != "" {
		s = strings.TrimSuffix(s, ":"+v)
	}
	segs := strings.Split(s[1:], "/")
	for i, seg := range segs {
		if strings.ContainsAny(seg, "{}*=") { // a variable's part, or "*"
			segs[i] = ""
		}
	}
	return routeShape{segments: segs, deep: strings.Contains(s, "**")}
}

type shapedRoute struct {
	meth  string
	route muxRoute
	shape routeShape
}

func (x *routeIndex) build(total int) *routeGroups {
	// Every route, each method's from the last tried to the first: Handle
	// puts a route before the others, so adding them in this order keeps
	// the full mux's.
	var all []shapedRoute
	longest := 0
	for meth, rs := range *x.table {
		for i := len(rs) - 1; i >= 0; i-- {
			sh := shapeOf(rs[i].pat)
			all = append(all, shapedRoute{meth, rs[i], sh})
			longest = max(longest, len(sh.segments))
		}
	}
	g := &routeGroups{routes: total, byCount: make([]*routeSlot, longest+1)}
	for n := 1; n <= longest; n++ {
		var group []shapedRoute
		for _, r := range all {
			if r.shape.deep || len(r.shape.segments) == n {
				group = append(group, r)
			}
		}
		g.byCount[n] = x.slot(group, n)
	}
	return g
}

// slot splits the routes of paths of n components by the component (not
// the last: it may carry a verb) that leaves the fewest routes to try.
func (x *routeIndex) slot(group []shapedRoute, n int) *routeSlot {
	best, bestSize := -1, len(group)
	for pos := 0; pos < n-1; pos++ {
		vars, lits := 0, map[string]int{}
		for _, r := range group {
			if r.shape.deep || r.shape.segments[pos] == "" {
				vars++
			} else {
				lits[r.shape.segments[pos]]++
			}
		}
		size := vars
		for _, c := range lits {
			size = max(size, vars+c)
		}
		if size < bestSize {
			best, bestSize = pos, size
		}
	}
	mux := func(keep func(shapedRoute) bool) *runtime.ServeMux {
		m := runtime.NewServeMux(x.subOpts...)
		for _, r := range group {
			if keep(r) {
				m.Handle(r.meth, r.route.pat, r.route.h)
			}
		}
		return m
	}
	if best < 0 {
		return &routeSlot{pos: -1, other: mux(func(shapedRoute) bool { return true })}
	}
	variable := func(r shapedRoute) bool { return r.shape.deep || r.shape.segments[best] == "" }
	s := &routeSlot{pos: best, byLiteral: map[string]*runtime.ServeMux{}, other: mux(variable)}
	for _, r := range group {
		if variable(r) {
			continue
		}
		if lit := r.shape.segments[best]; s.byLiteral[lit] == nil {
			s.byLiteral[lit] = mux(func(r shapedRoute) bool { return variable(r) || r.shape.segments[best] == lit })
		}
	}
	return s
}
