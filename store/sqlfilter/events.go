package sqlfilter

// Events is the filter of ListEvents (alias ev): exception (an exception id
// or resource name; = and !=; exception = "" selects events about no
// exception), combined with AND, OR, NOT and parentheses.
var Events = mustResource("events",
	Field{Name: "exception", Kind: String, Ops: exactOps, Names: EventExceptionName},
)
