package store

// Conjunct is one operand of a filter's top-level AND.
type Conjunct struct {
	// Filter renders the operand (Filter.SQL) on its own.
	Filter Filter
	// Columns are the alias-qualified columns ("e.state") that the operand's
	// SQL references, and only those; nil when unknown (a consumer then
	// must not reason about the operand's columns).
	Columns []string
	// Column, Op and Value are set when the operand is exactly the plain
	// comparison "Column Op Value" (Op one of = != < <= > >=, compared as
	// the column's SQL type: strings bytewise, times in time order), with
	// Value as bound (a string or a time.Time). Op is "" otherwise.
	Column string
	Op     string
	Value  any
}

// ConjunctFilter is optionally implemented by a Filter that can list the
// operands of its top-level AND: the filter selects exactly the rows every
// conjunct's SQL selects. A filter that is not a conjunction returns itself
// as its only conjunct. Stores use it to answer counts from precomputed
// totals when every operand is on columns those totals keep.
type ConjunctFilter interface {
	Filter
	Conjuncts() []Conjunct
}

// Conjuncts lists the top-level AND operands of f: nil for a nil filter, f
// itself (columns unknown) when f does not implement ConjunctFilter.
func Conjuncts(f Filter) []Conjunct {
	if f == nil {
		return nil
	}
	if c, ok := f.(ConjunctFilter); ok {
		return c.Conjuncts()
	}
	return []Conjunct{{Filter: f}}
}
