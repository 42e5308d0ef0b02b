package sqlfilter

var runStates = map[string]string{
	"pending": "pending", "executing": "executing", "stopping": "stopping", "stopped": "stopped",
	"awaiting_guidance": "awaiting_guidance", "completed": "completed", "failed": "failed",
	"PENDING": "pending", "EXECUTING": "executing", "STOPPING": "stopping", "STOPPED": "stopped",
	"AWAITING_GUIDANCE": "awaiting_guidance", "COMPLETED": "completed", "FAILED": "failed",
}

// Runs is the filter of ListRuns (alias r): state (= and !=; pending,
// executing, stopping, stopped, awaiting_guidance, completed, failed, in
// lower or upper case) and create_time (RFC 3339; = != < <= > >=).
var Runs = mustResource("runs",
	Field{Name: "state", Kind: Enum, Ops: exactOps, Values: runStates, Column: "r.state"},
	Field{Name: "create_time", Kind: Timestamp, Ops: []string{OpEq, OpNe, OpLt, OpLe, OpGt, OpGe}, Column: "r.create_time"},
)

// Automations is the filter of ListAutomations (alias a): display_name with
// = and != (exact) and : (case-insensitive contains).
var Automations = mustResource("automations",
	Field{Name: "display_name", Kind: String, Ops: []string{OpEq, OpNe, OpHas}, Column: "a.display_name"},
)
